"""gemmtune for PyTorch: torch.matmul of two CUDA matrices through a tuned table.

    import gemmtune, gemmtune.torch
    table = gemmtune.Table.load("table.toml")
    c = gemmtune.torch.matmul(a, b, table=table)          # a: M×K, b: K×N, on the table's GPU

What it checks before it runs the table's config: both are 2-D tensors of one dtype
(float16 -> f16, bfloat16 -> bf16, float32 -> f32, or tf32 where PyTorch allows TF32 for
matmuls), on the table's CUDA device, each row-major or a transposed view of a row-major
tensor (mapped to the layouts nn, nt, tn, tt), out (if given) a row-major M×N of the same
dtype there, and no input that needs a gradient. It runs on PyTorch's current stream of that
device. Where the table cannot serve (any of these fails, or the table has no config that can
run the problem) it says why in a gemmtune.torch.FallbackWarning and returns torch.matmul.

Per call: the first call of a problem (the shapes, strides, dtypes and devices of A, B and
out, and its table dtype: f32 or tf32 as PyTorch's setting is at that call) makes every check
above and, once the table has run it, keeps the plan (layout, leading dimensions, the C API's
arguments) with the table (up to gemmtune.table.PLANS_CAP problems; close() drops them). A
later call of that problem checks again what can differ between such calls: that A and B are
tensors, grad mode and requires_grad, PyTorch's TF32 setting (a float32 problem under the other
setting is another problem), that the table is open, no dry run and on that device; the runtime library still
answers every launch (a config it cannot run falls back then too). It makes the table's device
current only where another one is, reads that device's current stream anew, and launches. What
falls back falls back as on a first call, with the same reason: a call the plan does not cover
goes through every check.
"""

from __future__ import annotations

import warnings
from typing import Optional

import torch as _torch

from . import _layout
from .errors import BuildFailedError, NotSupportedError
from .table import PLANS_CAP, Table

__all__ = ["matmul", "FallbackWarning", "gemmtune_dtype"]


class FallbackWarning(UserWarning):
    """gemmtune.torch.matmul used torch.matmul; the message says why."""


_DTYPES = {_torch.float16: "f16", _torch.bfloat16: "bf16"}
_Tensor = _torch.Tensor
# The device's current stream as a cudaStream_t, and the current device: through torch._C
# where it has them (what torch.cuda.current_stream(i).cuda_stream and current_device() end
# in, without building a Stream object per call), else the public calls.
_raw_stream = getattr(_torch._C, "_cuda_getCurrentRawStream", None) or (
    lambda index: _torch.cuda.current_stream(index).cuda_stream)
_current_device = getattr(_torch._C, "_cuda_getDevice", None) or (lambda: _torch.cuda.current_device())


def _tf32_allowed() -> bool:
    """Whether PyTorch runs float32 matmuls on TF32 tensor cores now."""
    matmul = _torch.backends.cuda.matmul
    precision = getattr(matmul, "fp32_precision", None)  # PyTorch >= 2.9
    if isinstance(precision, str) and precision not in ("", "none"):
        return precision == "tf32"
    return bool(matmul.allow_tf32)


def gemmtune_dtype(dtype: "_torch.dtype") -> Optional[str]:
    """The table dtype of a torch dtype (None: gemmtune has none)."""
    if dtype == _torch.float32:
        return "tf32" if _tf32_allowed() else "f32"
    return _DTYPES.get(dtype)


