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

Where the table answers a problem with the library's default (no exact entry, and no transfer
backed by evidence or an online check: docs/lookup.md), torch.matmul runs it, without a warning:
PyTorch's own choice is the default a program has without the table.

The switch: gemmtune.torch.enable(table) routes torch.matmul, torch.mm, torch.nn.functional.linear
(without a bias) and torch._scaled_mm through the table for the problems it answers with a config
of its own, and to PyTorch's own functions, silently, for everything else; disable() restores
them; `with gemmtune.torch.enabled(table):` does both. enable(table, record=path) also appends
every problem the table answered without an exact entry to a job file for `gemmtune tune --config`.

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

import contextlib
import os
import weakref
import warnings
from typing import Callable, Optional, Union

import torch as _torch

from . import _layout
from .errors import BuildFailedError, NotSupportedError
from .table import PLANS_CAP, Table, _copy_args, _scales

__all__ = ["matmul", "scaled_mm", "FallbackWarning", "gemmtune_dtype", "enable", "disable", "enabled", "is_enabled",
           "prepare_weight", "forget_weight"]

_functional = getattr(getattr(_torch, "nn", None), "functional", None)
# PyTorch's own functions, as they were when this module was imported: what every fallback
# runs, also while the switch has replaced them (enable()).
_ORIGINAL = {"matmul": _torch.matmul, "mm": getattr(_torch, "mm", None),
             "linear": getattr(_functional, "linear", None), "_scaled_mm": getattr(_torch, "_scaled_mm", None)}
# A kept plan: the table answers the problem with the library's default, which torch.matmul runs.
_DEFAULT = "torch"


class FallbackWarning(UserWarning):
    """gemmtune.torch.matmul used torch.matmul (scaled_mm: torch._scaled_mm); the message says why."""


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
    """a @ b with the table's config for the problem; torch.matmul where the table answers the
    library's default (quietly) or cannot serve (with a FallbackWarning saying why)."""
    return _matmul(a, b, table, out, _warned("matmul", "torch.matmul"))


Fallback = Callable[[object, object, object, Optional[str]], "_torch.Tensor"]


def _warned(name: str, what: str) -> Fallback:
    """PyTorch's own `name` for a fallback, with a FallbackWarning where there is a reason."""
    def run(a, b, out, why):
        if why is not None:
            warnings.warn(f"gemmtune.torch.{name}: {why}; using {what}", FallbackWarning, stacklevel=4)
        return _torch_matmul(a, b, out)
    return run


def _quiet(a, b, out, why):
    """PyTorch's own torch.matmul, without a word (the switch's fallback)."""
    return _torch_matmul(a, b, out)


def _torch_matmul(a, b, out):
    f = _ORIGINAL["matmul"]
    return f(a, b) if out is None else f(a, b, out=out)


# The weights a program declared constant (prepare_weight), by their storage's address: a
# matmul whose B is one of them is asked of the table as "B constant", so entries tuned with
# `--constant b` may serve it and a padded copy of it is made once, not on every call.
_constant_weights: "weakref.WeakValueDictionary[int, _Tensor]" = weakref.WeakValueDictionary()


def prepare_weight(w: "_torch.Tensor") -> "_torch.Tensor":
    """Declares `w` a constant weight: the program passes the same buffer, with the same contents,
    on every call (as a model's weights at inference). gemmtune.torch then asks the table for
    entries tuned with B constant (`gemmtune tune --constant b`), and the runtime pads or re-lays
    such a weight once into a buffer of its own. Returns `w` itself. Change a prepared weight's
    contents only by making a new tensor (the runtime's copy follows the pointer, not the data);
    `forget_weight(w)` undoes the declaration."""
    if not isinstance(w, _Tensor) or w.dim() != 2:
        raise TypeError("prepare_weight takes a 2-D tensor (a Linear's weight, N x K)")
    _constant_weights[w.data_ptr()] = w
    return w


def forget_weight(w: "_torch.Tensor") -> None:
    """Undoes prepare_weight(w): later calls pass `w` as any other operand."""
    _constant_weights.pop(w.data_ptr(), None)


