#!/usr/bin/env python3
"""gemmtune.torch.matmul against torch.matmul on a GPU, side by side in one process.

For every shape of a table (its entries) and for shapes it does not hold (answered by the
nearest-shape rules): both products of the same iid normal inputs against a float64 product
(relative Frobenius error, the tuner's own tolerance), then the time of each, interleaved
in rounds of back-to-back calls over buffer sets rotated past the L2 (its size read off the
device), after a settle of the clock: back to back from Python (what a loop sees: a kernel
shorter than the host's cost per call is timed at the host's pace) and behind a held GPU (the
kernels alone). Last, the per-call cost on the host from Python after the first call: calls
queued behind a held GPU, so that only the launch path is timed.

    tools/bench_torch.py [--table docs/results/h200-llm-table.json] [--extra MxNxK,...]
                         [--rounds 7] [--calls 20] [--settle 1.0]

Per shape the table's answer (match, rule, backing: docs/lookup.md); the summary gives, per rule,
gemmtune.torch.matmul's time over torch.matmul's (the default without the table). Prints one
table; exits 1 when a result is outside the tolerance, a call falls back to torch.matmul on a
shape the table holds, or an answer runs more than 1 % slower than the default: the table's
config where the kernels alone are timed (behind a held GPU), and a shape the table answers with
the default (torch.matmul itself, behind gemmtune's per-call check) back to back. Needs the build's libgemmtune_runtime.so
(GEMMTUNE_LIBRARY, or found from GEMMTUNE_CLI) and python/ on PYTHONPATH.

    tools/bench_torch.py --host-only [--fake-torch] [--calls 20000] [--repeats 7]

The host's side alone, with no GPU needed: the library's gemmtune_gemm is swapped for a C
function that returns at once (built with $CC, default cc), so each row times the Python
per call of gemmtune.torch.matmul (after the first call of its problem), from the checks to
the ctypes call. PyTorch is the real one where it sees a GPU; else (or with --fake-torch)
python/tests/fake_torch.py, whose tensors and CUDA calls are stand-ins: there the figures
weigh gemmtune's own Python, not PyTorch's C++. With the real PyTorch on a GPU a torch.matmul
column (real kernels, queued behind a held GPU) stands beside. Prints one table; exits 1
when a call falls back to torch.matmul.
"""

from __future__ import annotations

import argparse
import ctypes
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _use_fake_torch(argv) -> bool:
    """--host-only without a GPU (or --fake-torch): PyTorch's stand-in from python/tests."""
    if "--host-only" not in argv:
        return False
    if "--fake-torch" in argv:
        return True
    try:
        import torch
    except ImportError:
        return True
    return not torch.cuda.is_available()


FAKE_TORCH = _use_fake_torch(sys.argv[1:])
if FAKE_TORCH:
    sys.path.insert(0, str(REPO / "python" / "tests"))
    import fake_torch

    sys.modules["torch"] = fake_torch  # before gemmtune.torch imports it

import torch  # noqa: E402

import gemmtune  # noqa: E402
import gemmtune.torch as gtorch  # noqa: E402

DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16}
# Ten shapes the LLM table does not hold, decode and prefill: between its M rows, other N x K.
EXTRA = ("8x4096x4096,32x12288x4096,128x4096x11008,512x22016x4096,2048x4096x4096,"
         "3000x12288x4096,1x11008x4096,64x1024x4096,768x4096x4096,8192x4096x11008")


def tolerance(k: int, dtype: str) -> float:
    """core's tolerance_for: output rounding and fp32 accumulation growing with sqrt(K)."""
    u_acc = 2.0 ** -24
    u_out = {"f16": 2.0 ** -11, "bf16": 2.0 ** -8}[dtype]
    return 2.0 * u_out + 4.0 * u_acc * math.sqrt(k) + 1e-12


def rel_error(c: torch.Tensor, ref: torch.Tensor) -> float:
    return float(torch.linalg.norm(c.double() - ref) / torch.linalg.norm(ref))


