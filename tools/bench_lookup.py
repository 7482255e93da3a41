#!/usr/bin/env python3
"""bench_lookup: how good is the nearest-shape answer of a lookup table? Needs a GPU.

Leave-one-out over an exported table (JSON, `gemmtune export --format json`): for each
held-out entry, the table without it is asked for that problem (`gemmtune lookup`), which
answers from the nearest tuned shape (that entry's config, or, where its winner was its
family's default such as cuBLASLt's heuristic pick, the family's default for this shape) or
with the default. On the held-out shape, one after the other in the same session, `gemmtune
run` then times:
  - tuned:  the held-out shape's own winner (what tuning that shape gave);
  - answer: the lookup's answer;
  - pick:   cuBLASLt's heuristic pick (what a program without the table would run);
  - entry:  where the answer was transferred, the nearest entry's own config (what the rule
            before the transfer ran, unless that config cannot run the shape: "cannot").
tuned/answer 1.00: the answer is as good as tuning the shape; pick/answer > 1: the table
helps against having none.

Usage: tools/bench_lookup.py --table T.json [--gemmtune build/gemmtune] [--limit 8] [--settle 1]
Exit status: 0, or 1 when a held-out shape failed (lookup or timing), 2 for a table of fewer than
two entries.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile


class CannotImplement(RuntimeError):
    """The config cannot run the problem (gemmtune run's status cannot_implement)."""


def gt_json(gt, args):
    out = subprocess.run([gt, "--json"] + args, capture_output=True, text=True)
    if out.returncode != 0:
        try:
            j = json.loads(out.stdout)
        except ValueError:
            j = {}
        why = f"{j.get('status')}: {j.get('message')}" if j.get("status") else out.stderr.strip()[-300:]
        err = CannotImplement if j.get("status") == "cannot_implement" else RuntimeError
        raise err(f"gemmtune {' '.join(args)}: {why}")
    return json.loads(out.stdout)


def problem_args(e):
    return ["--shape", f"{e['m']}x{e['n']}x{e['k']}", "--dtype", e["dtype"], "--out-dtype", e["out_dtype"],
            "--layout", e["layout"]]


def timed(gt, e, family, config, settle):
    args = ["run", "--family", family, "--seed", "7", "--settle", str(settle)]
    if config:
        args += ["--params", config]
    j = gt_json(gt, args + problem_args(e))
    return j["time_us"]["value"]


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gemmtune", default="build/gemmtune")
    ap.add_argument("--table", required=True)
    ap.add_argument("--limit", type=int, default=8, help="held-out entries (spread over the table)")
    ap.add_argument("--settle", type=float, default=1, help="gemmtune run --settle, seconds (default 1)")
    a = ap.parse_args()
    with open(a.table) as f:
        table = json.load(f)
    entries = table["entries"]
    if len(entries) < 2:
        print("the table needs at least two entries", file=sys.stderr)
        return 2
    step = max(1, len(entries) // a.limit)
    held = entries[::step][: a.limit]
    print(f"{'held-out problem':<24} {'tuned':<9} {'answer':<44} {'tuned us':>9} {'answer us':>9} "
          f"{'pick us':>9} {'entry us':>9} {'tuned/ans':>9} {'pick/ans':>9}")
    rows = []
    failed = 0
    for e in held:
        rest = dict(table, entries=[x for x in entries if x is not e])
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as tf:
            json.dump(rest, tf)
            path = tf.name
        name = f"{e['m']}x{e['n']}x{e['k']} {e['dtype']}"
        try:
            ans = gt_json(a.gemmtune, ["lookup", "--table", path] + problem_args(e))
            t_tuned = timed(a.gemmtune, e, e["family"], e["config"], a.settle)
            t_ans = timed(a.gemmtune, e, ans["family"], ans["config"], a.settle)
            try:
                t_pick = timed(a.gemmtune, e, "cublaslt", "", a.settle)  # no --params: rank 0, the pick
            except RuntimeError as err:
                print(f"{name:<24} cuBLASLt's pick failed: {err}")
                t_pick = float("nan")
            t_entry = None
            if ans.get("transferred") and ans.get("entry"):
                try:
                    t_entry = timed(a.gemmtune, e, ans["entry"]["family"], ans["entry"]["config"], a.settle)
                except CannotImplement:
                    t_entry = float("nan")  # cannot run this shape: the old rule passed over it
        except RuntimeError as err:
            print(f"{name:<24} failed: {err}")
            failed += 1
            continue
        finally:
            os.unlink(path)
        how = ans["match"]
        if ans.get("entry"):
            how += f" of {ans['entry']['m']}x{ans['entry']['n']}x{ans['entry']['k']}"
        how += f": {ans['family']}" + (" (its pick here)" if ans.get("transferred") else "")
        rows.append((t_tuned, t_ans, t_pick, t_entry))
        entry_txt = f"{'-':>9}" if t_entry is None else f"{'cannot':>9}" if math.isnan(t_entry) else f"{t_entry:>9.1f}"
        print(f"{name:<24} {e['family']:<9} {how:<44} {t_tuned:>9.1f} {t_ans:>9.1f} {t_pick:>9.1f} {entry_txt} "
              f"{t_tuned / t_ans:>9.3f} {t_pick / t_ans:>9.3f}")
    if rows:
        ta = [t / x for t, x, _, _ in rows]
        pa = [p / x for _, x, p, _ in rows if not math.isnan(p)]
        print(f"\ngeomean tuned/answer over {len(rows)} held-out shapes: {geomean(ta):.3f} (min {min(ta):.3f})")
        if pa:
            print(f"geomean pick/answer over {len(pa)}: {geomean(pa):.3f} (min {min(pa):.3f}); answers more than 2 % "
                  f"slower than the pick: {sum(1 for r in pa if r < 0.98)}")
        moved = [(t, x, en) for t, x, _, en in rows if en is not None]
        if moved:
            ran = [(t, x, en) for t, x, en in moved if not math.isnan(en)]
            print(f"transferred answers: {len(moved)}; of these the nearest entry's own config cannot run "
                  f"{len(moved) - len(ran)} (the rule before would have passed over it)")
            if ran:
                print(f"  where it runs ({len(ran)}): tuned/entry's own config {geomean([t / en for t, _, en in ran]):.3f}, "
                      f"tuned/answer {geomean([t / x for t, x, _ in ran]):.3f}")
    if failed or not rows:
        print(f"\n{failed} of {len(held)} held-out shapes failed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
