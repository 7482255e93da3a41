"""FP8 from Python without a GPU: a table's FP8 entries (format 3) looked up by scale mode, and
gemmtune.torch.scaled_mm on PyTorch's stand-in (fake_torch) with a dry-run table posing as one
on cuda:0: torch._scaled_mm's arguments become gemmtune_gemm_scaled's (types, layout nt,
leading dimensions, the scale mode and pointers), and what the table cannot serve goes to
torch._scaled_mm, saying why."""

from __future__ import annotations

import json
import warnings

import fake_torch as ft
import pytest

import gemmtune
from gemmtune.table import DTYPES, SCALES

E4M3, E5M2, BF16, F32 = ft.float8_e4m3fn, ft.float8_e5m2, ft.bfloat16, ft.float32
DEV = "cuda:0"
DEVICE = "NVIDIA H200"


def entry(m, n, k, scale, config, b_dtype="e4m3"):
    """An FP8 cuBLASLt entry as `gemmtune export` writes one (format 3)."""
    return {"device": DEVICE, "m": m, "n": n, "k": k, "dtype": "e4m3", "b_dtype": b_dtype, "out_dtype": "bf16",
            "layout": "nt", "align": 16, "scale": scale, "family": "cublaslt", "config": config, "params": "",
            "transform": "none", "time_us": 10.0, "tflops": 1.0, "arch": "sm_90"}


CFG = "cublaslt_algo66_tile128x256_stages128xauto_split_k1_reductionnone_swizzle0_custom0_cluster2x1x1_innerundef_workspace0_fast_accum{}"


@pytest.fixture(scope="module")
def fp8_table_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("fp8") / "fp8.json"
    entries = [entry(256, 512, 1024, "row", CFG.format(0)), entry(256, 512, 1024, "tensor", CFG.format(1)),
               entry(128, 512, 1024, "block", CFG.format(0)), entry(64, 512, 1024, "row", CFG.format(0), "e5m2")]
    path.write_text(json.dumps({"gemmtune_table": 3, "entries": entries}))
    return path


@pytest.fixture
def table(fp8_table_path, cache_dir):
    ft.reset()
    t = gemmtune.Table.load(fp8_table_path, dry_run=True, device_name=DEVICE, cache_dir=cache_dir)
    yield t
    t.close()
    ft.reset()


def test_entries_and_lookups_by_scale_mode(table):
    es = {(e.m, e.scale, e.b_dtype): e for e in table.entries()}
    assert es[(256, "row", "e4m3")].dtype == "e4m3" and es[(256, "row", "e4m3")].layout == "nt"
    row = table.lookup(256, 512, 1024, dtype="e4m3", scale="row")
    assert row.match == "exact" and row.config.endswith("fast_accum0")
    assert table.lookup(256, 512, 1024, dtype="e4m3", scale="tensor").config.endswith("fast_accum1")
    assert table.lookup(64, 512, 1024, dtype="e4m3", b_dtype="e5m2", scale="row").match == "exact"
    # A scale mode the table has no entry of at this shape is not answered with another mode's entry.
    assert table.lookup(256, 512, 1024, dtype="e4m3", scale="block", ).match != "exact"
    with pytest.raises(gemmtune.InvalidArgumentError, match="scale and b_dtype are for FP8 inputs"):
        table.lookup(256, 512, 1024, dtype="bf16", scale="row")
    with pytest.raises(gemmtune.InvalidArgumentError, match="scale: 'rows'"):
        table.lookup(256, 512, 1024, dtype="e4m3", scale="rows")
    with pytest.raises(gemmtune.InvalidArgumentError, match="layout nt"):
        table.lookup(256, 512, 1024, dtype="e4m3", layout="nn")


class ScaledRecorder:
    """Stands for gemmtune_gemm_scaled: keeps each launch's arguments."""

    def __init__(self):
        self.launches = []

    def __call__(self, handle, g, sc, stream):
        assert handle
        self.launches.append({"m": g.m, "n": g.n, "k": g.k, "in": g.in_dtype, "out": g.out_dtype, "layout": g.layout,
                              "a": g.a, "lda": g.lda, "b": g.b, "ldb": g.ldb, "c": g.c, "ldc": g.ldc, "mode": sc.mode,
                              "b_dtype": sc.b_dtype, "scale_a": sc.a, "scale_b": sc.b, "d": sc.d, "stream": stream})
        return 0


@pytest.fixture
def gpu_table(table):
    table.dry_run, table.device = False, 0  # the stand-in's cuda:0; launches go to the recorder
    table._gemm_scaled_c = ScaledRecorder()
    return table


@pytest.fixture(scope="module")
def gt():
    return ft.load_gemmtune_torch("gemmtune._torch_fp8")


def t(*shape, dtype=E4M3, stride=None):
    return ft.Tensor(shape, stride, dtype, DEV)


