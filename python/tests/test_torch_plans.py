"""gemmtune.torch.matmul's kept plans, on PyTorch's stand-in (fake_torch) and a dry-run table
posing as one on cuda:0, whose gemmtune_gemm only records what it is asked: a later call of a
problem runs what its first call planned, another problem gets its own plan, and what can
change between calls (grad, TF32, the table, the current device and stream) is read per call,
falling back with a first call's reasons. No GPU or PyTorch needed."""

from __future__ import annotations

import warnings

import fake_torch as ft
import pytest

import gemmtune
from conftest import LLM_TABLE
from gemmtune.table import DTYPES, LAYOUTS

BF16, F16, F32 = ft.bfloat16, ft.float16, ft.float32
DEV = "cuda:0"


@pytest.fixture(scope="module")
def gt():
    """gemmtune.torch imported with fake_torch as its torch."""
    return ft.load_gemmtune_torch()


class Recorder:
    """Stands for gemmtune_gemm: keeps each launch's arguments, the stream and the device
    current at the call; raises `fail` where set (as _capi.check would)."""

    def __init__(self):
        self.launches, self.fail = [], None

    def __call__(self, handle, g, stream):
        assert handle
        self.launches.append({"m": g.m, "n": g.n, "k": g.k, "in": g.in_dtype, "out": g.out_dtype,
                              "layout": g.layout, "a": g.a, "lda": g.lda, "b": g.b, "ldb": g.ldb, "c": g.c,
                              "ldc": g.ldc, "stream": stream, "device": ft.current_device()})
        if self.fail is not None:
            raise self.fail
        return 0


# A config of the table's own for every problem: the plans' machinery runs whatever the committed
# table answers (the library's default for most of these small shapes, which torch.matmul runs:
# test_the_librarys_default_runs_torch_matmul_quietly).
ANSWERED = gemmtune.Choice("exact", "cublaslt_stub", "exact", "exact", "exact")


def answering(t):
    t._choice = lambda g, sc=None: (t._live(), ANSWERED)[1]
    return t


@pytest.fixture
def table(cache_dir):
    ft.reset()
    t = gemmtune.Table.load(LLM_TABLE, dry_run=True, cache_dir=cache_dir)
    t.dry_run, t.device = False, 0  # the stand-in's cuda:0; launches go to the recorder
    t._gemm_c = Recorder()
    yield answering(t)
    t.close()
    ft.reset()


@pytest.fixture
def planned(gt, monkeypatch):
    """How often matmul went through every check (_why_not)."""
    count = [0]
    why_not = gt._why_not

    def counted(*args):
        count[0] += 1
        return why_not(*args)

    monkeypatch.setattr(gt, "_why_not", counted)
    return count


def t(*shape, dtype=BF16, **kw):
    return ft.empty(*shape, dtype=dtype, device=DEV, **kw)


