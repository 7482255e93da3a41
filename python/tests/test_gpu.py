"""On a GPU: Table.gemm on device pointers and a stream, and gemmtune.torch.matmul against
torch.matmul. Every test here is marked gpu and skips, saying why, without one."""

from __future__ import annotations

import ctypes
import ctypes.util
import struct
import warnings

import pytest

pytestmark = pytest.mark.gpu


class Cudart:
    """The few CUDA runtime calls the pointer tests need, without PyTorch."""

    def __init__(self):
        name = None
        for candidate in ("libcudart.so.13", "libcudart.so.12", ctypes.util.find_library("cudart")):
            if candidate:
                try:
                    self.lib = ctypes.CDLL(candidate)
                    name = candidate
                    break
                except OSError:
                    continue
        if name is None:
            pytest.skip("the CUDA runtime library (libcudart) was not found")
        self.lib.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
        self.lib.cudaMemcpy.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        self.lib.cudaFree.argtypes = [ctypes.c_void_p]
        self.lib.cudaStreamCreate.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
        self.lib.cudaStreamSynchronize.argtypes = [ctypes.c_void_p]
        self.lib.cudaStreamDestroy.argtypes = [ctypes.c_void_p]

    def check(self, rc, what):
        assert rc == 0, f"{what}: CUDA error {rc}"

    def upload(self, data: bytes) -> int:
        p = ctypes.c_void_p()
        self.check(self.lib.cudaMalloc(ctypes.byref(p), len(data)), "cudaMalloc")
        self.check(self.lib.cudaMemcpy(p, data, len(data), 1), "cudaMemcpy to the device")
        return p.value

    def download(self, p: int, size: int) -> bytes:
        buf = ctypes.create_string_buffer(size)
        self.check(self.lib.cudaMemcpy(buf, ctypes.c_void_p(p), size, 2), "cudaMemcpy to the host")
        return buf.raw


def bf16(x: float) -> bytes:
    return struct.pack("<f", x)[2:]  # the upper half of the float's bits


def test_gemm_on_device_pointers_and_a_stream(gpu_table):
    rt = Cudart()
    for e in [e for e in gpu_table.entries() if e.dtype == "bf16" and e.layout == "nn"][:3]:
        m, n, k = e.m, e.n, e.k
        a, b = rt.upload(bf16(1.0) * (m * k)), rt.upload(bf16(0.5) * (k * n))
        c = rt.upload(b"\xff" * (m * n * 2))  # NaN: every element must be written
        stream = ctypes.c_void_p()
        rt.check(rt.lib.cudaStreamCreate(ctypes.byref(stream)), "cudaStreamCreate")
        gpu_table.gemm(m, n, k, a, b, c, dtype="bf16", stream=stream.value)
        rt.check(rt.lib.cudaStreamSynchronize(stream), "cudaStreamSynchronize")
        out = rt.download(c, m * n * 2)
        assert out == bf16(0.5 * k) * (m * n), f"{e.shape}: C is not {0.5 * k} everywhere"
        for p in (a, b, c):
            rt.lib.cudaFree(ctypes.c_void_p(p))
        rt.lib.cudaStreamDestroy(stream)


@pytest.fixture(scope="module")
def tt(gpu_table):
    """(torch, gemmtune.torch) where PyTorch sees the table's GPU."""
    torch = pytest.importorskip("torch", reason="PyTorch is not installed for this interpreter")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch sees no CUDA device")
    import gemmtune.torch as gt_torch
    return torch, gt_torch


def close(c, ref) -> bool:
    err = (c.float() - ref.float()).norm() / ref.float().norm()
    return err.item() < 2e-2


def no_fallback(gt_torch, fn):
    with warnings.catch_warnings():
        warnings.simplefilter("error", category=gt_torch.FallbackWarning)
        return fn()


@pytest.mark.parametrize("layout", ["nn", "nt", "tn", "tt"])
def test_matmul_maps_transposed_views_to_layouts(gpu_table, tt, layout):
    torch, gt_torch = tt
    m, n, k = 64, 4096, 4096
    dev = f"cuda:{gpu_table.device}"
    rand = lambda *shape: torch.randn(*shape, device=dev, dtype=torch.bfloat16)  # noqa: E731
    a = rand(k, m).t() if layout[0] == "t" else rand(m, k)
    b = rand(n, k).t() if layout[1] == "t" else rand(k, n)
    c = no_fallback(gt_torch, lambda: gt_torch.matmul(a, b, table=gpu_table))
    assert c.shape == (m, n) and c.dtype == torch.bfloat16
    assert close(c, torch.matmul(a, b))


