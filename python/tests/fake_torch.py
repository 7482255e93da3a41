"""A stand-in for the parts of PyTorch that gemmtune.torch uses, so that its checks, its plans
and its per-call path are tested (and its host cost timed: tools/bench_torch.py --host-only)
where PyTorch or a GPU is missing.

Tensors carry shapes, strides, a dtype, a device and a made-up data pointer, and compute
nothing: matmul only records that it was called. CUDA devices 0 and 1 exist, each with a
current stream (an int) that a test may change. torch.cuda.device, current_stream and
current_device are written as PyTorch 2.x writes them in Python (the index resolution, the
Stream object per call), with what PyTorch does in C++ as plain functions here, so that a
caller's time in them is of the same kind as with PyTorch.

    import fake_torch
    gt = fake_torch.load_gemmtune_torch()     # gemmtune/torch.py, imported with this as torch
"""

from __future__ import annotations

import importlib.util
import os
import sys
from types import SimpleNamespace
from typing import Any, List, Optional, Tuple


class dtype:  # noqa: N801  (torch's name)
    __slots__ = ("name", "itemsize")

    def __init__(self, name: str, itemsize: int):
        self.name, self.itemsize = name, itemsize

    def __repr__(self) -> str:
        return f"torch.{self.name}"


float16, bfloat16 = dtype("float16", 2), dtype("bfloat16", 2)
float32, float64 = dtype("float32", 4), dtype("float64", 8)
float8_e4m3fn, float8_e5m2 = dtype("float8_e4m3fn", 1), dtype("float8_e5m2", 1)
half = float16


class device:  # noqa: N801
    __slots__ = ("type", "index")

    def __init__(self, type: Any, index: Optional[int] = None):  # noqa: A002
        if isinstance(type, device):
            type, index = type.type, type.index
        elif ":" in type:
            type, index = type.split(":")[0], int(type.split(":")[1])
        self.type, self.index = type, index

    def __eq__(self, other) -> bool:
        return isinstance(other, device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self) -> int:
        return hash((self.type, self.index))

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self) -> str:
        return f"device(type={self.type!r}" + ("" if self.index is None else f", index={self.index}") + ")"


_Device = device


class Size(tuple):
    pass


_next_ptr = [1 << 32]


def _contiguous(shape) -> Tuple[int, ...]:
    strides, step = [], 1
    for s in reversed(shape):
        strides.append(step)
        step *= max(s, 1)
    return tuple(reversed(strides))


