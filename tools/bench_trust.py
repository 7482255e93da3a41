#!/usr/bin/env python3
"""bench_trust: can gemmtune's timings be trusted? Prints two tables.

1. Repeatability: the same config timed by `gemmtune run` (its defaults) in N separate
   processes, on the same inputs (one seed); the spread (max - min) / median of their figures
   (the median, or the mean at the power cap; target <= 1 %).
2. Agreement: cuBLASLt's heuristic pick (rank 0) timed by gemmtune against an independent
   PyTorch measurement (torch.matmul, i.e. cuBLAS) of the same shape in the same session,
   both on iid normal inputs with a settled clock (target: within 3 %).

Usage: tools/bench_trust.py [--gemmtune build/gemmtune] [--processes 5]
Needs a GPU and PyTorch.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time


# Both sides settle as long and sample over the same window after it (gemmtune run's defaults
# at the power cap): there the time a kernel gets depends on how long and how soon after the
# settle it is sampled, and the governor moves the clock between levels about every half second
# (docs/measurement.md). The unheld reference figures sample a shorter window.
SETTLE_S = 3.0
WINDOW_S = 2.0
UNHELD_WINDOW_S = 0.5


# Every process times the same inputs: a repeated measurement, not a new draw of the data.
SEED = 1


def gemmtune_run(gt, family, shape, dtype, held=True, window=None):
    """gemmtune run's figure (us), the config, its JSON; `window`: --min-time (default: run's)."""
    cmd = [gt, "--json", "run", "--family", family, "--shape", shape, "--dtype", dtype, "--settle", str(SETTLE_S),
           "--seed", str(SEED)]
    if window is not None:
        cmd += ["--min-time", str(window)]
    env = dict(os.environ)
    if not held:
        env["GEMMTUNE_TIMING_HOLD"] = "0"
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {out.stderr.strip()}")
    j = json.loads(out.stdout)
    return j["time_us"]["value"], j["config"], j


def torch_time(shape, dtype, center, settle_s=SETTLE_S, samples=100):
    """PyTorch's time for one call (us; `center`: median or mean, as gemmtune's figure): held, as
    gemmtune times, and unheld (median)."""
    import torch
    m, n, k = (int(x) for x in shape.split("x"))
    dt = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}[dtype]
    torch.backends.cuda.matmul.allow_tf32 = False
    props = torch.cuda.get_device_properties(0)
    l2 = getattr(props, "L2_cache_size", 50 << 20)
    per_set = (m * k + k * n + m * n) * torch.tensor([], dtype=dt).element_size()
    sets = max(2, -(-2 * l2 // per_set) + 1)
    gen = torch.Generator(device="cuda").manual_seed(1234)
    As = [torch.randn(m, k, device="cuda", dtype=dt, generator=gen) for _ in range(sets)]
    Bs = [torch.randn(k, n, device="cuda", dtype=dt, generator=gen) for _ in range(sets)]
    Cs = [torch.empty(m, n, device="cuda", dtype=dt) for _ in range(sets)]
    call = lambda j: torch.matmul(As[j % sets], Bs[j % sets], out=Cs[j % sets])
    # Settle the clock under continuous calls, as gemmtune does before timing: at 4096^3 the
    # H200 reaches its power cap (sw_power_cap) within about a second and its clock drops from
    # ~1965 to ~1600 MHz; a time taken before that is ~15 % shorter.
    t0 = time.perf_counter()
    i = 0
    while time.perf_counter() - t0 < settle_s:
        call(i)
        i += 1
        if i % 8 == 0:
            torch.cuda.synchronize()
    torch.cuda.synchronize()
    batch = 20
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(2 * batch)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(2 * batch)]

    def figure(ts):
        return statistics.mean(ts) if center == "mean" else statistics.median(ts)

    def one_at_a_time(held, window):
        # One call in flight. Held: a spinning kernel (torch.cuda._sleep, 1e5 cycles, 50-70 us)
        # holds the stream while the start event, the call and the end event are queued: the GPU's
        # time without the host's. Unheld: the host's latency falls inside the interval. At
        # least `samples` calls and `window` seconds.
        ts = []
        w0 = time.perf_counter()
        j = 0
        while j < samples or time.perf_counter() - w0 < window:
            j += 1
            if held:
                torch.cuda._sleep(100_000)
            starts[0].record()
            call(j)
            ends[0].record()
            ends[0].synchronize()
            ts.append(starts[0].elapsed_time(ends[0]) * 1000.0)
        return figure(ts) if held else statistics.median(ts)

    def queued():
        # Batches of calls, each between its own events, queued back to back: the queue stays
        # ahead of the GPU, which runs them without gaps (as gemmtune times); at least `samples`
        # calls and WINDOW_S seconds, as gemmtune samples.
        # The next batch is queued before the last one is waited for, so the GPU does not idle.
        ts = []
        w0 = time.perf_counter()

        def queue(slot, j0):
            for j in range(batch):
                starts[slot * batch + j].record()
                call(j0 + j)
                ends[slot * batch + j].record()

        queue(0, 0)
        slot, j0 = 0, batch
        while True:
            more = j0 < samples or time.perf_counter() - w0 < WINDOW_S
            if more:
                queue(1 - slot, j0)
            ends[slot * batch + batch - 1].synchronize()
            ts += [starts[slot * batch + j].elapsed_time(ends[slot * batch + j]) * 1000.0 for j in range(batch)]
            if not more:
                return figure(ts)
            slot, j0 = 1 - slot, j0 + batch

    # Short calls (the settle's rate says which): Python queues more slowly than the GPU runs
    # them, so a batch would not stay ahead; each call is held instead (its gaps are too short to
    # change the board's power). Held first, straight after the settle; then unheld.
    per_call_us = settle_s / max(i, 1) * 1e6
    held = one_at_a_time(True, WINDOW_S) if per_call_us < 100 else queued()
    t_unheld = one_at_a_time(False, UNHELD_WINDOW_S)
    # The kernel cuBLAS runs for it (one profiled call), to set beside gemmtune's cuBLASLt pick.
    kernel = "?"
    try:
        from torch.profiler import profile, ProfilerActivity
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            torch.matmul(As[0], Bs[0], out=Cs[0])
            torch.cuda.synchronize()
        names = [ev.name for ev in prof.events() if ev.device_type == torch.autograd.DeviceType.CUDA]
        names = [n for n in names if not n.startswith("Memset")]
        kernel = names[0] if names else "?"  # the GEMM (a split-K reduction may follow it)
    except Exception as ex:  # the profiler is optional
        kernel = f"? ({ex})"

    return held, t_unheld, kernel


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gemmtune", default="build/gemmtune")
    ap.add_argument("--processes", type=int, default=5)
    a = ap.parse_args()
    print("Repeatability: one config, separate processes (`gemmtune run`'s figure in each: the median of its")
    print("samples, or their mean at the power cap)")
    print(f"  {'family':<14} {'shape':<16} {'dtype':<5} {'figures (us)':<50} {'spread':>7}")
    rep = [("cublaslt", "4096x4096x4096", "f16"), ("register_tile", "4096x4096x4096", "f32"),
           ("wmma", "4096x4096x4096", "f16")]
    for fam, shape, dt in rep:
        try:
            runs = [gemmtune_run(a.gemmtune, fam, shape, dt) for _ in range(a.processes)]
        except RuntimeError as e:
            print(f"  {fam:<14} {shape:<16} {dt:<5} failed: {e}")
            continue
        meds = [r[0] for r in runs]
        spread = (max(meds) - min(meds)) / statistics.median(meds) * 100
        centers = sorted({r[2]["time_us"]["center"] for r in runs})
        print(f"  {fam:<14} {shape:<16} {dt:<5} {' '.join(f'{x:.1f}' for x in meds) + ' (' + '/'.join(centers) + ')':<50} "
              f"{spread:6.2f}%")
        # The sensors during each process's timing (NVML medians): a spread that follows the
        # clock or the temperature is the board's, not the timer's.
        for key, unit in (("sm_clock_mhz", "MHz"), ("power_w", "W"), ("temp_c", "C")):
            vals = [r[2].get(key) for r in runs]
            txt = " ".join("-" if v is None else f"{v:.0f}" for v in vals)
            print(f"  {'':<14} {'':<16} {'':<5} {txt + ' ' + unit:<50}")
    print("\nAgreement with PyTorch (torch.matmul -> cuBLAS), same session, both after a settle under")
    print(f"continuous calls and timing the GPU's time over at least {WINDOW_S} s, same statistic (gemmtune held, back to")
    print("back; torch queued back to back, or held per call below 100 us); unheld (the host's launch")
    print("latency inside) for reference")
    print(f"  {'shape':<16} {'dtype':<5} {'gemmtune rank 0 (us)':>21} {'torch (us)':>11} {'ratio':>7} "
          f"{'gemmtune unheld':>16} {'torch unheld':>13}")
    for shape, dt in [("4096x4096x4096", "f16"), ("8192x8192x8192", "f16"), ("4096x4096x4096", "bf16"),
                      ("8192x8192x8192", "bf16"), ("16x4096x4096", "bf16")]:
        try:
            g, name, j = gemmtune_run(a.gemmtune, "cublaslt", shape, dt, window=WINDOW_S)
            g_unheld, _, _ = gemmtune_run(a.gemmtune, "cublaslt", shape, dt, held=False, window=UNHELD_WINDOW_S)
            t, t_unheld, kernel = torch_time(shape, dt, j["time_us"]["center"])
        except Exception as e:  # report and go on: one failure must not hide the others
            print(f"  {shape:<16} {dt:<5} failed: {e}")
            continue
        print(f"  {shape:<16} {dt:<5} {g:>21.1f} {t:>11.1f} {g / t:>7.3f} {g_unheld:>16.1f} {t_unheld:>13.1f}")
        print(f"  {'':<22} gemmtune: {name}")
        print(f"  {'':<22} torch:    {kernel}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
