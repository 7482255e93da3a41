"""The PyTorch switch (gemmtune.torch.enable / disable / enabled) and record mode.

CPU-side dispatch on PyTorch's stand-in (fake_torch): a table made here holds a few problems
(cuBLASLt entries, which a dry run answers without a GPU), posing as one on cuda:0 whose
gemmtune_gemm only records what it is asked. What the table holds runs through it; every other
call runs PyTorch's own function, quietly; disable() and the context manager put PyTorch's
functions back. Then a transformer block built here, with real PyTorch where it is installed:
with and without the switch the outputs agree (on a GPU through the committed table's entries;
on a CPU every call is PyTorch's own). No downloaded weights.
"""

from __future__ import annotations

import json
import os
import subprocess
import warnings

import fake_torch as ft
import pytest

import gemmtune
from conftest import LLM_TABLE_JSON

BF16 = ft.bfloat16
DEV = "cuda:0"
# Problems the table made here holds: (m, n, k, layout).
HELD = [(8, 64, 32, "nt"), (8, 32, 64, "nn"), (16, 64, 32, "nn")]


def held_table(path) -> str:
    """A table of cuBLASLt entries for HELD (a config of the committed table's; a dry run without
    a GPU answers an exact cuBLASLt entry as the table names it)."""
    with open(LLM_TABLE_JSON) as f:
        committed = json.load(f)
    template = next(e for e in committed["entries"] if e["family"] == "cublaslt")
    entries = [dict(template, m=m, n=n, k=k, layout=layout) for m, n, k, layout in HELD]
    with open(path, "w") as f:
        json.dump(dict(committed, entries=entries), f)
    return str(path)


class Recorder:
    def __init__(self):
        self.launches = []

    def __call__(self, handle, g, stream):
        self.launches.append((g.m, g.n, g.k, g.layout, g.lda, g.ldb, g.ldc))
        return 0


@pytest.fixture(scope="module")
def gt():
    return ft.load_gemmtune_torch("gemmtune._torch_switch")


@pytest.fixture
def table(tmp_path, cache_dir):
    ft.reset()
    t = gemmtune.Table.load(held_table(tmp_path / "held.json"), dry_run=True, cache_dir=cache_dir)
    t.dry_run, t.device = False, 0  # the stand-in's cuda:0; launches go to the recorder
    t._gemm_c = Recorder()
    yield t
    t.close()
    ft.reset()


@pytest.fixture
def switch(gt):
    """PyTorch's functions are its own again after each test, whatever the test did."""
    yield gt
    gt.disable()
    assert ft.matmul is ft_originals["matmul"] and ft.nn.functional.linear is ft_originals["linear"]


ft_originals = {"matmul": ft.matmul, "mm": ft.mm, "linear": ft.nn.functional.linear, "_scaled_mm": ft._scaled_mm}


def x(*shape):
    return ft.empty(*shape, dtype=BF16, device=DEV)