class Tensor:
    """shape, stride(), dtype, device, is_cuda, requires_grad, data_ptr(), t(): no data."""

    __slots__ = ("shape", "_stride", "dtype", "device", "requires_grad", "_ptr", "__weakref__")

    def __init__(self, shape, stride=None, dtype=float32, device="cpu", requires_grad=False, ptr=None):
        self.shape = Size(shape)
        self._stride = tuple(stride) if stride is not None else _contiguous(self.shape)
        self.dtype = dtype
        self.device = device if isinstance(device, _Device) else _Device(device)
        self.requires_grad = requires_grad
        if ptr is None:
            size = 1 + sum((s - 1) * st for s, st in zip(self.shape, self._stride)) if all(self.shape) else 0
            ptr = _next_ptr[0] if size else 0
            _next_ptr[0] += (size * dtype.itemsize + 255) // 256 * 256 + 256
        self._ptr = ptr

    @property
    def is_cuda(self) -> bool:
        return self.device.type == "cuda"

    def stride(self) -> Tuple[int, ...]:
        return self._stride

    def dim(self) -> int:
        return len(self.shape)

    def data_ptr(self) -> int:
        return self._ptr

    def numel(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    def is_contiguous(self) -> bool:
        return all(st == c for s, st, c in zip(self.shape, self._stride, _contiguous(self.shape)) if s != 1)

    def t(self) -> "Tensor":
        return Tensor(self.shape[::-1], self._stride[::-1], self.dtype, self.device, self.requires_grad, self._ptr)

    def reshape(self, *shape) -> "Tensor":
        """A view of a contiguous tensor in another shape (one size may be -1)."""
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        if -1 in shape:
            rest = 1
            for s in shape:
                rest *= s if s != -1 else 1
            shape = tuple(self.numel() // rest if s == -1 else s for s in shape)
        assert self.is_contiguous(), "fake_torch: reshape of a tensor that is not contiguous would copy"
        return Tensor(shape, None, self.dtype, self.device, self.requires_grad, self._ptr)

    def __getitem__(self, cols) -> "Tensor":
        """x[:, :n]: the first n columns (a view with the parent's row stride)."""
        rows, c = cols
        assert rows == slice(None) and c.start is None and c.step is None
        return Tensor((self.shape[0], c.stop), self._stride, self.dtype, self.device, self.requires_grad, self._ptr)

    def __repr__(self) -> str:
        return f"FakeTensor({tuple(self.shape)}, stride={self._stride}, {self.dtype}, {self.device})"


class _SparseTensor(Tensor):
    __slots__ = ()

    def stride(self):
        raise RuntimeError("Cannot access strides of a sparse tensor")  # as PyTorch's sparse COO tensors


def empty(*size, dtype=None, device=None, requires_grad=False) -> Tensor:
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    return Tensor(size, None, dtype or float32, device or "cpu", requires_grad)


def empty_strided(size, stride, dtype=None, device=None) -> Tensor:
    return Tensor(size, stride, dtype or float32, device or "cpu")


def sparse(shape, dtype=float32, device="cuda:0") -> Tensor:
    return _SparseTensor(shape, None, dtype, device)


matmul_calls: List[Tuple[Tensor, Tensor, Optional[Tensor]]] = []


def matmul(a: Tensor, b: Tensor, *, out: Optional[Tensor] = None) -> Tensor:
    matmul_calls.append((a, b, out))
    if out is not None or not isinstance(a, Tensor) or not isinstance(b, Tensor):
        return out
    return empty(a.shape[0], b.shape[-1], dtype=a.dtype, device=a.device)


mm_calls: List[Tuple[Tensor, Tensor, Optional[Tensor]]] = []


def mm(a: Tensor, b: Tensor, *, out: Optional[Tensor] = None) -> Tensor:
    mm_calls.append((a, b, out))
    return out if out is not None else empty(a.shape[0], b.shape[1], dtype=a.dtype, device=a.device)


linear_calls: List[Tuple[Tensor, Tensor, Optional[Tensor]]] = []


def _linear(input: Tensor, weight: Tensor, bias: Optional[Tensor] = None) -> Tensor:
    """torch.nn.functional.linear: records the call, returns a (..., N) tensor."""
    linear_calls.append((input, weight, bias))
    return empty(*input.shape[:-1], weight.shape[0], dtype=input.dtype, device=input.device)


nn = SimpleNamespace(functional=SimpleNamespace(linear=_linear))

scaled_mm_calls: List[dict] = []


def _scaled_mm(a: Tensor, b: Tensor, scale_a, scale_b, bias=None, scale_result=None, out_dtype=None,
               use_fast_accum=False) -> Tensor:
    """Records the call (torch._scaled_mm's arguments) and returns an M x N tensor of out_dtype."""
    scaled_mm_calls.append(dict(a=a, b=b, scale_a=scale_a, scale_b=scale_b, bias=bias, scale_result=scale_result,
                                out_dtype=out_dtype, use_fast_accum=use_fast_accum))
    return empty(a.shape[0], b.shape[1], dtype=out_dtype or a.dtype, device=a.device)


_grad = [True]


def is_grad_enabled() -> bool:
    return _grad[0]


class no_grad:  # noqa: N801
    def __enter__(self):
        self.prev = _grad[0]
        _grad[0] = False

    def __exit__(self, *exc):
        _grad[0] = self.prev
        return False


class _Matmul:
    """torch.backends.cuda.matmul: allow_tf32, and fp32_precision (PyTorch >= 2.9; "none": not set)."""

    def __init__(self):
        self.allow_tf32 = False
        self.fp32_precision = "none"


backends = SimpleNamespace(cuda=SimpleNamespace(matmul=_Matmul()))

# ---- CUDA: what PyTorch keeps in C++ ---------------------------------------------------------

_cuda = {"device": 0, "streams": {0: 0x5000, 1: 0x6000}, "exchanges": 0}


def _get_device() -> int:
    return _cuda["device"]


def _exchange_device(index: int) -> int:
    prev = _cuda["device"]
    if index >= 0 and index != prev:
        _cuda["device"] = index
        _cuda["exchanges"] += 1
    return prev


def _current_raw_stream(index: int) -> int:
    return _cuda["streams"][index]


def _current_stream(index: int) -> Tuple[int, int, int]:
    return _cuda["streams"][index], index, 1


_C = SimpleNamespace(_cuda_getDevice=_get_device, _cuda_getCurrentRawStream=_current_raw_stream,
                     _cuda_getCurrentStream=_current_stream, _cuda_exchangeDevice=_exchange_device,
                     _cuda_maybeExchangeDevice=_exchange_device)

# ---- torch.cuda, as PyTorch writes it in Python -------------------------------------------------

_initialized = [True]


def _lazy_init() -> None:
    if _initialized[0] or hasattr(_lazy_init, "is_initializing"):
        return


def _torch_get_device_index(dev: Any, optional: bool = False, allow_cpu: bool = False) -> int:
    """torch._utils._get_device_index."""
    if isinstance(dev, str):
        dev = device(dev)
    device_idx = None
    if isinstance(dev, device):
        if not allow_cpu and dev.type == "cpu":
            raise ValueError(f"Expected a non cpu device, but got: {dev}")
        device_idx = -1 if dev.type == "cpu" else dev.index
    if isinstance(dev, int):
        device_idx = dev
    if device_idx is None:
        if optional:
            device_idx = _C._cuda_getDevice()
        else:
            raise ValueError(f"Expected a torch.device with a specified index or an integer, but got:{dev}")
    return device_idx


def _get_device_index(dev: Any, optional: bool = False, allow_cpu: bool = False) -> int:
    """torch.cuda._utils._get_device_index."""
    if isinstance(dev, int):
        return dev
    if isinstance(dev, str):
        dev = device(dev)
    if isinstance(dev, device):
        if allow_cpu:
            if dev.type not in ["cuda", "cpu"]:
                raise ValueError(f"Expected a cuda or cpu device, but got: {dev}")
        elif dev.type != "cuda":
            raise ValueError(f"Expected a cuda device, but got: {dev}")
    if isinstance(dev, _CudaDevice):
        return dev.idx
    return _torch_get_device_index(dev, optional, allow_cpu)


class _CudaDevice:
    """torch.cuda.device: a context manager that makes a device current."""

    def __init__(self, dev: Any):
        self.idx = _get_device_index(dev, optional=True)
        self.prev_idx = -1

    def __enter__(self):
        self.prev_idx = _C._cuda_exchangeDevice(self.idx)

    def __exit__(self, type: Any, value: Any, traceback: Any):
        self.idx = _C._cuda_maybeExchangeDevice(self.prev_idx)
        return False


class Stream:
    """torch.cuda.Stream, as current_stream builds one."""

    def __new__(cls, device=None, priority=0, **kwargs):
        if device is None or ("stream_id" in kwargs and "device_index" in kwargs):
            self = super().__new__(cls)
            self.cuda_stream, self.device_index = kwargs.get("stream_id", 0), kwargs.get("device_index", 0)
            return self
        raise NotImplementedError("fake_torch.cuda.Stream(device=...)")


def current_stream(dev: Any = None) -> Stream:
    _lazy_init()
    streamdata = _C._cuda_getCurrentStream(_get_device_index(dev, optional=True))
    return Stream(stream_id=streamdata[0], device_index=streamdata[1], device_type=streamdata[2])


def current_device() -> int:
    _lazy_init()
    return _C._cuda_getDevice()


cuda = SimpleNamespace(device=_CudaDevice, current_stream=current_stream, current_device=current_device,
                       Stream=Stream, is_available=lambda: True, device_count=lambda: 2)

# ---- for tests ------------------------------------------------------------------------------------


def reset() -> None:
    """Every setting back to its start: device 0 current, the first streams, TF32 off, grad on."""
    _cuda.update(device=0, streams={0: 0x5000, 1: 0x6000}, exchanges=0)
    backends.cuda.matmul.allow_tf32 = False
    backends.cuda.matmul.fp32_precision = "none"
    _grad[0] = True
    matmul_calls.clear()
    mm_calls.clear()
    linear_calls.clear()
    scaled_mm_calls.clear()


def set_device(index: int) -> None:
    _cuda["device"] = index


def set_stream(index: int, handle: int) -> None:
    _cuda["streams"][index] = handle


def device_switches() -> int:
    """How often the current device changed (torch.cuda.device's entering and leaving)."""
    return _cuda["exchanges"]


def load_gemmtune_torch(name: str = "gemmtune._torch_on_fake", without: Tuple[str, ...] = ()):
    """gemmtune/torch.py imported anew with this module as its `torch` (in sys.modules only for
    the import, so a real PyTorch stays what `import torch` gives). without: names of torch._C
    to hide for that import (to take the public calls instead)."""
    import gemmtune

    path = os.path.join(os.path.dirname(gemmtune.__file__), "torch.py")
    me = sys.modules[__name__]
    saved_torch, saved_c = sys.modules.get("torch"), me._C
    sys.modules["torch"] = me
    if without:
        me._C = SimpleNamespace(**{k: v for k, v in vars(saved_c).items() if k not in without})
    try:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        me._C = saved_c
        if saved_torch is None:
            del sys.modules["torch"]
        else:
            sys.modules["torch"] = saved_torch
    return module
