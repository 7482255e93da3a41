#!/usr/bin/env python3
"""bench_lookup: how good is a lookup table's answer for shapes it was not tuned at? Needs a GPU.

The answer is what `gemmtune lookup` gives, which is what the runtime library runs (one function
answers for both; docs/lookup.md): the exact key, else the nearest entry of the problem's M regime
within the distance limit whose answer is backed on this GPU model by the table's evidence (its
config; where its winner was cuBLASLt's pick, the pick for the asked shape; or its config with one
refused parameter adapted), else cuBLASLt's pick. --transfers any asks for every transfer,
unbacked, as the rule was before evidence: to measure what the rules would run.

Problems asked:
  - leave-one-out (--limit N, spread over the table): each held-out entry's problem, asked of the
    table without that entry;
  - --shapes: problems asked of the whole table as it is (no tuned figure for them).
On each problem, one after the other in the same session, `gemmtune run` times:
  - tuned:  the held-out entry's own config (what tuning that shape gave; leave-one-out only;
            "cannot" where this GPU's space lacks it: a table tuned on another device, whose
            cuBLASLt tiles the library here does not offer);
  - answer: the lookup's answer (where that is cuBLASLt's pick, timed once as the pick);
  - pick:   cuBLASLt's heuristic pick (what a program without the table would run);
  - entry:  where the answer was transferred or adapted, the nearest entry's own config (what the
            rule without that step would run, unless it cannot run the shape: "cannot").
tuned/answer 1.00: the answer is as good as tuning the shape; pick/answer > 1: the table helps
against having none. The summary gives both per rule (which step of the lookup served) and, per
rule, answer/default (the answer's time over cuBLASLt's pick's, the default without the table): a
table must never make a program slower, so every answer more than 1 % slower than the default
fails the run (exit 1), listed with its rule.

Usage: tools/bench_lookup.py --table T.json [--gemmtune build/gemmtune] [--limit 8] [--settle 1]
         [--shapes 4000x4096x4096,32x4096x4096:bf16] [--device NAME] [--max-distance D]
         [--decode-max-m M] [--default-family F] [--transfers backed|any]
Exit status: 0; 1 when a problem failed (lookup or timing) or an answer ran more than 1 % slower
than the default; 2 for bad input (a table of fewer than two entries without --shapes, a bad
--shapes item).
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
        why = f"{j.get('status')}: {j.get('message')}" if j.get("status") else (out.stderr or out.stdout).strip()[-300:]
        # A config outside this shape's space (a library family's space is the library's own
        # for each shape) cannot run it either: run refuses it as bad --params.
        outside = "--params:" in out.stderr and "is not one of its values" in out.stderr
        err = CannotImplement if j.get("status") == "cannot_implement" or outside else RuntimeError
        raise err(f"gemmtune {' '.join(args)}: {why}")
    return json.loads(out.stdout)


def shape_of(p):
    return f"{p['m']}x{p['n']}x{p['k']}"


def problem_args(p):
    return ["--shape", shape_of(p), "--dtype", p["dtype"], "--out-dtype", p["out_dtype"], "--layout", p["layout"]]


def parse_shape_item(item, table):
    """MxNxK[:dtype[:layout]]; the dtype and layout default to the table's first entry's."""
    first = table["entries"][0] if table["entries"] else {"dtype": "f32", "out_dtype": "f32", "layout": "nn"}
    parts = item.split(":")
    dims = parts[0].split("x")
    if len(parts) > 3 or len(dims) != 3 or not all(d.isdigit() and int(d) > 0 for d in dims):
        raise ValueError(f"--shapes: '{item}' is not MxNxK[:dtype[:layout]] with positive sizes")
    dtype = parts[1] if len(parts) > 1 else first["dtype"]
    out = first["out_dtype"] if dtype == first["dtype"] else ("f32" if dtype == "tf32" else dtype)
    layout = parts[2] if len(parts) > 2 else first["layout"]
    return {"m": int(dims[0]), "n": int(dims[1]), "k": int(dims[2]), "dtype": dtype, "out_dtype": out, "layout": layout}


def cases(table, limit, shapes):
    """(problem, entries to ask, the held-out entry or None) per problem."""
    entries = table["entries"]
    out = []
    if limit > 0 and len(entries) >= 2:
        step = max(1, len(entries) // limit)
        for e in entries[::step][:limit]:
            out.append((e, [x for x in entries if x is not e], e))
    for p in shapes:
        out.append((p, entries, None))
    return out


def timed(gt, p, family, config, settle, transform="none"):
    args = ["run", "--family", family, "--seed", "7", "--settle", str(settle)]
    if config:
        args += ["--params", config]  # none: the family's default (cuBLASLt: its heuristic pick, rank 0)
    if transform and transform != "none":
        args += ["--transform", transform]  # the config is of the transformed problem's space (docs/transforms.md)
    return gt_json(gt, args + problem_args(p))["time_us"]["value"]


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def answer(gt, table, entries, p, lookup_flags):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as tf:
        json.dump(dict(table, entries=entries), tf)
        path = tf.name
    try:
        return gt_json(gt, ["lookup", "--table", path] + lookup_flags + problem_args(p))
    finally:
        os.unlink(path)


def timed_or_cannot(gt, p, family, config, settle, transform):
    """timed(), or NaN where the config cannot run the problem here."""
    try:
        return timed(gt, p, family, config, settle, transform)
    except CannotImplement:
        return float("nan")


def measure(gt, p, held, ans, settle):
    """The row's figures: tuned (None without a held-out entry), answer, pick, entry (None: not asked)."""
    t_pick = timed(gt, p, "cublaslt", "", settle)
    is_pick = ans["rule"] == "library default"
    t_ans = t_pick if is_pick else timed(gt, p, ans["family"], ans.get("family_config", ans["config"]), settle,
                                         ans.get("transform", "none"))
    t_tuned = None
    if held:
        t_tuned = timed_or_cannot(gt, p, held["family"], held["config"], settle, held.get("transform", "none"))
    t_entry = None
    if ans["rule"] in ("transferred", "adapted") and ans.get("entry"):
        # NaN: cannot run this shape, so the rule without the step would have passed over it.
        t_entry = timed_or_cannot(gt, p, ans["entry"]["family"], ans["entry"]["config"], settle,
                                  ans["entry"].get("transform", "none"))
    return t_tuned, t_ans, t_pick, t_entry