def quietly(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the switch falls back without a word
        return fn()


def test_enable_routes_pytorchs_functions_and_disable_restores_them(switch, table):
    gt = switch
    assert not gt.is_enabled()
    gt.enable(table)
    assert gt.is_enabled()
    assert ft.matmul is gt._routed_matmul and ft.mm is gt._routed_mm
    assert ft.nn.functional.linear is gt._routed_linear and ft._scaled_mm is gt._routed_scaled_mm
    gt.disable()
    assert not gt.is_enabled()
    for name, f in ft_originals.items():
        assert (ft.nn.functional.linear if name == "linear" else getattr(ft, name)) is f
    gt.disable()  # twice: nothing to restore
    with pytest.raises(TypeError, match="must be a gemmtune.Table"):
        gt.enable(str(LLM_TABLE_JSON))


def test_what_the_table_holds_runs_through_it_and_the_rest_is_pytorchs(switch, table):
    gt = switch
    gt.enable(table)
    rec = table._gemm_c
    c = quietly(lambda: ft.matmul(x(8, 64), x(64, 32)))  # held: 8x32x64 nn
    assert rec.launches == [(8, 32, 64, 0, 64, 32, 32)] and ft.matmul_calls == []
    assert c.shape == (8, 32)
    quietly(lambda: ft.matmul(x(8, 48), x(48, 32)))  # not held: PyTorch's own, no warning
    assert len(rec.launches) == 1 and len(ft.matmul_calls) == 1
    quietly(lambda: ft.matmul(x(2, 8, 64), x(64, 32)))  # a batch: PyTorch's own
    assert len(rec.launches) == 1 and len(ft.matmul_calls) == 2
    quietly(lambda: ft.mm(x(16, 32), x(32, 64)))  # held: 16x64x32 nn
    assert rec.launches[-1] == (16, 64, 32, 0, 32, 64, 64) and ft.mm_calls == []
    quietly(lambda: ft.mm(x(16, 32), x(32, 48)))
    assert len(ft.mm_calls) == 1 and len(rec.launches) == 2
    grad = ft.empty(8, 64, dtype=BF16, device=DEV, requires_grad=True)
    quietly(lambda: ft.matmul(grad, x(64, 32)))  # a gradient to keep: PyTorch's own
    assert len(ft.matmul_calls) == 3 and len(rec.launches) == 2
    cpu = ft.empty(8, 64, dtype=BF16)
    quietly(lambda: ft.matmul(cpu, ft.empty(64, 32, dtype=BF16)))
    assert len(ft.matmul_calls) == 4 and len(rec.launches) == 2


def test_linear_is_x_times_the_weights_transpose(switch, table):
    gt = switch
    gt.enable(table)
    rec = table._gemm_c
    w = x(64, 32)  # nn.Linear(32, 64)'s weight: N x K
    y = quietly(lambda: ft.nn.functional.linear(x(2, 4, 32), w))  # 8 rows of 32: held 8x64x32 nt
    assert y.shape == (2, 4, 64)
    assert rec.launches == [(8, 64, 32, 1, 32, 32, 64)] and ft.linear_calls == []
    quietly(lambda: ft.nn.functional.linear(x(8, 32), w))  # 2-D: the same problem
    assert len(rec.launches) == 2
    bias = ft.empty(64, dtype=BF16, device=DEV)
    quietly(lambda: ft.nn.functional.linear(x(8, 32), w, bias))  # a bias: PyTorch's own (no epilogue)
    quietly(lambda: ft.nn.functional.linear(x(8, 40)[:, :32], w))  # not contiguous: PyTorch's own
    quietly(lambda: ft.nn.functional.linear(x(8, 32), x(48, 32)))  # not held
    assert len(rec.launches) == 2 and len(ft.linear_calls) == 3
    assert ft.linear_calls[0][2] is bias


def test_a_prepared_weight_is_asked_as_constant_and_served_by_entries_tuned_so(switch, tmp_path, cache_dir):
    """An entry tuned with B constant (gemmtune tune --constant b) serves only a call that declares
    B constant: gemmtune.torch.prepare_weight(w) does, for every product with w (F.linear's
    w.t() too), through gemmtune_gemm_constant; forget_weight(w) ends it."""
    gt = switch
    with open(LLM_TABLE_JSON) as f:
        committed = json.load(f)
    template = next(e for e in committed["entries"] if e["family"] == "cublaslt")
    path = tmp_path / "constant.json"
    with open(path, "w") as f:
        json.dump(dict(committed, gemmtune_table=5,
                       entries=[dict(template, m=8, n=48, k=32, layout="nt", constant="b")]), f)
    ft.reset()
    t = gemmtune.Table.load(str(path), dry_run=True, cache_dir=cache_dir)
    try:
        assert t.lookup(8, 48, 32, dtype="bf16", layout="nt").is_default  # B not declared constant
        assert t.lookup(8, 48, 32, dtype="bf16", layout="nt", constant="b").match == "exact"
        with pytest.raises(gemmtune.InvalidArgumentError, match="operands are a and b"):
            t.lookup(8, 48, 32, dtype="bf16", layout="nt", constant="c")
        t.dry_run, t.device = False, 0
        plain, constant = Recorder(), []
        t._gemm_c = plain
        t._gemm_constant_c = lambda handle, g, bits, stream: constant.append((g.m, g.n, g.k, bits)) or 0
        gt.enable(t)
        w = x(48, 32)  # nn.Linear(32, 48)'s weight
        quietly(lambda: ft.nn.functional.linear(x(8, 32), w))  # not declared: PyTorch's own
        assert constant == [] and plain.launches == [] and len(ft.linear_calls) == 1
        assert gt.prepare_weight(w) is w
        quietly(lambda: ft.nn.functional.linear(x(8, 32), w))  # declared: the constant entry serves
        assert constant == [(8, 48, 32, 2)] and len(ft.linear_calls) == 1
        gt.forget_weight(w)
        quietly(lambda: ft.nn.functional.linear(x(8, 32), w))
        assert len(constant) == 1 and len(ft.linear_calls) == 2
        with pytest.raises(TypeError, match="2-D"):
            gt.prepare_weight(x(2, 48, 32))
    finally:
        gt.disable()
        t.close()
        ft.reset()


def test_the_context_manager_restores_what_was_before(switch, table, tmp_path, cache_dir):
    gt = switch
    with gt.enabled(table) as t:
        assert t is table and ft.matmul is gt._routed_matmul
    assert ft.matmul is ft_originals["matmul"] and not gt.is_enabled()
    with pytest.raises(RuntimeError, match="inside"):
        with gt.enabled(table):
            raise RuntimeError("inside")
    assert ft.matmul is ft_originals["matmul"]
    other = gemmtune.Table.load(held_table(tmp_path / "other.json"), dry_run=True, cache_dir=cache_dir)
    gt.enable(table)
    with gt.enabled(other):  # nested: the outer table comes back
        assert gt._switch["table"] is other
    assert gt._switch["table"] is table and ft.matmul is gt._routed_matmul
    other.close()


def test_record_mode_writes_the_problems_without_an_exact_entry_as_a_job(switch, table, tmp_path, cli):
    gt = switch
    job = tmp_path / "untuned.toml"
    gt.enable(table, record=job)
    quietly(lambda: ft.matmul(x(8, 64), x(64, 32)))  # held: not recorded
    quietly(lambda: ft.matmul(x(8, 48), x(48, 32)))  # not held: recorded
    quietly(lambda: ft.matmul(x(8, 48), x(48, 32)))  # once
    quietly(lambda: ft.nn.functional.linear(x(3, 32), x(40, 32)))  # 3x40x32 nt
    gt.disable()
    quietly(lambda: ft.matmul(x(5, 48), x(48, 32)))  # PyTorch's own again: nothing asked, nothing recorded
    text = job.read_text()
    assert text.count("[[problems]]") == 2, text
    assert "[[problems]]  # 8x32x48 bf16>bf16 nn a16 lda=48 ldb=32 ldc=32" in text
    assert "[[problems]]  # 3x40x32 bf16>bf16 nt a16 lda=32 ldb=32 ldc=40" in text
    assert "8x32x64" not in text
    # The job reads as it is: tune validates it, then says it needs a GPU (exit 3, not 2).
    r = subprocess.run([cli, "tune", "--config", str(job)], capture_output=True, text=True,
                       env=dict(os.environ, CUDA_VISIBLE_DEVICES=""))
    assert r.returncode == 3, r.stdout + r.stderr


def test_table_load_records_untuned_problems_and_set_it_later(tmp_path, cache_dir):
    job = tmp_path / "u.toml"
    with gemmtune.Table.load(held_table(tmp_path / "h.json"), dry_run=True, cache_dir=cache_dir,
                             record_untuned=str(job)) as t:
        t.lookup(8, 32, 64, dtype="bf16", layout="nn")  # exact: not recorded
        assert not job.exists()
        t.lookup(100, 200, 300, dtype="bf16", lda=304)
        t.record_untuned(None)
        t.lookup(101, 200, 300, dtype="bf16")
    text = job.read_text()
    assert "100x200x300 bf16>bf16 nn a16 lda=304 ldb=200 ldc=200" in text and "101x" not in text
    assert "lda = 304" in text and "align = 16" in text


# ---- a transformer block, with real PyTorch where it is installed ----------------------------------

def _block(torch, hidden: int, heads: int, ffn: int, device: str, dtype):
    """A pre-norm decoder block, randomly initialised: attention with fused QKV, a gated MLP with
    fused gate and up projections, as LLaMA-7B lays them out at hidden 4096. Its projections are
    torch.matmul of the tokens (rows) by weights stored K x N (gemmtune's nn); the attention's
    batched products and softmax are PyTorch's own."""
    g = torch.Generator(device="cpu").manual_seed(54)
    w = lambda k, n: (torch.randn(k, n, generator=g) / k ** 0.5).to(device=device, dtype=dtype)  # noqa: E731
    wqkv, wo, wgu, wd = w(hidden, 3 * hidden), w(hidden, hidden), w(hidden, 2 * ffn), w(ffn, hidden)
    norm = lambda t: t * torch.rsqrt(t.float().pow(2).mean(-1, keepdim=True) + 1e-6).to(t.dtype)  # noqa: E731

    def forward(xs):
        t = xs.shape[0]
        q, k, v = torch.matmul(norm(xs), wqkv).split(hidden, dim=-1)
        split = lambda z: z.view(t, heads, hidden // heads).transpose(0, 1)  # noqa: E731
        q, k, v = split(q), split(k), split(v)
        s = torch.matmul(q, k.transpose(1, 2)) / (hidden // heads) ** 0.5
        mask = torch.full((t, t), float("-inf"), device=device).triu(1)
        a = torch.matmul(torch.softmax(s.float() + mask, dim=-1).to(dtype), v)
        h = xs + torch.matmul(a.transpose(0, 1).reshape(t, hidden), wo)
        gate, up = torch.matmul(norm(h), wgu).split(ffn, dim=-1)
        return h + torch.matmul(torch.nn.functional.silu(gate) * up, wd)

    return forward


@pytest.mark.parametrize("where", ["cpu", "gpu"])
def test_a_transformer_block_gives_the_same_outputs_with_and_without_the_switch(where, llm_table):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed for this interpreter")
    import gemmtune.torch as gtorch
    if where == "gpu":
        if not torch.cuda.is_available() or llm_table.dry_run:
            pytest.skip("needs a CUDA GPU that PyTorch and gemmtune both see: "
                        + (llm_table.no_gpu_reason or "PyTorch sees none"))
        device, dtype = f"cuda:{llm_table.device}", torch.bfloat16
        hidden, heads, ffn, tokens = 4096, 32, 11008, 64  # the committed table's 64-row entries
    else:
        device, dtype = "cpu", torch.float32
        hidden, heads, ffn, tokens = 64, 4, 172, 8
    block = _block(torch, hidden, heads, ffn, device, dtype)
    xs = torch.randn(tokens, hidden, generator=torch.Generator().manual_seed(1)).to(device=device, dtype=dtype)
    with torch.no_grad():
        ref = block(xs)
        launches = []
        real = llm_table._gemm_c
        llm_table._gemm_c = lambda *args: launches.append(args) or real(*args)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error", gtorch.FallbackWarning)
                with gtorch.enabled(llm_table):
                    out = block(xs)
        finally:
            llm_table._gemm_c = real
        if device != "cpu":
            torch.cuda.synchronize()
    err = ((out.double() - ref.double()).norm() / ref.double().norm()).item()
    assert err < (2e-2 if where == "gpu" else 1e-6), err
    if where == "gpu":  # the four projections are entries of the committed table: they ran through it
        assert len(launches) == 4, len(launches)
    else:
        assert launches == []


# ---- a transformer block on PyTorch's stand-in, with data --------------------------------------

class Memory:
    """Bytes under the stand-in's made-up pointers (they count up from where the fake is now), so
    that its tensors hold float32 data: PyTorch's own functions compute with numpy, and so does the
    table's gemmtune_gemm, from nothing but the pointers, leading dimensions and layout it is given.
    A wrong pointer, stride or layout on the way through the switch gives a different block output."""

    def __init__(self, np, size=1 << 24):
        self.np, self.base, self.bytes = np, ft._next_ptr[0], np.zeros(size, np.uint8)

    def view(self, ptr, shape, strides):
        off = ptr - self.base
        assert 0 <= off and off % 4 == 0 and off + 4 * (1 + sum((s - 1) * st for s, st in zip(shape, strides))) \
            <= len(self.bytes), "a pointer outside the stand-in's memory"
        floats = self.bytes[off:off + (len(self.bytes) - off) // 4 * 4].view(self.np.float32)
        return self.np.lib.stride_tricks.as_strided(floats, tuple(shape), tuple(4 * s for s in strides))

    def of(self, t):
        assert t.dtype is ft.float32
        return self.view(t.data_ptr(), t.shape, t.stride())

    def tensor(self, array):
        t = ft.empty(*array.shape, dtype=ft.float32, device=DEV)
        self.of(t)[...] = array
        return t

    def gemm(self, handle, g, stream):
        """gemmtune_gemm: C = A·B read through gemmtune's layout (first letter A, second B)."""
        a_t, b_t = g.layout in (2, 3), g.layout in (1, 3)
        a = self.view(g.a, (g.m, g.k), (1, g.lda) if a_t else (g.lda, 1))
        b = self.view(g.b, (g.k, g.n), (1, g.ldb) if b_t else (g.ldb, 1))
        self.view(g.c, (g.m, g.n), (g.ldc, 1))[...] = a @ b
        self.launches.append((g.m, g.n, g.k, "nn nt tn tt".split()[g.layout]))
        return 0


def test_a_transformer_block_on_the_stand_in_gives_the_same_outputs_with_and_without_the_switch(tmp_path, cache_dir):
    """A pre-norm decoder block (fused QKV and gate-up projections as nn.Linear weights, attention
    as batched matmuls), randomly initialised: with the switch its four projections run through
    the table's gemmtune_gemm and the attention's batched products through PyTorch's own; the
    outputs agree with the block run by PyTorch alone."""
    np = pytest.importorskip("numpy", reason="numpy gives the stand-in's tensors their data")
    ft.reset()
    mem = Memory(np)
    mem.launches = []

    def own_matmul(a, b, *, out=None):  # PyTorch's own: numpy, batched or not
        r = mem.of(a) @ mem.of(b)
        c = out if out is not None else ft.empty(*r.shape, dtype=a.dtype, device=a.device)
        mem.of(c)[...] = r
        return c

    def own_linear(x, w, bias=None):
        return mem.tensor(mem.of(x) @ mem.of(w).T + (0 if bias is None else mem.of(bias)))

    saved = (ft.matmul, ft.mm, ft.nn.functional.linear)
    ft.matmul, ft.mm, ft.nn.functional.linear = own_matmul, own_matmul, own_linear
    try:
        gt = ft.load_gemmtune_torch("gemmtune._torch_block")  # its PyTorch functions: these
        tokens, hidden, heads, ffn = 8, 32, 2, 64
        held = [(tokens, 3 * hidden, hidden, "nt"), (tokens, hidden, hidden, "nn"), (tokens, 2 * ffn, hidden, "nt"),
                (tokens, hidden, ffn, "nn")]
        with open(LLM_TABLE_JSON) as f:
            committed = json.load(f)
        template = next(e for e in committed["entries"] if e["family"] == "cublaslt")
        entries = [dict(template, m=m, n=n, k=k, layout=lay, dtype="f32", b_dtype="f32", out_dtype="f32")
                   for m, n, k, lay in held]
        (tmp_path / "f32.json").write_text(json.dumps(dict(committed, entries=entries)))
        rng = np.random.default_rng(54)
        w = lambda *s: mem.tensor((rng.standard_normal(s) / s[-1] ** 0.5).astype(np.float32))  # noqa: E731
        wqkv, wo, wgu, wd = w(3 * hidden, hidden), w(hidden, hidden), w(2 * ffn, hidden), w(ffn, hidden)
        xs = mem.tensor(rng.standard_normal((tokens, hidden)).astype(np.float32))
        norm = lambda t: t / np.sqrt((t * t).mean(-1, keepdims=True) + 1e-6)  # noqa: E731

        def block():
            F = ft.nn.functional
            qkv = mem.of(F.linear(mem.tensor(norm(mem.of(xs))), wqkv))
            q, k, v = (mem.tensor(z.reshape(tokens, heads, -1).transpose(1, 0, 2)) for z in np.split(qkv, 3, -1))
            s = mem.of(ft.matmul(q, mem.tensor(mem.of(k).transpose(0, 2, 1)))) / (hidden // heads) ** 0.5
            s = np.exp(s + np.triu(np.full((tokens, tokens), -np.inf), 1))
            a = mem.of(ft.matmul(mem.tensor(s / s.sum(-1, keepdims=True)), v)).transpose(1, 0, 2)
            h = mem.of(xs) + mem.of(ft.matmul(mem.tensor(a.reshape(tokens, hidden)), wo))
            gate, up = np.split(mem.of(F.linear(mem.tensor(norm(h)), wgu)), 2, -1)
            return h + mem.of(ft.mm(mem.tensor(gate / (1 + np.exp(-gate)) * up), wd))

        ref = block().copy()
        assert mem.launches == []
        with gemmtune.Table.load(str(tmp_path / "f32.json"), dry_run=True, cache_dir=cache_dir) as table:
            table.dry_run, table.device = False, 0
            table._gemm_c = mem.gemm
            with warnings.catch_warnings():
                warnings.simplefilter("error")  # nothing falls back with a word
                with gt.enabled(table):
                    out = block().copy()
        assert mem.launches == [(tokens, 3 * hidden, hidden, "nt"), (tokens, hidden, hidden, "nn"),
                                (tokens, 2 * ffn, hidden, "nt"), (tokens, hidden, ffn, "nn")]
        assert np.abs(out - ref).max() <= 1e-5 * np.abs(ref).max()
        assert not np.array_equal(out, np.zeros_like(out))
    finally:
        ft.matmul, ft.mm, ft.nn.functional.linear = saved
        ft.reset()