def buffer_sets(m: int, n: int, k: int, dt: torch.dtype, gen: torch.Generator):
    """Enough (A, B, C) sets that together they are at least twice the L2."""
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    per_set = (m * k + k * n + m * n) * torch.tensor([], dtype=dt).element_size()
    sets = max(2, min(64, math.ceil(2 * l2 / per_set) + 1))
    return [(torch.randn(m, k, device="cuda", dtype=dt, generator=gen),
             torch.randn(k, n, device="cuda", dtype=dt, generator=gen),
             torch.empty(m, n, device="cuda", dtype=dt)) for _ in range(sets)]


def per_call_us(call, sets, calls: int, held: bool = False) -> float:
    """Device time per call of `calls` back-to-back calls, each on the next buffer set. Held: the
    GPU first spins (~1 ms) while the host queues the calls, so the events time the kernels
    alone; unheld, a call shorter than the host's cost per call is timed at the host's pace."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    if held:
        torch.cuda._sleep(2_000_000)
    start.record()
    for j in range(calls):
        call(*sets[j % len(sets)])
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1000.0 / calls


def settle(call, sets, seconds: float) -> None:
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        per_call_us(call, sets, 20)


def measure(table, shape, dtype: str, args) -> dict:
    m, n, k = shape
    dt = DTYPES[dtype]
    gen = torch.Generator(device="cuda").manual_seed(m * 131 + n * 7 + k)
    sets = buffer_sets(m, n, k, dt, gen)
    ours = lambda a, b, c: gtorch.matmul(a, b, table=table, out=c)
    theirs = lambda a, b, c: torch.matmul(a, b, out=c)
    row = {"shape": f"{m}x{n}x{k}", "dtype": dtype}
    choice = table.lookup(m, n, k, dtype=dtype, layout="nn")
    row["match"], row["how"], row["config"] = choice.match, choice.how, choice.config
    row["rule"], row["backing"] = choice.rule, choice.backing
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", gtorch.FallbackWarning)
        a, b, c = sets[0]
        ours(a, b, c)  # the first call prepares the config
        torch.cuda.synchronize()
        row["fallback"] = "; ".join(str(w.message) for w in caught)
    ref = a.double() @ b.double()
    row["err_ours"] = rel_error(c, ref)
    theirs(a, b, c)
    row["err_torch"] = rel_error(c, ref)
    row["tol"] = tolerance(k, dtype)
    settle(ours, sets, args.settle)
    t = {(who, held): [] for who in ("ours", "torch") for held in (False, True)}
    for _ in range(args.rounds):  # interleaved: both see the same clock and the same neighbours
        for held in (False, True):
            t["ours", held].append(per_call_us(ours, sets, args.calls, held))
            t["torch", held].append(per_call_us(theirs, sets, args.calls, held))
    for (who, held), ts in t.items():
        row[f"us_{who}{'_held' if held else ''}"] = statistics.median(ts)
    return row


SLOWER = 1.01  # an answer more than 1 % slower than the default fails the run


def slower_than_default(r: dict) -> str:
    """Why a row's answer counts as slower than the default ("": it does not). The table's own
    config is judged on the kernels alone (behind a held GPU); a shape answered with the library
    default runs torch.matmul itself, so there gemmtune's per-call cost is judged, back to back."""
    if r["rule"] == "library default":
        if r["us_ours"] > SLOWER * r["us_torch"]:
            return (f"the default through gemmtune.torch.matmul ran {r['us_ours'] / r['us_torch']:.3f}x "
                    "torch.matmul back to back (its per-call check)")
        return ""
    if r["us_ours_held"] > SLOWER * r["us_torch_held"]:
        return (f"its {r['rule']} answer ({r['backing']}) ran {r['us_ours_held'] / r['us_torch_held']:.3f}x "
                "torch.matmul's kernel time")
    return ""


