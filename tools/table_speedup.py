#!/usr/bin/env python3
"""table_speedup: the speed-up of an exported table's configs over cuBLASLt's pick, per shape.

`gemmtune compare --config JOB --no-tune` times, per problem, each family's stored winner beside
cuBLASLt's heuristic pick in one run, and prints a summary over the *fastest* row of each
problem. What a program using the exported table gets is the table's own config: this tool
finds that config's row in compare's output and divides the pick's time by it.

Usage: tools/table_speedup.py TABLE.toml COMPARE.txt [COMPARE.txt ...]
  TABLE.toml   from `gemmtune export -o TABLE.toml`
  COMPARE.txt  the text output of `gemmtune compare` (not --json) for the same problems
Prints, per compare file, the geomean, worst and best, and a line per shape.
"""
import argparse
import math
import re
import sys
import tomllib

SHAPE = re.compile(r"^(\d+)x(\d+)x(\d+) (\S+)>(\S+) (\S+) a(\d+) on ")
# "  family (label)   time_us  tflops  %roof  x_pick  error  config"
def fail(msg):
    """Bad input: say what and where, exit 2 (gemmtune's convention)."""
    print(f"table_speedup: {msg}", file=sys.stderr)
    sys.exit(2)


# The config is the rest of the line: its readable form ("algo=66 tile=128x8 ..."), or the
# canonical name in the output of gemmtune before 2026-12.
ROW = re.compile(r"^  (\S+(?: \(\w+\))?)\s+([\d.]+)\s+\S+\s+\S+\s+[\d.]+\s+\S+\s+(\S.*?)\s*$")


def load_table(path):
    try:
        with open(path, "rb") as f:
            t = tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError) as e:
        fail(f"{path}: {e}")
    out = {}
    for e in t.get("entries", []):
        key = (e["m"], e["n"], e["k"], e["dtype"], e["out_dtype"], e["layout"], e["align"])
        # compare prints the readable form (the params with spaces, a transformed config's followed
        # by "  +pad"); older output the name (a transformed one's ending "+pad").
        t = e.get("transform", "none")
        suffix = "" if t == "none" else "+" + t
        readable = e.get("params", "").replace(",", " ")
        out[key] = (e["family"], e["config"] + suffix, readable + ("  " + suffix if readable and suffix else ""))
    if not out:
        fail(f"{path}: no [[entries]]: not an exported gemmtune table")
    return out


def parse_compare(path):
    """{key: {"pick": us, config: us, ...}} from compare's text output."""
    problems, cur = {}, None
    try:
        f = open(path)
    except OSError as e:
        fail(f"{path}: {e}")
    with f:
        for line in f:
            m = SHAPE.match(line)
            if m:
                g = m.groups()
                cur = (int(g[0]), int(g[1]), int(g[2]), g[3], g[4], g[5], int(g[6]))
                problems[cur] = {}
                continue
            r = ROW.match(line.rstrip("\n"))
            if cur and r:
                label, us, config = r.group(1), float(r.group(2)), r.group(3)
                problems[cur].setdefault(config, us)
                if label == "cublaslt (pick)":
                    problems[cur]["pick"] = us
    if not problems:
        fail(f"{path}: no problems found: is it the text output of `gemmtune compare`?")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("table")
    ap.add_argument("compare", nargs="+")
    a = ap.parse_args()
    table = load_table(a.table)
    for path in a.compare:
        rows = []
        for key, times in sorted(parse_compare(path).items(), key=lambda kv: (kv[0][1], kv[0][2], kv[0][0])):
            shape = "{}x{}x{} {}".format(*key[:4])
            if key not in table:
                print(f"  {shape}: not in {a.table}, left out")
                continue
            family, config, readable = table[key]
            timed = next((c for c in (readable, config) if c and c in times), None)
            if "pick" not in times or timed is None:
                print(f"  {shape}: the table's {config} or cuBLASLt's pick was not timed, left out")
                continue
            rows.append((shape, times["pick"] / times[timed], family, times[timed], times["pick"]))
        if not rows:
            fail(f"{path}: no shape of the table was timed beside cuBLASLt's pick")
        g = math.exp(sum(math.log(r[1]) for r in rows) / len(rows))
        lo, hi = min(rows, key=lambda r: r[1]), max(rows, key=lambda r: r[1])
        print(f"{path}: the table's config over cuBLASLt's pick, {len(rows)} shapes: geomean {g:.3f}, "
              f"worst {lo[1]:.3f} ({lo[0]}), best {hi[1]:.3f} ({hi[0]})")
        for shape, ratio, family, us, pick in rows:
            print(f"  {shape:<24} {ratio:6.3f}  {family:<11} {us:10.2f} us  (pick {pick:.2f} us)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