def _constant_of(b) -> int:
    """GEMMTUNE_CONSTANT_B where B is (a view of) a prepared weight, else 0."""
    w = _constant_weights.get(b.data_ptr()) if isinstance(b, _Tensor) else None
    return 2 if w is not None and w.data_ptr() == b.data_ptr() else 0


def _matmul(a, b, table: Table, out, fallback: Fallback):
    """a @ b through the table's plan for the problem, else `fallback(a, b, out, why)` (why None:
    the table answers the library's default)."""
    key = dtype = None
    constant = _constant_of(b)
    if isinstance(a, _Tensor) and isinstance(b, _Tensor):
        try:
            dtype = gemmtune_dtype(a.dtype)  # per call: f32 or tf32 follows PyTorch's setting now
            key = (a.shape, a.stride(), a.device, a.dtype, b.shape, b.stride(), b.device, b.dtype, dtype, constant,
                   None if out is None else (out.shape, out.stride(), out.device, out.dtype))
            kept = table._plans.get(key)
        except Exception:  # not strided tensors (sparse, say), an out that is no tensor: the checks say
            key = kept = None
        grad = (a.requires_grad or b.requires_grad) and _torch.is_grad_enabled()
        if kept is _DEFAULT and not grad:
            return fallback(a, b, out, None)
        if kept is not None and kept is not _DEFAULT and not table.dry_run and kept[1].index == table.device \
                and not grad:
            args, device, size, what = kept
            c = out if out is not None else _torch.empty(size, dtype=a.dtype, device=device)
            failed = _launch(table, args, device.index, a, b, c, constant)
            return c if failed is None else fallback(a, b, out, f"the table cannot run {what}: {failed}")
    plan = _why_not(a, b, out, table)
    if isinstance(plan, str):
        return fallback(a, b, out, plan)
    p, planned_dtype = plan
    args = table._prepare(p.m, p.n, p.k, dtype=planned_dtype, layout=p.layout, lda=p.lda, ldb=p.ldb, ldc=p.ldc)
    keep = key is not None and planned_dtype == dtype
    choice = _choice_at(table, args, a, b, out, constant)
    if choice.is_default:  # no config of the table's own: PyTorch's is the default
        if keep:
            _keep(table, key, _DEFAULT)
        return fallback(a, b, out, None)
    what = f"{p.m}x{p.n}x{p.k} {planned_dtype} {p.layout}"
    c = out if out is not None else _torch.empty((p.m, p.n), dtype=a.dtype, device=a.device)
    failed = _launch(table, args, a.device.index, a, b, c, constant)
    if failed is not None:
        return fallback(a, b, out, f"the table cannot run {what}: {failed}")
    if keep:  # kept once it ran (what cannot run is asked again)
        checked = choice.pending and _choice_at(table, args, a, b, out, constant).is_default  # the online check kept the default
        _keep(table, key, _DEFAULT if checked else (args, a.device, (p.m, p.n), what))
    return c


def _choice_at(table: Table, args, a, b, out, constant: int = 0):
    """The table's choice for the prepared problem with these operands' pointers (their alignment
    is part of the problem; a C not made yet counts as aligned, as PyTorch allocates)."""
    g = _copy_args(args)
    g.a, g.b, g.c = a.data_ptr(), b.data_ptr(), 0 if out is None else out.data_ptr()
    return table._choice(g, None, constant) if constant else table._choice(g)


def _keep(table: Table, key, plan) -> None:
    if len(table._plans) >= PLANS_CAP:
        table._plans.clear()
    table._plans[key] = plan


def _launch(table: Table, args, index: int, a, b, c, constant: int = 0) -> Optional[Exception]:
    """Runs the prepared problem on PyTorch's current stream of CUDA device `index`, made the
    current device for the call where it is not; None, or the table's error where it cannot
    run it (the others raise)."""
    try:
        if _current_device() == index:
            table._launch(args, a.data_ptr(), b.data_ptr(), c.data_ptr(), _raw_stream(index), constant)
        else:
            with _torch.cuda.device(index):
                table._launch(args, a.data_ptr(), b.data_ptr(), c.data_ptr(), _raw_stream(index), constant)
    except (NotSupportedError, BuildFailedError) as e:
        return e
    return None