def host_overhead_us(table, shape=(16, 4096, 4096), calls: int = 200) -> tuple:
    """Host µs per call of gemmtune.torch.matmul and of torch.matmul after the first call, each
    queued behind a spinning kernel so that the launch path alone is timed."""
    m, n, k = shape
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    out = {}
    for name, call in (("gemmtune", lambda: gtorch.matmul(a, b, table=table, out=c)),
                       ("torch", lambda: torch.matmul(a, b, out=c))):
        call()
        torch.cuda.synchronize()
        best = math.inf
        for _ in range(5):
            torch.cuda._sleep(50_000_000)  # ~25 ms held: the calls only queue behind it
            t0 = time.perf_counter()
            for _ in range(calls):
                call()
            best = min(best, (time.perf_counter() - t0) * 1e6 / calls)
            torch.cuda.synchronize()
        out[name] = best
    return out["gemmtune"], out["torch"]


NOOP_C = "int gemmtune_gemm_noop(void *rt, const void *args, void *stream) { return 0; }\n"


def noop_gemm(workdir: str):
    """A C function of gemmtune_gemm's signature that returns 0 at once, built with $CC."""
    cc = os.environ.get("CC", "cc")
    if not shutil.which(cc):
        raise SystemExit(f"bench_torch --host-only: no C compiler ({cc}) to build the no-op gemmtune_gemm; set CC")
    src, lib = os.path.join(workdir, "noop.c"), os.path.join(workdir, "libnoop.so")
    with open(src, "w") as f:
        f.write(NOOP_C)
    subprocess.run([cc, "-O2", "-shared", "-fPIC", "-o", lib, src], check=True)
    return ctypes.CDLL(lib).gemmtune_gemm_noop


def best_us_per_call(call, calls: int, repeats: int, before=None, after=None) -> float:
    """The fastest of `repeats` loops of `calls` calls, in µs per call."""
    best = math.inf
    for _ in range(repeats):
        if before:
            before()
        t0 = time.perf_counter()
        for _ in range(calls):
            call()
        best = min(best, (time.perf_counter() - t0) * 1e6 / calls)
        if after:
            after()
    return best