def test_matmul_runs_the_tables_entries(gpu_table, tt):
    torch, gt_torch = tt
    dev = f"cuda:{gpu_table.device}"
    for e in [e for e in gpu_table.entries() if e.dtype == "bf16" and e.layout == "nn"][:4]:
        a = torch.randn(e.m, e.k, device=dev, dtype=torch.bfloat16)
        b = torch.randn(e.k, e.n, device=dev, dtype=torch.bfloat16)
        assert gpu_table.lookup(e.m, e.n, e.k, dtype="bf16").match == "exact"
        c = no_fallback(gt_torch, lambda: gt_torch.matmul(a, b, table=gpu_table))
        assert close(c, a @ b), e.shape


def test_matmul_writes_out_on_the_current_stream(gpu_table, tt):
    torch, gt_torch = tt
    dev = f"cuda:{gpu_table.device}"
    a = torch.randn(16, 4096, device=dev, dtype=torch.bfloat16)
    b = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
    s = torch.cuda.Stream(device=dev)
    s.wait_stream(torch.cuda.current_stream(dev))  # a and b were made on the default stream
    with torch.cuda.stream(s):
        out = torch.empty(16, 4096, device=dev, dtype=torch.bfloat16)
        c = no_fallback(gt_torch, lambda: gt_torch.matmul(a, b, table=gpu_table, out=out))
    s.synchronize()
    assert c is out and close(out, a @ b)


def test_matmul_falls_back_for_what_the_table_cannot_run(gpu_table, tt):
    torch, gt_torch = tt
    dev = f"cuda:{gpu_table.device}"
    a, b = torch.randn(8, 16, device=dev, dtype=torch.float64), torch.randn(16, 4, device=dev, dtype=torch.float64)
    with pytest.warns(gt_torch.FallbackWarning, match="gemmtune has no torch.float64 GEMM"):
        c = gt_torch.matmul(a, b, table=gpu_table)
    assert torch.equal(c, torch.matmul(a, b))
    x = torch.randn(8, 16, device=dev, dtype=torch.bfloat16, requires_grad=True)
    with pytest.warns(gt_torch.FallbackWarning, match="requires grad"):
        gt_torch.matmul(x, torch.randn(16, 4, device=dev, dtype=torch.bfloat16), table=gpu_table)


def test_matmul_keeps_each_problems_plan_apart(gpu_table, tt):
    """Problems that differ in shape, strides, dtype or out, called in turn twice (the second
    time from their kept plans): each result is its own product; a planned problem whose input
    requires grad falls back, and runs under no_grad."""
    torch, gt_torch = tt
    dev = f"cuda:{gpu_table.device}"
    rand = lambda *shape, dt=torch.bfloat16: torch.randn(*shape, device=dev, dtype=dt)  # noqa: E731
    b, b16 = rand(4096, 4096), rand(4096, 4096, dt=torch.float16)
    cases = [
        (rand(16, 4096), b, None),
        (rand(4096, 64).t(), b, None),  # tn
        (rand(16, 4160)[:, :4096], b, None),  # rows of a wider A
        (rand(16, 4096), b, torch.empty(16, 4160, device=dev, dtype=torch.bfloat16)[:, :4096]),  # wider out
        (rand(16, 4096, dt=torch.float16), b16, None),
        (rand(64, 4096), b, torch.empty(64, 4096, device=dev, dtype=torch.bfloat16)),
    ]
    for _ in range(2):
        for a, bb, out in cases:
            c = no_fallback(gt_torch, lambda: gt_torch.matmul(a, bb, table=gpu_table, out=out))
            assert out is None or c is out
            assert close(c, torch.matmul(a, bb)), (tuple(a.shape), a.stride(), a.dtype, out is None)
    x = cases[0][0].clone().requires_grad_()
    with pytest.warns(gt_torch.FallbackWarning, match="requires grad"):
        gt_torch.matmul(x, b, table=gpu_table)
    with torch.no_grad():
        c = no_fallback(gt_torch, lambda: gt_torch.matmul(x, b, table=gpu_table))
    assert close(c, torch.matmul(x.detach(), b))
