#!/usr/bin/env python3
"""bench_scale: a job tuned on one GPU against the same job on every GPU of the host.

Runs one job (8 problems by default, WMMA and cuBLASLt, fp16) three times, each into a fresh
store and sharing one compile cache:
  0. `--devices all` to fill the compile cache (not timed: both timed runs start warm, so the
     comparison is of measuring, which is what more GPUs share out);
  1. `--devices 0`  (the single-GPU path);
  2. `--devices all` (one worker per GPU; each problem explored, re-timed and decided on the GPU
     that took it).
Prints the wall time of each, the speed-up, per problem the winning family / config and its
time from both runs (with the GPU that decided it in the second), and the second run's
cross-GPU check: the same winners timed on every GPU (one per GPU; its settles and timings are
part of the second run's time, as in any multi-GPU tune).

Usage: tools/bench_scale.py [--gemmtune build/gemmtune] [--budget 40] [--problems 8]
Needs a GPU; with one GPU both runs are the same path and the speed-up is about 1.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

SHAPES = ["2048x2048x2048", "4096x4096x4096", "1024x12288x4096", "4096x4096x11008",
          "256x22016x4096", "8192x4096x4096", "3072x3072x3072", "16x12288x4096",
          "4096x1024x4096", "2048x8192x2048", "6144x6144x2048", "512x4096x11008"]


def tune(gt, env, job, devices):
    cmd = [gt, "--json", "--quiet", "tune", "--config", job, "--devices", devices]
    t0 = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} (rc {out.returncode}): {out.stderr.strip()[-600:]}")
    return wall, json.loads(out.stdout)


def winners(j):
    w = {}
    for p in j["problems"]:
        fam = p["winner"]
        f = next((f for f in p["families"] if f["family"] == fam), None)
        if f is None:
            continue
        w[p["key"]] = (fam, f["best"], f["best_measurement"]["time_us"]["value"], p.get("gpu"))
    return w


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gemmtune", default="build/gemmtune")
    ap.add_argument("--budget", type=int, default=40)
    ap.add_argument("--problems", type=int, default=8)
    a = ap.parse_args()
    shapes = SHAPES[:max(1, min(a.problems, len(SHAPES)))]
    with tempfile.TemporaryDirectory() as tmp:
        job = os.path.join(tmp, "scale.toml")
        with open(job, "w") as f:
            f.write('name = "bench_scale"\n[tune]\nstrategy = "random"\n'
                    f'evaluations = {a.budget}\nseed = 1\nfamilies = ["wmma", "cublaslt"]\n'
                    f'[[problems]]\nshapes = {json.dumps(shapes)}\ndtypes = ["f16"]\n')
        cache = os.path.join(tmp, "cache")

        def env(db):
            return dict(os.environ, GEMMTUNE_DB=os.path.join(tmp, db), GEMMTUNE_CACHE_DIR=cache)

        try:
            warm_wall, jw = tune(a.gemmtune, env("warm.db"), job, "all")
            one_wall, j1 = tune(a.gemmtune, env("one.db"), job, "0")
            all_wall, ja = tune(a.gemmtune, env("all.db"), job, "all")
        except RuntimeError as e:
            print(f"failed: {e}")
            return 1
    gpus = ja.get("gpus", 1)
    print(f"job: {len(shapes)} problems (f16, wmma + cublaslt, random, {a.budget} evaluations per family), "
          f"device {ja.get('device')}, {gpus} GPU(s) in --devices all")
    print(f"{'run':<34} {'wall':>8} {'speed-up':>9}")
    print(f"{'cache fill (--devices all)':<34} {warm_wall:>7.1f}s {'':>9}")
    print(f"{'--devices 0':<34} {one_wall:>7.1f}s {1.0:>8.2f}x")
    print(f"{'--devices all':<34} {all_wall:>7.1f}s {one_wall / all_wall:>8.2f}x")
    for c in ja.get("consistency", []):
        per = ", ".join(f"GPU {g['gpu']} {g['time_us']['value']:.1f} us" if g["status"] == "ok" else f"GPU {g['gpu']} {g['status']}"
                        for g in c["per_gpu"])
        spread = c.get("spread")
        print(f"cross-GPU check: {c['problem']} {c['family']} (decided on GPU {c['decided_on']}): {per}"
              + (f"; {100 * spread:.1f} % apart" if spread is not None else ""))
    w1, wa = winners(j1), winners(ja)
    print(f"\n{'problem':<34} {'winner (--devices 0)':<36} {'us':>9}   {'winner (--devices all)':<36} {'us':>9} {'ratio':>6} {'GPU':>4}")
    same = 0
    for key in w1:
        f1, c1, t1, _ = w1[key]
        fa, ca, ta, ga = wa.get(key, ("-", "-", float("nan"), None))
        same += c1 == ca
        print(f"{key:<34} {c1[:36]:<36} {t1:>9.1f}   {ca[:36]:<36} {ta:>9.1f} {ta / t1:>6.3f} {str(ga):>4}")
    print(f"\nsame winning config in both runs: {same} of {len(w1)}; ratio = winner time (all) / (one)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