def weight(n, k, dtype=E4M3):
    """B as torch._scaled_mm takes it: a transposed row-major N x K weight (K x N, column-major)."""
    return t(n, k, dtype=dtype).t()


def reasons(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = fn()
    return out, [str(w.message) for w in caught]


def test_scaled_mm_launches_each_scale_mode(gt, gpu_table):
    n, k = 512, 1024
    kb, kb4 = 8, 8
    cases = [("tensor", 256, t(dtype=F32), t(dtype=F32)), ("row", 256, t(256, 1, dtype=F32), t(1, n, dtype=F32)),
             ("block", 128, t(128, kb, dtype=F32, stride=(1, 128)), t(kb, (n + 127) // 128, dtype=F32, stride=(1, kb4)))]
    for mode, m, sa, sb in cases:
        a, b = t(m, k), weight(n, k)
        c, why = reasons(lambda: gt.scaled_mm(a, b, sa, sb, out_dtype=BF16, table=gpu_table))
        if mode == "tensor":  # the table's tensor entry accumulates fast: not unless asked
            assert len(why) == 1 and "accumulates fast" in why[0] and "use_fast_accum=False" in why[0]
            assert ft.scaled_mm_calls[-1]["use_fast_accum"] is False
            c, why = reasons(lambda: gt.scaled_mm(a, b, sa, sb, out_dtype=BF16, use_fast_accum=True, table=gpu_table))
        assert why == [], why
        assert c.shape == (m, n) and c.dtype is BF16
        last = gpu_table._gemm_scaled_c.launches[-1]
        assert last == {"m": m, "n": n, "k": k, "in": DTYPES["e4m3"], "out": DTYPES["bf16"], "layout": 1,
                        "a": a.data_ptr(), "lda": k, "b": b.data_ptr(), "ldb": k, "c": c.data_ptr(), "ldc": n,
                        "mode": SCALES[mode], "b_dtype": -1, "scale_a": sa.data_ptr(), "scale_b": sb.data_ptr(),
                        "d": None, "stream": 0x5000}


def test_scaled_mm_falls_back_to_torch_saying_why(gt, gpu_table):
    m, n, k = 256, 512, 1024
    a, b, s = t(m, k), weight(n, k), t(dtype=F32)
    cases = [
        (lambda: gt.scaled_mm(a, b, s, s, bias=t(n, dtype=BF16), out_dtype=BF16, table=gpu_table), "have no bias"),
        (lambda: gt.scaled_mm(a, t(k, n), s, s, out_dtype=BF16, table=gpu_table), "B column-major"),
        (lambda: gt.scaled_mm(a, weight(n, k, BF16), s, s, out_dtype=BF16, table=gpu_table), "take float8_e4m3fn"),
        (lambda: gt.scaled_mm(a, b, t(m, 2, dtype=F32), s, out_dtype=BF16, table=gpu_table), "none of tensor-wise"),
        (lambda: gt.scaled_mm(a, b, s, s, scale_result=s, out_dtype=BF16, table=gpu_table),
         "scale_result applies to an FP8 output only"),
        (lambda: gt.scaled_mm(ft.empty(m, k, dtype=E4M3), b, s, s, out_dtype=BF16, table=gpu_table),
         "one CUDA device"),
    ]
    for call, says in cases:
        before = len(ft.scaled_mm_calls)
        _, why = reasons(call)
        assert len(why) == 1 and says in why[0] and why[0].endswith("using torch._scaled_mm"), why
        assert len(ft.scaled_mm_calls) == before + 1  # torch._scaled_mm ran instead, with the same arguments
    assert gpu_table._gemm_scaled_c.launches == []


def test_scaled_mm_on_a_dry_run_table_falls_back(gt, table):
    _, why = reasons(lambda: gt.scaled_mm(t(256, 1024), weight(512, 1024), t(dtype=F32), t(dtype=F32),
                                          out_dtype=BF16, table=table))
    assert len(why) == 1 and "loaded without a GPU (a dry run)" in why[0]


def test_scaled_mm_runs_torch_where_the_table_answers_the_default(gt, gpu_table):
    """256 rows in block scales: the table's nearest entry (128 rows) is not backed by evidence,
    so the answer is cuBLASLt's pick, the default, which torch._scaled_mm runs, without a word."""
    m, n, k, kb, kb4 = 256, 512, 1024, 8, 8
    assert gpu_table.lookup(m, n, k, dtype="e4m3", scale="block").is_default
    a, b = t(m, k), weight(n, k)
    sa, sb = t(m, kb, dtype=F32, stride=(1, m)), t(kb, (n + 127) // 128, dtype=F32, stride=(1, kb4))
    c, why = reasons(lambda: gt.scaled_mm(a, b, sa, sb, out_dtype=BF16, table=gpu_table))
    assert why == [] and gpu_table._gemm_scaled_c.launches == []
    assert ft.scaled_mm_calls[-1]["a"] is a and ft.scaled_mm_calls[-1]["out_dtype"] is BF16

