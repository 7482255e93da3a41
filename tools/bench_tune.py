#!/usr/bin/env python3
"""bench_tune: the tune pipeline's speed, on a GPU. Prints a table per problem:

- cold tune (empty compile cache, empty store): wall time against the sum of the NVRTC
  compile time and the GPU measure time. Wall < compile + measure means compilation ran
  ahead of the GPU, overlapped with measuring.
- warm re-tune of the same problem (store and cache kept): wall time, and the speed-up over
  the cold tune (target >= 20x: nothing recompiled, nothing re-measured).

Usage: tools/bench_tune.py [--gemmtune build/gemmtune] [--budget 120]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time


def tune(gt, env, shape, dtype, family, budget):
    cmd = [gt, "--json", "--quiet", "tune", "--shape", shape, "--dtype", dtype, "--family", family,
           "--budget", str(budget), "--strategy", "random"]
    t0 = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {out.stderr.strip()[-400:]}")
    j = json.loads(out.stdout)
    f = j["problems"][0]["families"][0]
    return wall, f


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gemmtune", default="build/gemmtune")
    ap.add_argument("--budget", type=int, default=120)
    a = ap.parse_args()
    cases = [("4096x4096x4096", "f32", "register_tile"), ("4096x4096x4096", "f16", "wmma")]
    print(f"{'problem':<24} {'family':<14} {'cold wall':>10} {'compile':>9} {'measure':>9} {'overlap':>8} "
          f"{'warm wall':>10} {'speed-up':>9} {'reused':>7}")
    for shape, dt, fam in cases:
        with tempfile.TemporaryDirectory() as tmp:
            env = dict(os.environ, GEMMTUNE_DB=os.path.join(tmp, "r.db"), GEMMTUNE_CACHE_DIR=os.path.join(tmp, "c"))
            try:
                cold, fc = tune(a.gemmtune, env, shape, dt, fam, a.budget)
                warm, fw = tune(a.gemmtune, env, shape, dt, fam, a.budget)
            except RuntimeError as e:
                print(f"{shape + ' ' + dt:<24} {fam:<14} failed: {e}")
                continue
            serial = fc["compile_s"] + fc["measure_s"]
            print(f"{shape + ' ' + dt:<24} {fam:<14} {cold:>9.1f}s {fc['compile_s']:>8.1f}s {fc['measure_s']:>8.1f}s "
                  f"{serial / cold:>7.2f}x {warm:>9.2f}s {cold / warm:>8.1f}x {fw['reused']:>7}")
    print("\noverlap = (compile + measure) / cold wall: above 1 means compiles ran ahead of the GPU.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
