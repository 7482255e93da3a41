"""gemmtune.torch without a GPU: what the table cannot serve goes to torch.matmul, saying why."""

from __future__ import annotations

import warnings

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed for this interpreter")
import gemmtune.torch as gt_torch  # noqa: E402  (after the skip)


def fallback_reason(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fn()
    reasons = [str(w.message) for w in caught if issubclass(w.category, gt_torch.FallbackWarning)]
    assert len(reasons) == 1, reasons
    return result, reasons[0]


def test_cpu_tensors_fall_back_with_the_reason(llm_table):
    a, b = torch.randn(8, 16), torch.randn(16, 4)
    c, why = fallback_reason(lambda: gt_torch.matmul(a, b, table=llm_table))
    assert why == "gemmtune.torch.matmul: the tensors are on cpu and cpu, not a CUDA device; using torch.matmul"
    assert torch.equal(c, torch.matmul(a, b))


def test_out_is_filled_on_fallback(llm_table):
    a, b = torch.randn(3, 5), torch.randn(5, 2)
    out = torch.empty(3, 2)
    c, _ = fallback_reason(lambda: gt_torch.matmul(a, b, table=llm_table, out=out))
    assert c is out and torch.equal(out, a @ b)


def test_dtypes():
    assert gt_torch.gemmtune_dtype(torch.float16) == "f16"
    assert gt_torch.gemmtune_dtype(torch.bfloat16) == "bf16"
    assert gt_torch.gemmtune_dtype(torch.float64) is None
    before = torch.backends.cuda.matmul.allow_tf32
    try:
        torch.backends.cuda.matmul.allow_tf32 = False
        assert gt_torch.gemmtune_dtype(torch.float32) == "f32"
        torch.backends.cuda.matmul.allow_tf32 = True
        assert gt_torch.gemmtune_dtype(torch.float32) == "tf32"
    finally:
        torch.backends.cuda.matmul.allow_tf32 = before