def host_only(args) -> int:
    """gemmtune.torch.matmul's host cost per call with gemmtune_gemm a no-op: one row per case."""
    workdir = tempfile.mkdtemp(prefix="bench_torch_host_")
    lib = gemmtune._capi.load()
    noop = noop_gemm(workdir)
    noop.argtypes, noop.restype = lib.gemmtune_gemm.argtypes, lib.gemmtune_gemm.restype
    lib.gemmtune_gemm = noop  # before the table binds it: every gemm below returns at once
    table = gemmtune.Table.load(args.table, cache_dir=os.path.join(workdir, "cache"))
    if table.dry_run:  # no GPU here: the stand-in's cuda:0 is the table's, and the launch a no-op anyway
        if not FAKE_TORCH:
            raise SystemExit(f"bench_torch --host-only: PyTorch sees a GPU, the table does not ({table.no_gpu_reason})")
        table.dry_run, table.device = False, 0
    # Every problem here answered by a config of the table's own (its launch path is what is
    # timed), but for K = 8192: the library's default, which torch.matmul runs. The choice is
    # asked on a problem's first call only, so this changes no per-call cost.
    table._choice = lambda g, sc=None: gemmtune.Choice(*(("default", "", "default", "library default", "none")
                                                          if g.k == 8192 else ("exact", "", "exact", "exact", "exact")))
    dev = f"cuda:{table.device}"
    m, n, k = 16, 4096, 4096
    bf, f32 = torch.bfloat16, torch.float32
    a, b, c = (torch.empty(m, k, dtype=bf, device=dev), torch.empty(k, n, dtype=bf, device=dev),
               torch.empty(m, n, dtype=bf, device=dev))
    at = torch.empty(k, m, dtype=bf, device=dev).t()
    a32, b32, c32 = (torch.empty(m, k, dtype=f32, device=dev), torch.empty(k, n, dtype=f32, device=dev),
                     torch.empty(m, n, dtype=f32, device=dev))
    other = None  # a device other than the table's, made current for a row
    if FAKE_TORCH:
        other = 1 - table.device
    elif torch.cuda.device_count() > 1:
        other = (table.device + 1) % torch.cuda.device_count()
    cases = [
        ("bf16 nn, out given", lambda: gtorch.matmul(a, b, table=table, out=c),
         lambda: torch.matmul(a, b, out=c), None),
        ("bf16 nn, C allocated", lambda: gtorch.matmul(a, b, table=table),
         lambda: torch.matmul(a, b), None),
        ("bf16 tn (A a .t() view), out given", lambda: gtorch.matmul(at, b, table=table, out=c),
         lambda: torch.matmul(at, b, out=c), None),
        ("f32 (TF32 setting read), out given", lambda: gtorch.matmul(a32, b32, table=table, out=c32),
         lambda: torch.matmul(a32, b32, out=c32), None),
    ]
    if other is not None:
        cases.append((f"bf16 nn, out given, cuda:{other} current", lambda: gtorch.matmul(a, b, table=table, out=c),
                      None, other))
    a8 = torch.empty(m, 8192, dtype=bf, device=dev)
    b8 = torch.empty(8192, n, dtype=bf, device=dev)
    cases.append(("bf16 nn, the default (torch.matmul runs it)", lambda: gtorch.matmul(a8, b8, table=table, out=c),
                  lambda: torch.matmul(a8, b8, out=c), None))
    cases.append(("Table.gemm on pointers (no torch)",
                  lambda: table.gemm(m, n, k, a.data_ptr(), b.data_ptr(), c.data_ptr(), dtype="bf16"), None, None))
    cases.append(("(the timing loop: a Python no-op)", lambda: None, None, None))
    where = ("fake_torch (python/tests): PyTorch's C++ calls are stand-ins" if FAKE_TORCH else
             f"PyTorch {torch.__version__} on {torch.cuda.get_device_name(table.device)}")
    print(f"host per call after the first, gemmtune_gemm a no-op; {where}; "
          f"gemmtune {os.path.dirname(gemmtune.__file__)}")
    print(f"{m}x{n}x{k}, best of {args.repeats} loops of {args.calls} calls")
    print(f"{'case':<42} {'gemmtune us':>11} {'torch us':>9}")
    fell_back = 0
    for name, ours, theirs, current in cases:
        saved = None
        if current is not None:
            saved = torch.cuda.current_device()
            (fake_torch.set_device if FAKE_TORCH else torch.cuda.set_device)(current)
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", gtorch.FallbackWarning)
                ours()  # the first call: plans the problem
                us = best_us_per_call(ours, args.calls, args.repeats)
        finally:
            if saved is not None:
                (fake_torch.set_device if FAKE_TORCH else torch.cuda.set_device)(saved)
        fell_back += len(caught)
        them = "-"
        if theirs is not None and not FAKE_TORCH:  # real kernels, queued behind a held GPU
            theirs()
            torch.cuda.synchronize()
            calls = min(args.calls, 500)
            held = lambda: torch.cuda._sleep(50_000_000)  # noqa: E731  (~25 ms: the calls only queue)
            them = f"{best_us_per_call(theirs, calls, args.repeats, held, torch.cuda.synchronize):9.2f}"
        print(f"{name:<42} {us:11.2f} {them:>9}" + (f"  FELL BACK: {caught[0].message}" if caught else ""))
    shutil.rmtree(workdir, ignore_errors=True)
    return 1 if fell_back else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--table", default="docs/results/h200-llm-table.json")
    ap.add_argument("--extra", default=EXTRA, help="comma-separated MxNxK shapes the table does not hold")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--settle", type=float, default=1.0, help="seconds of calls before each shape's timing")
    ap.add_argument("--host-only", action="store_true",
                    help="only the host's cost per call, gemmtune_gemm a no-op (no GPU needed)")
    ap.add_argument("--fake-torch", action="store_true", help="--host-only with python/tests/fake_torch.py")
    ap.add_argument("--repeats", type=int, default=7, help="--host-only: loops per case (the fastest counts)")
    args = ap.parse_args()
    if args.host_only:
        if "--calls" not in sys.argv[1:]:
            args.calls = 20000
        return host_only(args)
    if not torch.cuda.is_available():
        print("bench_torch: no CUDA device", file=sys.stderr)
        return 2
    torch.backends.cuda.matmul.allow_tf32 = False
    table = gemmtune.Table.load(args.table)
    held = [(e.m, e.n, e.k, e.dtype) for e in table.entries() if e.layout == "nn" and e.dtype in DTYPES]
    held_keys = {(m, n, k) for m, n, k, _ in held}
    dtype = held[0][3] if held else "bf16"
    extra = [tuple(int(x) for x in s.split("x")) + (dtype,) for s in args.extra.split(",") if s]
    print(f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}, table {args.table}")
    print(f"{'shape':<18} {'dtype':<5} {'held':<5} {'match':<8} {'err ours':>9} {'err torch':>9} "
          f"{'tol':>8} {'ours us':>9} {'torch us':>9} {'torch/ours':>10} {'held: ours':>10} {'torch':>8} "
          f"{'torch/ours':>10}")
    failed, ratios, held_ratios = 0, {True: [], False: []}, {True: [], False: []}
    by_rule = {}
    for m, n, k, dt in held + extra:
        is_held = (m, n, k) in held_keys
        r = measure(table, (m, n, k), dt, args)
        ratio, held_ratio = r["us_torch"] / r["us_ours"], r["us_torch_held"] / r["us_ours_held"]
        ratios[is_held].append(ratio)
        held_ratios[is_held].append(held_ratio)
        slower = slower_than_default(r)
        by_rule.setdefault(r["rule"], []).append(held_ratio if r["rule"] != "library default" else ratio)
        ok = r["err_ours"] <= r["tol"] and not (is_held and r["fallback"]) and not slower
        failed += not ok
        print(f"{r['shape']:<18} {dt:<5} {'yes' if is_held else 'no':<5} {r['match']:<8} "
              f"{r['err_ours']:9.2e} {r['err_torch']:9.2e} {r['tol']:8.1e} {r['us_ours']:9.2f} {r['us_torch']:9.2f} "
              f"{ratio:10.3f} {r['us_ours_held']:10.2f} {r['us_torch_held']:8.2f} {held_ratio:10.3f}"
              f"{'' if ok else '  FAILED'}")
        if not is_held:
            print(f"  {r['how']} [{r['rule']}, backing {r['backing']}]: {r['config']}")
        if slower:
            print(f"  slower than the default: {slower}")
        if r["fallback"]:
            print(f"  fell back: {r['fallback']}")
    print("per rule, torch/ours (the table's configs: kernels alone; the default: back to back):")
    for rule, rs in sorted(by_rule.items()):
        g = math.exp(sum(map(math.log, rs)) / len(rs))
        print(f"  {rule:<16} {len(rs):>3}: geomean {g:.3f}, worst {min(rs):.3f}")
    for what, by in (("back to back", ratios), ("GPU held (kernels alone)", held_ratios)):
        for in_table, rs in by.items():
            if rs:
                g = math.exp(sum(map(math.log, rs)) / len(rs))
                print(f"{what}, {'in the table' if in_table else 'not in the table'} ({len(rs)}): geomean "
                      f"torch/ours {g:.3f}, min {min(rs):.3f}, max {max(rs):.3f}")
    # 16x4096x4096: the figure the target is about; 64x4096x4096: a shape whose back-to-back
    # loop read gemmtune's calls slower than torch's with equal kernels (docs/results-h200.md).
    for shape in ((16, 4096, 4096), (64, 4096, 4096)):
        ours, theirs = host_overhead_us(table, shape)
        print(f"host per call after the first ({'x'.join(map(str, shape))} bf16, queued): gemmtune.torch.matmul "
              f"{ours:.2f} us, torch.matmul {theirs:.2f} us, overhead {ours - theirs:.2f} us")
    print(f"{failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