def no_fallback(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return fn()


def fallback_reasons(fn, n=1):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    assert all(w.filename == __file__ for w in caught), "the warning points at matmul's caller"
    reasons = [str(w.message) for w in caught]
    assert len(reasons) == n, reasons
    return reasons


def launched(table, a, b, c, layout="nn", dtype="bf16", out_dtype=None, lda=None, ldb=None, ldc=None):
    """What the last launch should have been for this product."""
    m, n, k = c.shape[0], c.shape[1], a.shape[1]
    return {"m": m, "n": n, "k": k, "in": DTYPES[dtype], "out": DTYPES[out_dtype or dtype],
            "layout": LAYOUTS[layout], "a": a.data_ptr(), "lda": lda or k, "b": b.data_ptr(), "ldb": ldb or n,
            "c": c.data_ptr(), "ldc": ldc or n, "stream": 0x5000, "device": 0}


def test_a_problem_is_planned_once_and_its_pointers_are_each_calls(gt, table, planned):
    for _ in range(3):
        a, b = t(16, 32), t(32, 64)
        c = no_fallback(lambda: gt.matmul(a, b, table=table))
        assert c.shape == (16, 64) and c.dtype is BF16 and c.device == ft.device(DEV)
        assert table._gemm_c.launches[-1] == launched(table, a, b, c)
    assert planned[0] == 1 and len(table._plans) == 1 and len(table._gemm_c.launches) == 3


def test_other_strides_shapes_dtypes_and_out_get_their_own_plans(gt, table, planned):
    base_a, base_b = t(16, 32), t(32, 64)
    out, wide_out = t(16, 64), t(16, 80)[:, :64]
    cases = [  # (A, B, out, what the launch carries)
        (base_a, base_b, None, {}),
        (t(32, 16).t(), base_b, None, {"layout": "tn", "lda": 16}),  # A transposed
        (base_a, t(64, 32).t(), None, {"layout": "nt", "ldb": 32}),  # B transposed
        (t(32, 16).t(), t(64, 32).t(), None, {"layout": "tt", "lda": 16, "ldb": 32}),
        (t(16, 40)[:, :32], base_b, None, {"lda": 40}),  # rows of a wider A
        (t(8, 32), base_b, None, {}),  # another M
        (t(16, 32, dtype=F16), t(32, 64, dtype=F16), None, {"dtype": "f16"}),
        (base_a, base_b, out, {}),  # out given
        (base_a, base_b, wide_out, {"ldc": 80}),  # out with wider rows
    ]
    for rounds in (1, 2):  # the second round: each case finds its own plan
        for i, (a, b, o, want) in enumerate(cases):
            c = no_fallback(lambda: gt.matmul(a, b, table=table, out=o))
            assert o is None or c is o
            assert table._gemm_c.launches[-1] == launched(table, a, b, c, **want), (rounds, i)
            assert planned[0] == (i + 1 if rounds == 1 else len(cases))
    assert len(table._plans) == len(cases)


def test_the_tf32_setting_is_read_per_call(gt, table, planned):
    a, b, c = t(16, 32, dtype=F32), t(32, 64, dtype=F32), t(16, 64, dtype=F32)
    matmul = ft.backends.cuda.matmul
    dtypes = []
    for allow, precision in ((False, "none"), (True, "none"), (False, "none"), (False, "tf32"), (True, "ieee"),
                             (True, "none")):
        matmul.allow_tf32, matmul.fp32_precision = allow, precision
        no_fallback(lambda: gt.matmul(a, b, table=table, out=c))
        g = table._gemm_c.launches[-1]
        assert g["out"] == DTYPES["f32"]
        dtypes.append(g["in"])
    f32, tf32 = DTYPES["f32"], DTYPES["tf32"]
    assert dtypes == [f32, tf32, f32, tf32, f32, tf32]
    assert planned[0] == 2 and len(table._plans) == 2  # one plan each for f32 and tf32


def test_requires_grad_is_read_per_call(gt, table, planned):
    a, b = t(16, 32), t(32, 64)
    no_fallback(lambda: gt.matmul(a, b, table=table))
    grad_a, grad_b = t(16, 32, requires_grad=True), t(32, 64, requires_grad=True)
    why = "gemmtune.torch.matmul: an input requires grad, and gemmtune's kernels have no backward; using torch.matmul"
    for x, y in ((grad_a, b), (a, grad_b), (grad_a, grad_b)):
        assert fallback_reasons(lambda: gt.matmul(x, y, table=table)) == [why]
        assert ft.matmul_calls[-1][:2] == (x, y)
    assert len(table._gemm_c.launches) == 1
    with ft.no_grad():  # no gradient to need: gemmtune runs it, on the plan the first call made
        c = no_fallback(lambda: gt.matmul(grad_a, b, table=table))
    assert table._gemm_c.launches[-1] == launched(table, grad_a, b, c)
    assert len(table._plans) == 1


def test_a_planned_problem_falls_back_as_a_first_call_does(gt, table, cache_dir):
    a, b, c = t(16, 32), t(32, 64), t(16, 64)
    no_fallback(lambda: gt.matmul(a, b, table=table, out=c))
    cases = [  # each differs from the planned problem in one thing
        (a, b, t(16, 64, dtype=F16), "out is torch.float16, the inputs are torch.bfloat16"),
        (a, t(32, 64, dtype=F16), c, "A is torch.bfloat16 and B is torch.float16"),
        (a, ft.empty(32, 64, dtype=BF16, device="cuda:1"), c,
         "the tensors are on different devices (cuda:0, cuda:1, cuda:0)"),
        (a, b, ft.empty(16, 64, dtype=BF16, device="cuda:1"),
         "the tensors are on different devices (cuda:0, cuda:0, cuda:1)"),
        (ft.empty(16, 32, dtype=BF16), b, c, "the tensors are on cpu and cuda:0, not a CUDA device"),
        (t(16, 32, dtype=ft.float64), t(32, 64, dtype=ft.float64), None,
         "gemmtune has no torch.float64 GEMM (float16, bfloat16, float32)"),
        (ft.empty_strided((16, 32), (0, 1), dtype=BF16, device=DEV), b, c,
         "A: strides (0, 1) of a 16x32 matrix are neither row-major nor a transposed row-major view"),
        (a, b, t(64, 16).t(), "out: strides (1, 16) are not those of a row-major 16x64 matrix"),
        (a, b, t(16, 63), "out is 16x63, the product is 16x64"),
        (a, t(31, 64), c, "A is 16x32 and B is 31x64: their inner sizes differ"),
        ([[1.0]], b, None, "A and B must be tensors"),
    ]
    for x, y, o, why in cases:
        want = f"gemmtune.torch.matmul: {why}; using torch.matmul"
        for _ in range(2):  # what fails is not kept: the second call says the same
            assert fallback_reasons(lambda: gt.matmul(x, y, table=table, out=o)) == [want]
            assert gt._why_not(x, y, o, table) == why
    assert len(table._gemm_c.launches) == 1 and len(table._plans) == 1
    table.dry_run = True  # as loaded without a GPU: the planned problem falls back, saying so
    assert fallback_reasons(lambda: gt.matmul(a, b, table=table, out=c)) == [
        f"gemmtune.torch.matmul: the table {LLM_TABLE} was loaded without a GPU (a dry run); using torch.matmul"]
    table.dry_run, table.device = False, 1  # on another GPU than the tensors
    assert fallback_reasons(lambda: gt.matmul(a, b, table=table, out=c)) == [
        "gemmtune.torch.matmul: the tensors are on cuda:0, the table runs on cuda:1; using torch.matmul"]
    other = answering(gemmtune.Table.load(LLM_TABLE, dry_run=True, cache_dir=cache_dir))
    other.dry_run, other.device, other._gemm_c = False, 0, Recorder()
    no_fallback(lambda: gt.matmul(a, b, table=other, out=c))  # each table keeps its own plans
    assert len(other._gemm_c.launches) == 1 and len(other._plans) == 1
    other.close()


def test_strides_that_are_none_raise_as_before(gt, table):
    """A sparse tensor has no strides: the first call and any later one raise PyTorch's error."""
    for _ in range(2):
        with pytest.raises(RuntimeError, match="Cannot access strides of a sparse tensor"):
            gt.matmul(ft.sparse((16, 32), BF16), t(32, 64), table=table)
    with pytest.raises(AttributeError):  # out that is no tensor
        gt.matmul(t(16, 32), t(32, 64), table=table, out="c")


def test_what_the_table_cannot_run_falls_back_on_every_call(gt, table, planned):
    a, b, c = t(16, 32), t(32, 64), t(16, 64)
    rec = table._gemm_c
    want = ("gemmtune.torch.matmul: the table cannot run 16x64x32 bf16 nn: no config can run it; "
            "using torch.matmul")
    rec.fail = gemmtune.NotSupportedError("no config can run it")
    assert fallback_reasons(lambda: gt.matmul(a, b, table=table, out=c)) == [want]
    assert table._plans == {}  # not kept: the next call checks it all again
    rec.fail = None
    no_fallback(lambda: gt.matmul(a, b, table=table, out=c))
    assert planned[0] == 2 and len(table._plans) == 1
    rec.fail = gemmtune.BuildFailedError("no config can run it")  # the runtime answers each launch
    assert fallback_reasons(lambda: gt.matmul(a, b, table=table, out=c)) == [want]
    assert ft.matmul_calls[-1] == (a, b, c) and planned[0] == 2
    rec.fail = gemmtune.LaunchFailedError("launch failed")  # the others raise, as from Table.gemm
    with pytest.raises(gemmtune.LaunchFailedError):
        gt.matmul(a, b, table=table, out=c)


def test_a_closed_table_says_so(gt, table):
    a, b = t(16, 32), t(32, 64)
    no_fallback(lambda: gt.matmul(a, b, table=table))
    table.close()
    assert table._plans == {}
    for _ in range(2):
        with pytest.raises(gemmtune.InvalidArgumentError, match="was closed"):
            gt.matmul(a, b, table=table)


def test_the_tables_device_is_made_current_only_where_it_is_not(gt, table):
    a, b = t(16, 32), t(32, 64)
    rec = table._gemm_c
    for _ in range(2):
        no_fallback(lambda: gt.matmul(a, b, table=table))
        assert rec.launches[-1]["device"] == 0 and ft.device_switches() == 0
    ft.set_device(1)
    for calls in (1, 2):
        no_fallback(lambda: gt.matmul(a, b, table=table))
        assert rec.launches[-1]["device"] == 0  # the table's, for the call
        assert ft.current_device() == 1 and ft.device_switches() == 2 * calls  # there and back
        assert rec.launches[-1]["stream"] == 0x5000  # device 0's stream, not device 1's


def test_the_current_stream_is_read_per_call(gt, table):
    a, b = t(16, 32), t(32, 64)
    for stream, passed in ((0x7000, 0x7000), (0x7100, 0x7100), (0, None)):  # 0: the default stream, NULL
        ft.set_stream(0, stream)
        no_fallback(lambda: gt.matmul(a, b, table=table))
        assert table._gemm_c.launches[-1]["stream"] == passed


def test_without_torch_cs_calls_the_public_ones_serve(table):
    gt = ft.load_gemmtune_torch("gemmtune._torch_on_fake_public",
                                without=("_cuda_getCurrentRawStream", "_cuda_getDevice"))
    a, b = t(16, 32), t(32, 64)
    ft.set_stream(0, 0x7200)
    ft.set_device(1)
    no_fallback(lambda: gt.matmul(a, b, table=table))
    no_fallback(lambda: gt.matmul(a, b, table=table))
    assert [(g["stream"], g["device"]) for g in table._gemm_c.launches] == [(0x7200, 0)] * 2
    assert ft.current_device() == 1


def test_the_plans_are_capped(gt, table, monkeypatch):
    monkeypatch.setattr(gt, "PLANS_CAP", 3)
    b = t(32, 64)
    for m in range(1, 11):
        a = t(m, 32)
        c = no_fallback(lambda: gt.matmul(a, b, table=table))
        assert table._gemm_c.launches[-1] == launched(table, a, b, c)
        assert 1 <= len(table._plans) <= 3


def test_the_librarys_default_runs_torch_matmul_quietly(gt, table, planned):
    """Where the table answers the library's default (no exact entry, no backed transfer), PyTorch's
    own torch.matmul runs the product, without a warning; the plan keeps that, so later calls go
    there at once. A problem the table holds runs its config."""
    del table._choice  # the runtime's own answers
    a, b, c = t(16, 32), t(32, 64), t(16, 64)
    assert table.lookup(16, 64, 32, dtype="bf16").is_default
    for calls in (1, 2):
        assert no_fallback(lambda: gt.matmul(a, b, table=table, out=c)) is c
        assert ft.matmul_calls[-1] == (a, b, c) and len(ft.matmul_calls) == calls
    assert table._gemm_c.launches == [] and planned[0] == 1
    assert list(table._plans.values()) == [gt._DEFAULT]
    x, w = t(16, 4096), t(4096, 4096)  # an entry of the committed table
    assert table.lookup(16, 4096, 4096, dtype="bf16").match == "exact"
    no_fallback(lambda: gt.matmul(x, w, table=table))
    assert len(table._gemm_c.launches) == 1 and len(ft.matmul_calls) == 2