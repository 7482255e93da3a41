#!/usr/bin/env python3
"""bench_lookup: how good is the nearest-shape answer of a lookup table? Needs a GPU.

Leave-one-out over an exported table (JSON, `gemmtune export --format json`): for each
held-out entry, the table without it is asked for that problem (`gemmtune lookup`), which
answers with the nearest tuned shape's config (or the default). Both configs -- the tuned
winner of the held-out shape and the nearest-shape answer -- are then timed on the held-out
shape by `gemmtune run`, one after the other in the same session, and the table prints the
ratio tuned / nearest (1.00: the nearest shape's config is as good as tuning that shape).

Usage: tools/bench_lookup.py --table T.json [--gemmtune build/gemmtune] [--limit 8]
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile


def gt_json(gt, args):
    out = subprocess.run([gt, "--json"] + args, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"gemmtune {' '.join(args)}: {out.stderr.strip()[-300:]}")
    return json.loads(out.stdout)


def problem_args(e):
    return ["--shape", f"{e['m']}x{e['n']}x{e['k']}", "--dtype", e["dtype"], "--out-dtype", e["out_dtype"],
            "--layout", e["layout"]]


def timed(gt, e, family, config):
    j = gt_json(gt, ["run", "--family", family, "--params", config, "--seed", "7"] + problem_args(e))
    return j["time_us"]["value"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gemmtune", default="build/gemmtune")
    ap.add_argument("--table", required=True)
    ap.add_argument("--limit", type=int, default=8, help="held-out entries (spread over the table)")
    a = ap.parse_args()
    with open(a.table) as f:
        table = json.load(f)
    entries = table["entries"]
    if len(entries) < 2:
        print("the table needs at least two entries", file=sys.stderr)
        return 2
    step = max(1, len(entries) // a.limit)
    held = entries[::step][: a.limit]
    print(f"{'held-out problem':<30} {'tuned config (family)':<16} {'nearest answer':<34} "
          f"{'tuned us':>10} {'nearest us':>10} {'tuned/nearest':>13}")
    ratios = []
    for e in held:
        rest = dict(table, entries=[x for x in entries if x is not e])
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as tf:
            json.dump(rest, tf)
            path = tf.name
        name = f"{e['m']}x{e['n']}x{e['k']} {e['dtype']} {e['layout']}"
        try:
            ans = gt_json(a.gemmtune, ["lookup", "--table", path] + problem_args(e))
            t_tuned = timed(a.gemmtune, e, e["family"], e["config"])
            t_near = timed(a.gemmtune, e, ans["family"], ans["config"])
        except RuntimeError as err:
            print(f"{name:<30} failed: {err}")
            continue
        finally:
            os.unlink(path)
        r = t_tuned / t_near
        ratios.append(r)
        near = f"{ans['match']}: {ans['family']}"
        if ans.get("entry"):
            near += f" of {ans['entry']['m']}x{ans['entry']['n']}x{ans['entry']['k']}"
        print(f"{name:<30} {e['family']:<16} {near:<34} {t_tuned:>10.1f} {t_near:>10.1f} {r:>13.3f}")
    if ratios:
        g = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        print(f"\ngeomean tuned/nearest over {len(ratios)} held-out shapes: {g:.3f} (min {min(ratios):.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