# FP8: torch's float8 types as the table names them (older PyTorch has none).
_FP8 = {t: name for t, name in ((getattr(_torch, "float8_e4m3fn", None), "e4m3"),
                                (getattr(_torch, "float8_e5m2", None), "e5m2")) if t is not None}
_OUT = {**_DTYPES, _torch.float32: "f32", **_FP8}


def _scale_mode(scale_a, scale_b, m: int, n: int, k: int):
    """The table's scale mode of torch._scaled_mm's scales, or the reason they are none of its:
    tensor (one float32 each), row (scale_a (M, 1), scale_b (1, N), contiguous), block (scale_a
    (M, K/128) M-major: 1x128 blocks of A; scale_b (K/128, N/128) with a column stride of
    K/128 rounded up to 4: 128x128 blocks of B), as torch._scaled_mm takes them."""
    for name, s in (("scale_a", scale_a), ("scale_b", scale_b)):
        if not isinstance(s, _torch.Tensor) or s.dtype != _torch.float32:
            return f"{name} is not a float32 tensor"
    if scale_a.numel() == 1 and scale_b.numel() == 1:
        return "tensor"
    if (tuple(scale_a.shape) == (m, 1) and tuple(scale_b.shape) == (1, n) and scale_a.is_contiguous()
            and scale_b.is_contiguous()):
        return "row"
    kb = (k + 127) // 128
    kb4 = (kb + 3) // 4 * 4
    if (tuple(scale_a.shape) == (m, kb) and scale_a.stride() == (1, m) and tuple(scale_b.shape) == (kb, (n + 127) // 128)
            and scale_b.stride() == (1, kb4)):
        return "block"
    return (f"scales of shapes {tuple(scale_a.shape)} and {tuple(scale_b.shape)} are none of tensor-wise, row-wise "
            "(M, 1) x (1, N) or block-wise (1x128 of A, 128x128 of B)")


def _why_not_scaled(a, b, scale_a, scale_b, out_dtype, table: Table):
    """(args, scales, what), or the reason the table cannot run this torch._scaled_mm."""
    if not isinstance(a, _torch.Tensor) or not isinstance(b, _torch.Tensor):
        return "A and B must be tensors"
    if a.dtype not in _FP8 or b.dtype not in _FP8:
        return f"A is {a.dtype} and B is {b.dtype}: gemmtune's FP8 GEMMs take float8_e4m3fn and float8_e5m2"
    if not a.is_cuda or a.device != b.device or any(not s.is_cuda or s.device != a.device for s in (scale_a, scale_b)
                                                    if isinstance(s, _torch.Tensor)):
        return "A, B and the scales must be on one CUDA device"
    if table.dry_run:
        return f"the table {table.path} was loaded without a GPU (a dry run)"
    if a.device.index != table.device:
        return f"the tensors are on {a.device}, the table runs on cuda:{table.device}"
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
        return f"shapes {tuple(a.shape)} and {tuple(b.shape)} are not an M x K and a K x N matrix"
    m, k, n = a.shape[0], a.shape[1], b.shape[1]
    # torch._scaled_mm's layout: A row-major, B column-major (a transposed N x K weight): gemmtune's nt.
    (a0, a1), (b0, b1) = a.stride(), b.stride()
    if not (a1 == 1 and a0 >= k) or not (b0 == 1 and b1 >= k):
        return "A must be row-major and B column-major (a transposed N x K weight), as torch._scaled_mm takes them"
    out_name = _OUT.get(out_dtype)
    if out_name is None:
        return f"out_dtype {out_dtype} is not one gemmtune writes"
    mode = _scale_mode(scale_a, scale_b, m, n, k)
    if mode not in ("tensor", "row", "block"):
        return mode
    dtype, b_dtype = _FP8[a.dtype], _FP8[b.dtype]
    args = table._prepare(m, n, k, dtype=dtype, layout="nt", lda=a0, ldb=b1, ldc=n,
                          out_dtype=out_name)
    from .table import _scales
    b_dtype = None if b_dtype == dtype else b_dtype
    return args, _scales(dtype, mode, b_dtype), (dtype, b_dtype, out_name, mode)


def scaled_mm(a: "_torch.Tensor", b: "_torch.Tensor", scale_a: "_torch.Tensor", scale_b: "_torch.Tensor",
              bias: Optional["_torch.Tensor"] = None, scale_result: Optional["_torch.Tensor"] = None,
              out_dtype: Optional["_torch.dtype"] = None, use_fast_accum: bool = False, *,
              table: Table) -> "_torch.Tensor":
    """torch._scaled_mm(a, b, scale_a, scale_b, bias, scale_result, out_dtype, use_fast_accum)
    with the table's config for the problem; torch._scaled_mm itself where it cannot serve.

    As torch._scaled_mm takes them: a (M x K) row-major and b (K x N) column-major, float8_e4m3fn
    or float8_e5m2; scale_a and scale_b float32 dequantisation scales, tensor-wise, row-wise
    ((M, 1) and (1, N)) or block-wise (1x128 of a, 128x128 of b); out_dtype bfloat16, float16,
    float32 or an FP8 type (default: a's). A bias, a scale_result with a wider output, and a
    table answer that accumulates fast where use_fast_accum is False go to torch._scaled_mm (with a
    FallbackWarning), and so, quietly, does a problem the table answers with the library's default."""
    return _scaled_mm(a, b, scale_a, scale_b, bias, scale_result, out_dtype, use_fast_accum, table, True)


def _scaled_mm(a, b, scale_a, scale_b, bias, scale_result, out_dtype, use_fast_accum, table: Table, warn: bool):
    """scaled_mm, saying why it falls back where `warn`."""
    out_dtype = out_dtype if out_dtype is not None else getattr(a, "dtype", None)

    def fallback(why: Optional[str]):
        if warn and why is not None:
            warnings.warn(f"gemmtune.torch.scaled_mm: {why}; using torch._scaled_mm", FallbackWarning, stacklevel=4)
        return _ORIGINAL["_scaled_mm"](a, b, scale_a, scale_b, bias=bias, scale_result=scale_result,
                                       out_dtype=out_dtype, use_fast_accum=use_fast_accum)

    if bias is not None:
        return fallback("gemmtune's FP8 GEMMs have no bias")
    if _torch.is_grad_enabled() and any(getattr(t, "requires_grad", False) for t in (a, b)):
        return fallback("an input requires grad, and gemmtune's kernels have no backward")
    plan = _why_not_scaled(a, b, scale_a, scale_b, out_dtype, table)
    if isinstance(plan, str):
        return fallback(plan)
    args, scales, (dtype, b_dtype, out_name, mode) = plan
    what = f"{args.m}x{args.n}x{args.k} {dtype}{':' + b_dtype if b_dtype else ''}>{out_name} nt {mode}"
    if scale_result is not None and out_dtype not in _FP8:
        return fallback("scale_result applies to an FP8 output only")
    choice = table.lookup(args.m, args.n, args.k, dtype=dtype, out_dtype=out_name, layout="nt", lda=args.lda,
                          ldb=args.ldb, ldc=args.ldc, scale=mode, b_dtype=b_dtype)
    if choice.is_default:  # no config of the table's own: PyTorch's is the default
        return fallback(None)
    # A config that accumulates fast is what the table was tuned to allow; a caller who did not
    # ask for it gets torch's exact accumulation instead.
    if not use_fast_accum and "_fast_accum1" in choice.config:
        return fallback(f"the table's config for {what} accumulates fast ({choice.config}); use_fast_accum=False")
    c = _torch.empty((args.m, args.n), dtype=out_dtype, device=a.device)
    if scale_result is not None:
        scales.d = scale_result.data_ptr()
    index = a.device.index
    try:
        with _torch.cuda.device(index):
            table._launch_scaled(args, scales, a.data_ptr(), b.data_ptr(), c.data_ptr(), scale_a.data_ptr(),
                                 scale_b.data_ptr(), _raw_stream(index))
    except (NotSupportedError, BuildFailedError) as e:
        return fallback(f"the table cannot run {what}: {e}")
    return c


# ---- the switch: PyTorch's functions through a table ------------------------------------------

_switch = {"table": None, "recording": False}


def _routed_matmul(input, other, *, out=None):
    table = _switch["table"]
    if table is None:
        return _torch_matmul(input, other, out)
    return _matmul(input, other, table, out, _quiet)


def _routed_mm(input, mat2, *, out=None, **kwargs):
    table, mm = _switch["table"], _ORIGINAL["mm"]
    if table is None or kwargs:  # out_dtype and the like: PyTorch's own
        return mm(input, mat2, **kwargs) if out is None else mm(input, mat2, out=out, **kwargs)
    return _matmul(input, mat2, table, out, lambda a, b, o, why: mm(a, b) if o is None else mm(a, b, out=o))


def _routed_linear(input, weight, bias=None):
    """F.linear: input (..., K) @ weight (N x K).t(): layout nt, the rows of every leading
    dimension as M. A bias, and an input that is not contiguous, go to PyTorch's own (gemmtune has
    no bias epilogue, and a copy of the input would cost more than it could gain)."""
    table, linear = _switch["table"], _ORIGINAL["linear"]
    if (table is None or bias is not None or not isinstance(input, _Tensor) or not isinstance(weight, _Tensor)
            or input.dim() < 1 or weight.dim() != 2 or not input.is_contiguous()):
        return linear(input, weight, bias)
    x = input if input.dim() == 2 else input.reshape(-1, input.shape[-1])
    c = _matmul(x, weight.t(), table, None, lambda a, b, o, why: None)
    if c is None:
        return linear(input, weight, bias)
    return c if input.dim() == 2 else c.reshape(*input.shape[:-1], weight.shape[0])


def _routed_scaled_mm(a, b, scale_a, scale_b, bias=None, scale_result=None, out_dtype=None, use_fast_accum=False):
    table = _switch["table"]
    if table is None:
        return _ORIGINAL["_scaled_mm"](a, b, scale_a, scale_b, bias=bias, scale_result=scale_result,
                                       out_dtype=out_dtype, use_fast_accum=use_fast_accum)
    return _scaled_mm(a, b, scale_a, scale_b, bias, scale_result, out_dtype, use_fast_accum, table, False)


_ROUTES = {"matmul": (_torch, "matmul", _routed_matmul), "mm": (_torch, "mm", _routed_mm),
           "linear": (_functional, "linear", _routed_linear),
           "_scaled_mm": (_torch, "_scaled_mm", _routed_scaled_mm)}


def enable(table: Table, *, record: Optional[Union[str, "os.PathLike[str]"]] = None) -> None:
    """Routes torch.matmul, torch.mm, torch.nn.functional.linear (nn.Linear) and torch._scaled_mm
    through `table`: a problem it answers with a config of its own (an exact entry, or a transfer
    backed by evidence or an online check) runs that config; every other call runs PyTorch's own
    function, without a warning (batches, a bias, CPU tensors, gradients, the library default).
    record: a job file that every problem the table answers without an exact entry is appended
    to (`gemmtune tune --config record`). A second enable replaces the table."""
    if not isinstance(table, Table):
        raise TypeError(f"gemmtune.torch.enable: table must be a gemmtune.Table, not {type(table).__name__}")
    if _switch["table"] is not None:
        disable()
    if record is not None:
        table.record_untuned(record)
    _switch.update(table=table, recording=record is not None)
    for owner, name, routed in _ROUTES.values():
        if owner is not None and getattr(owner, name, None) is not None:
            setattr(owner, name, routed)


def disable() -> None:
    """PyTorch's functions back as they were; a recording that enable started stops."""
    table = _switch["table"]
    for key, (owner, name, routed) in _ROUTES.items():
        if owner is not None and getattr(owner, name, None) is routed:
            setattr(owner, name, _ORIGINAL[key])
    if table is not None and _switch["recording"]:
        try:
            table.record_untuned(None)
        except Exception:  # a table closed meanwhile records nothing anyway
            pass
    _switch.update(table=None, recording=False)


def is_enabled() -> bool:
    return _switch["table"] is not None


@contextlib.contextmanager
def enabled(table: Table, *, record: Optional[Union[str, "os.PathLike[str]"]] = None):
    """`with gemmtune.torch.enabled(table):` enable() for the block, then the state before it."""
    before = (_switch["table"], _switch["recording"])
    enable(table, record=record)
    try:
        yield table
    finally:
        disable()
        if before[0] is not None:
            _switch.update(table=before[0], recording=before[1])
            for owner, name, routed in _ROUTES.values():
                if owner is not None and getattr(owner, name, None) is not None:
                    setattr(owner, name, routed)