def _why_not(a, b, out, table: Table):
    """(problem, dtype), or the reason the table cannot run this product."""
    if not isinstance(a, _torch.Tensor) or not isinstance(b, _torch.Tensor):
        return "A and B must be tensors"
    if not a.is_cuda or not b.is_cuda:
        return f"the tensors are on {a.device} and {b.device}, not a CUDA device"
    if a.device != b.device or (out is not None and out.device != a.device):
        return f"the tensors are on different devices ({a.device}, {b.device}{', ' + str(out.device) if out is not None else ''})"
    if table.dry_run:
        return f"the table {table.path} was loaded without a GPU (a dry run)"
    if a.device.index != table.device:
        return f"the tensors are on {a.device}, the table runs on cuda:{table.device}"
    if a.dtype != b.dtype:
        return f"A is {a.dtype} and B is {b.dtype}"
    dtype = gemmtune_dtype(a.dtype)
    if dtype is None:
        return f"gemmtune has no {a.dtype} GEMM (float16, bfloat16, float32)"
    if out is not None and out.dtype != a.dtype:
        return f"out is {out.dtype}, the inputs are {a.dtype}"
    if _torch.is_grad_enabled() and (a.requires_grad or b.requires_grad):
        return "an input requires grad, and gemmtune's kernels have no backward"
    p = _layout.plan(tuple(a.shape), a.stride(), tuple(b.shape), b.stride(),
                     None if out is None else tuple(out.shape), None if out is None else out.stride())
    if isinstance(p, str):
        return p
    return p, dtype


def matmul(a: "_torch.Tensor", b: "_torch.Tensor", *, table: Table,
           out: Optional["_torch.Tensor"] = None) -> "_torch.Tensor":
    """a @ b with the table's config for the problem; torch.matmul where it cannot serve."""
    key = dtype = None
    if isinstance(a, _Tensor) and isinstance(b, _Tensor):
        try:
            dtype = gemmtune_dtype(a.dtype)  # per call: f32 or tf32 follows PyTorch's setting now
            key = (a.shape, a.stride(), a.device, a.dtype, b.shape, b.stride(), b.device, b.dtype, dtype,
                   None if out is None else (out.shape, out.stride(), out.device, out.dtype))
            kept = table._plans.get(key)
        except Exception:  # not strided tensors (sparse, say), an out that is no tensor: the checks say
            key = kept = None
        if kept is not None and not table.dry_run and kept[1].index == table.device and not (
                (a.requires_grad or b.requires_grad) and _torch.is_grad_enabled()):
            args, device, size, what = kept
            c = out if out is not None else _torch.empty(size, dtype=a.dtype, device=device)
            failed = _launch(table, args, device.index, a, b, c)
            return c if failed is None else _fallback(a, b, out, f"the table cannot run {what}: {failed}")
    plan = _why_not(a, b, out, table)
    if isinstance(plan, str):
        return _fallback(a, b, out, plan)
    p, planned_dtype = plan
    args = table._prepare(p.m, p.n, p.k, dtype=planned_dtype, layout=p.layout, lda=p.lda, ldb=p.ldb, ldc=p.ldc)
    what = f"{p.m}x{p.n}x{p.k} {planned_dtype} {p.layout}"
    c = out if out is not None else _torch.empty((p.m, p.n), dtype=a.dtype, device=a.device)
    failed = _launch(table, args, a.device.index, a, b, c)
    if failed is not None:
        return _fallback(a, b, out, f"the table cannot run {what}: {failed}")
    if key is not None and planned_dtype == dtype:  # kept once it ran (what cannot run is asked again)
        if len(table._plans) >= PLANS_CAP:
            table._plans.clear()
        table._plans[key] = (args, a.device, (p.m, p.n), what)
    return c


def _launch(table: Table, args, index: int, a, b, c) -> Optional[Exception]:
    """Runs the prepared problem on PyTorch's current stream of CUDA device `index`, made the
    current device for the call where it is not; None, or the table's error where it cannot
    run it (the others raise)."""
    try:
        if _current_device() == index:
            table._launch(args, a.data_ptr(), b.data_ptr(), c.data_ptr(), _raw_stream(index))
        else:
            with _torch.cuda.device(index):
                table._launch(args, a.data_ptr(), b.data_ptr(), c.data_ptr(), _raw_stream(index))
    except (NotSupportedError, BuildFailedError) as e:
        return e
    return None


def _fallback(a, b, out, why: str):
    warnings.warn(f"gemmtune.torch.matmul: {why}; using torch.matmul", FallbackWarning, stacklevel=3)
    return _torch.matmul(a, b) if out is None else _torch.matmul(a, b, out=out)