def measured(t):
    """A time that was taken: not None (not asked) and not NaN (the config cannot run here)."""
    return t is not None and not math.isnan(t)


def fmt_us(t):
    return f"{'-':>9}" if t is None else f"{'cannot':>9}" if math.isnan(t) else f"{t:>9.1f}"


def fmt_ratio(a, b):
    return f"{a / b:>9.3f}" if measured(a) and b is not None else f"{'-':>9}"


SLOWER = 1.01  # an answer more than 1 % slower than the default fails the run


def slower_than_default(rows):
    """The rows whose answer (not the default itself) ran more than 1 % slower than the pick."""
    return [r for r in rows if r[0] != "library default" and r[2] > SLOWER * r[3]]


def summary(rows):
    """rows: (rule, tuned, answer, pick, entry)."""
    ta = [t / a for _, t, a, _, _ in rows if measured(t)]
    pa = [p / a for _, _, a, p, _ in rows]
    cannot = sum(1 for r in rows if r[1] is not None and not measured(r[1]))
    if ta:
        print(f"\ngeomean tuned/answer over {len(ta)} held-out shapes: {geomean(ta):.3f} (min {min(ta):.3f})")
    if cannot:
        print(f"held-out entries whose own config this GPU's space lacks (not in tuned/answer): {cannot}")
    print(f"geomean pick/answer over {len(pa)}: {geomean(pa):.3f} (min {min(pa):.3f}); answers more than 2 % slower "
          f"than the pick: {sum(1 for r in pa if r < 0.98)}")
    print("by rule:")
    for rule in sorted({r[0] for r in rows}):
        mine = [r for r in rows if r[0] == rule]
        t = [x[1] / x[2] for x in mine if measured(x[1])]
        ad = [x[2] / x[3] for x in mine]
        line = (f"  {rule:<16} {len(mine):>3}: pick/answer {geomean([x[3] / x[2] for x in mine]):.3f}, "
                f"answer/default {geomean(ad):.3f} (worst {max(ad):.3f})")
        if t:
            line += f", tuned/answer {geomean(t):.3f} (min {min(t):.3f})"
        print(line)
    moved = [r for r in rows if r[4] is not None]
    if moved:
        ran = [r for r in moved if measured(r[4])]
        print(f"transferred or adapted: {len(moved)}; the nearest entry's own config cannot run "
              f"{len(moved) - len(ran)} of them (the rule without that step would have passed over it)")
        if ran:
            print(f"  where it runs ({len(ran)}): entry's own config/answer (time) "
                  f"{geomean([r[4] / r[2] for r in ran]):.3f}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gemmtune", default="build/gemmtune")
    ap.add_argument("--table", required=True)
    ap.add_argument("--limit", type=int, default=8, help="held-out entries (spread over the table; 0: none)")
    ap.add_argument("--shapes", default="", help="comma-separated MxNxK[:dtype[:layout]] asked of the whole table")
    ap.add_argument("--settle", type=float, default=1, help="gemmtune run --settle, seconds (default 1)")
    ap.add_argument("--device", help="lookup --device")
    ap.add_argument("--max-distance", help="lookup --max-distance")
    ap.add_argument("--decode-max-m", help="lookup --decode-max-m")
    ap.add_argument("--default-family", help="lookup --default-family")
    ap.add_argument("--transfers", choices=["backed", "any"],
                    help="lookup --transfers: backed (lookup's default) or any (every transfer, unbacked)")
    a = ap.parse_args()
    with open(a.table) as f:
        table = json.load(f)
    try:
        shapes = [parse_shape_item(s, table) for s in a.shapes.split(",") if s]
    except ValueError as err:
        print(err, file=sys.stderr)
        return 2
    if len(table["entries"]) < 2 and not shapes:
        print("the table needs at least two entries (or give --shapes)", file=sys.stderr)
        return 2
    lookup_flags = []
    for flag in ("device", "max_distance", "decode_max_m", "default_family", "transfers"):
        if getattr(a, flag) is not None:
            lookup_flags += ["--" + flag.replace("_", "-"), getattr(a, flag)]

    todo = cases(table, a.limit, shapes)
    print(f"{'problem':<24} {'held out':<9} {'rule':<16} {'from':<16} {'family':<9} {'tuned us':>9} {'answer us':>9} "
          f"{'pick us':>9} {'entry us':>9} {'tuned/ans':>9} {'pick/ans':>9}")
    rows, failed, slower = [], 0, []
    for p, entries, held in todo:
        name = f"{shape_of(p)} {p['dtype']}"
        try:
            ans = answer(a.gemmtune, table, entries, p, lookup_flags)
            t_tuned, t_ans, t_pick, t_entry = measure(a.gemmtune, p, held, ans, a.settle)
        except RuntimeError as err:
            print(f"{name:<24} failed: {err}")
            failed += 1
            continue
        frm = shape_of(ans["entry"]) if ans.get("entry") else "-"
        rows.append((ans["rule"], t_tuned, t_ans, t_pick, t_entry))
        if slower_than_default(rows[-1:]):
            slower.append((name, ans["rule"], t_ans / t_pick))
        print(f"{name:<24} {'yes' if held else 'no':<9} {ans['rule']:<16} {frm:<16} {ans['family']:<9} "
              f"{fmt_us(t_tuned)} {t_ans:>9.1f} {t_pick:>9.1f} {fmt_us(t_entry)} {fmt_ratio(t_tuned, t_ans)} "
              f"{t_pick / t_ans:>9.3f}")
    if rows:
        summary(rows)
    slow = slower_than_default(rows)
    for name, rule, ratio in slower:
        print(f"SLOWER THAN THE DEFAULT: {name}: its {rule} answer ran {ratio:.3f}x cuBLASLt's pick's time")
    if failed or not rows:
        print(f"\n{failed} of {len(todo)} problems failed", file=sys.stderr)
        return 1
    if slow:
        print(f"\n{len(slow)} of {len(rows)} answers ran more than 1 % slower than the default", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
