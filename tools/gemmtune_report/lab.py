"""The lab's experiments (configs/lab/*.toml) and other jobs: each job's problems found in the
store, one section per experiment (the ladder, register patch, tiles, precision, ...)."""
from collections import OrderedDict, defaultdict

import matplotlib
import matplotlib.pyplot as plt
from matplotlib.lines import Line2D
from matplotlib.ticker import NullFormatter

from .common import (
    DTYPE_BYTES, DTYPE_ROOF, PICK_COLOR, ROOF_STYLES, base_dtype, code_cell, color_of, config_cell, esc,
    fig_html, finite, fmt_num, fmt_ratio, fmt_sci, fmt_us, geomean, log_ticks, num_cell, readable,
    size_label, table_html)
from .model import kernel_label, pct_roof, short_description
from .sections import draw_roofs

# ---------------------------------------------------------------------------------------
# The lab's experiments (configs/lab/*.toml)

def parse_assignments(text):
    out = {}
    for part in (text or "").split(","):
        if "=" in part:
            k, v = part.split("=", 1)
            out[k.strip()] = v.strip()
    return out


class Lab:
    """The rows of one job's problems on one device, found the way the job names them."""

    def __init__(self, model, dev, job):
        self.model, self.dev, self.job = model, dev, job

    def problems(self):
        return self.job.get("problems", [])

    def fixed(self, jp, family):
        """The measured rows of the configs the job fixes for `family` at problem jp, in job order."""
        out = []
        for c in jp.get("configs", {}).get(family, []):
            m = None
            if c.get("pick"):
                m = self.model.pick.get((self.dev, jp["key"]))
            else:
                rows = self.model.rows(self.dev, jp["key"], family)
                if c.get("name"):
                    m = next((r for r in rows if r["config"] == c["name"]), None)
                if m is None:
                    want = parse_assignments(c.get("text"))
                    if want:
                        m = next((r for r in rows if all(r["_params"].get(k) == v for k, v in want.items())), None)
            if m is not None:
                out.append(m)
        return out

    def tuned(self, key, family):
        return self.model.family_result(self.dev, key, family)

    def tuned_forms(self, key, family):
        """(transform, row): the family's best at the problem in each form it ran in, plain first."""
        forms = sorted({t for (d, k, f, t) in self.model.form_best if d == self.dev and k == key and f == family},
                       key=lambda t: (t != "none", t))
        return [(t, self.model.form_best[(self.dev, key, family, t)]) for t in forms]

    def transformed_picks(self, key):
        """(transform, row): cuBLASLt's pick for each transformed problem measured (compare's padded pick)."""
        return sorted((t, m) for (d, k, t), m in self.model.form_pick.items() if d == self.dev and k == key)

    def pick(self, key):
        return self.model.pick.get((self.dev, key))

    def has_data(self):
        return any((self.dev, jp["key"]) in self.model.best for jp in self.problems())

    def coverage(self):
        """(found, total, missing): the kernels the job names (fixed configs, picks, searched
        families) and which of them the store has no successful measurement of."""
        found, missing = 0, []
        for jp in self.problems():
            fixed = jp.get("configs", {})
            for fam in jp.get("families", []):
                specs = fixed.get(fam) or [None]
                for c in specs:
                    if c is None:
                        ok = self.tuned(jp["key"], fam) is not None
                        what = f"{fam} (searched)"
                    elif c.get("pick"):
                        ok = self.pick(jp["key"]) is not None
                        what = "cuBLASLt's pick"
                    else:
                        ok = any(m for m in self.fixed(dict(jp, configs={fam: [c]}), fam))
                        what = f"{fam} {c.get('text')}"
                    found += ok
                    if not ok:
                        missing.append(f"{what} at {jp['key']}")
        return found, found + len(missing), missing


def lab_ladder(lab):
    model = lab.model
    shapes = []
    for jp in lab.problems():
        s = (jp["m"], jp["n"], jp["k"])
        if s not in shapes:
            shapes.append(s)
    out, any_rows = [], False
    for s in shapes:
        rungs, seen = [], set()
        for jp in lab.problems():
            if (jp["m"], jp["n"], jp["k"]) != s:
                continue
            for fam in jp.get("families", []):
                fixed = jp.get("configs", {}).get(fam)
                if fixed:
                    for m in lab.fixed(jp, fam):
                        rungs.append(("lab", m))
                else:
                    m = lab.tuned(jp["key"], fam)
                    if m:
                        rungs.append(("tuned", m))
            # Past the lab: the tuned best of every family measured at this problem.
            for fam in ("register_tile", "wmma", "cublaslt"):
                m = lab.tuned(jp["key"], fam)
                if m and all(m["id"] != r["id"] for _, r in rungs):
                    rungs.append(("tuned best", m))
        rungs = [(kind, m) for kind, m in rungs if not (m["id"] in seen or seen.add(m["id"]))]
        if not any(kind != "tuned best" for kind, _ in rungs):
            continue  # only kernels from other jobs: not this experiment
        any_rows = True
        naive = next((m for _, m in rungs if m["family"] == "naive"), None)
        rows = []
        for kind, m in rungs:
            label = kernel_label(m, "best" if kind != "lab" or not m.get("pick") else "")
            if kind != "lab" and m["family"] != "cublaslt":
                label = label.replace(" (", ", tuned (", 1)
            rows.append([label, kind, num_cell(fmt_us(m["time_us"])), num_cell(fmt_num(m["tflops"], 2)),
                         num_cell(fmt_sci(m.get("err_max_norm"))), num_cell(fmt_sci(m.get("err_rel_fro"))),
                         num_cell(fmt_num(pct_roof(model, m))),
                         num_cell(fmt_num(naive["time_us"] / m["time_us"], 1) + "×" if naive else "–")])
        out.append(f"<h4>{s[0]}×{s[1]}×{s[2]}</h4>")
        out.append(table_html(["kernel", "kind", "time µs", "TFLOP/s", "max error (norm.)", "Frobenius error",
                               "% of the roofline there", "× naive"], rows))
        if len(rungs) < 2:
            continue
        fig, ax = plt.subplots(figsize=(8.0, 0.32 * len(rungs) + 1.1))
        labels = [r[0] for r in rows]
        vals = [m["tflops"] for _, m in rungs]
        colors = [PICK_COLOR if m["family"] == "cublaslt" and m.get("pick") else color_of(m["family"]) for _, m in rungs]
        ax.barh(range(len(rungs)), vals, color=colors, height=0.65, zorder=2)
        for i, v in enumerate(vals):
            ax.annotate(f"{v:.2f}" if v < 10 else f"{v:.0f}", (v, i), xytext=(3, 0), textcoords="offset points",
                        va="center", fontsize=7)
        ax.set_yticks(range(len(rungs)))
        ax.set_yticklabels(labels, fontsize=7.5)
        ax.invert_yaxis()
        ax.set_xscale("log")
        ax.set_xlim(min(vals) / 1.6, max(vals) * 2.2)
        log_ticks(ax, "x")
        ax.set_xlabel("TFLOP/s (log)")
        ax.grid(axis="y", visible=False)
        ax.set_title(f"The ladder at {s[0]}×{s[1]}×{s[2]}")
        fig.tight_layout()
        out.append(fig_html(fig, "ladder"))
    if not any_rows:
        return None
    return ("<p>kind — lab: a kernel the lab names (or cuBLASLt's pick); tuned: searched by this job; tuned best: "
            "the family's result at that problem from any job (past the lab). A tuned family's figure is its "
            "winner's, the timing its tune decided with, as in the winners table.</p>" + "\n".join(out))


def lab_register_patch(lab):
    model, dev = lab.model, lab.dev
    lim = next((d.get("limits") for d in model.data.get("devices", []) if d["name"] == dev), None) or {}
    out = []
    for jp in lab.problems():
        ms = lab.fixed(jp, "register_tile")
        if not ms:
            continue
        rows = []
        for m in ms:
            p = m["_params"]
            try:
                bm, bn, tm, tn = (int(p[x]) for x in ("bm", "bn", "tm", "tn"))
            except (KeyError, ValueError):
                continue
            threads = bm * bn // (tm * tn)
            regs = m.get("registers") or 0
            occ = float("nan")
            if regs and lim.get("regs_per_sm") and lim.get("max_threads_per_sm"):
                blocks = min(lim["regs_per_sm"] // (regs * threads), lim["max_threads_per_sm"] // threads,
                             lim.get("max_blocks_per_sm") or 1 << 30)
                occ = 100.0 * blocks * threads / lim["max_threads_per_sm"]
            rows.append([f"{tm}×{tn}", f"{bm}×{bn}", threads, fmt_num((tm + tn) / (tm * tn), 3), regs or "–",
                         f"{m.get('spill_stores', 0)}/{m.get('spill_loads', 0)}", fmt_num(occ, 0),
                         num_cell(fmt_us(m["time_us"])), num_cell(fmt_num(m["tflops"], 2)),
                         num_cell(fmt_sci(m.get("err_rel_fro")))])
        if rows:
            out.append(f"<h4><code>{esc(jp['key'])}</code></h4>")
            out.append(table_html(["patch", "block", "threads", "shared reads per FMA", "registers (compiler)",
                                   "spill stores/loads", "occupancy % (from registers, est.)", "time µs", "TFLOP/s",
                                   "Frobenius error"], rows))
    if not out:
        return None
    return ("<p>Registers come from the compiler (ptxas), not an estimate; occupancy follows from them and the "
            "device's register file (allocation granularity ignored).</p>" + "\n".join(out))


def lab_tiles(lab):
    model, dev = lab.model, lab.dev
    fp32, bw = model.roof(dev, "fp32_fma"), model.bandwidth(dev)
    pts = []
    for jp in lab.problems():
        for fam in ("shared_tile", "register_tile"):
            for m in lab.fixed(jp, fam):
                p = m["_params"]
                try:
                    bm = int(p.get("tile_m", p.get("bm")))
                    bn = int(p.get("tile_n", p.get("bn")))
                except (TypeError, ValueError):
                    continue
                elem = DTYPE_BYTES.get(base_dtype(m["dtype"]), 4)
                ai = 2.0 * bm * bn / (elem * (bm + bn))  # FLOP per byte brought in for a bm×bn tile
                pts.append((m, bm, bn, ai))
    if not pts:
        return None
    rows = []
    for m, bm, bn, ai in pts:
        here = min(fp32, bw * ai) if fp32 and bw else float("nan")
        rows.append([kernel_label(m), f"{bm}×{bn}", fmt_num(ai, 1), num_cell(fmt_num(m["tflops"], 2)),
                     num_cell(fmt_num(here / 1e12, 2) if finite(here) else "–"),
                     num_cell(fmt_num(100 * m["tflops"] * 1e12 / here, 1) if finite(here) else "–")])
    out = [table_html(["kernel", "tile", "intensity from the tile (FLOP/B)", "TFLOP/s", "roof there (TFLOP/s)",
                       "% of that roof"], rows)]
    fig, ax = plt.subplots(figsize=(7.6, 4.2))
    xs = [p[3] for p in pts]
    xmin, xmax = min(xs + ([fp32 / bw] if fp32 and bw else [])) / 4, max(xs + ([fp32 / bw] if fp32 and bw else [])) * 4
    handles = draw_roofs(ax, model, dev, xmin, xmax, names={"fp32_fma"}) if (fp32 or bw) else []
    for m, bm, bn, ai in pts:
        ax.scatter([ai], [m["tflops"]], s=34, color=color_of(m["family"]), zorder=3)
        ax.annotate(f"{bm}×{bn}", (ai, m["tflops"]), xytext=(5, -3), textcoords="offset points", fontsize=7.5)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(xmin, xmax)
    ys = [p[0]["tflops"] for p in pts] + ([fp32 / 1e12] if fp32 else []) + ([bw * xmin / 1e12] if bw else [])
    ax.set_ylim(min(ys) / 1.6, max(ys) * 1.8)
    log_ticks(ax, "x")
    log_ticks(ax, "y")
    ax.set_xlabel("arithmetic intensity from the tile (FLOP per byte: 2·bm·bn ÷ (size·(bm + bn)))")
    ax.set_ylabel("TFLOP/s")
    fam_h = [Line2D([], [], ls="", marker="o", color=color_of(f), label=f) for f in sorted({p[0]["family"] for p in pts})]
    ax.legend(handles=handles + fam_h, fontsize=7.5, loc="lower right")
    ax.set_title("The tile is the intensity: each kernel on the measured fp32 roofline" if fp32 and bw else
                 "The tile is the intensity: each kernel at its tile's intensity (no fp32 or memory roof measured)")
    note = "" if fp32 and bw else '<p class="note">no measured fp32 or memory roof: run `gemmtune roofs`.</p>'
    out.append(note + fig_html(fig, "tiles on the roofline"))
    return "\n".join(out)


def lab_precision(lab):
    rows, base = [], None
    entries = []
    for jp in lab.problems():
        for fam in jp.get("families", []):
            if jp.get("configs", {}).get(fam):
                entries += [("cuBLASLt pick" if m.get("pick") else kernel_label(m), m) for m in lab.fixed(jp, fam)]
            else:
                m = lab.tuned(jp["key"], fam)
                if m:
                    entries.append((f"{fam}, tuned", m))
    if not entries:
        return None
    for _, m in entries:
        if m["dtype"] == "f32" and m.get("pick"):
            base = m
    for label, m in entries:
        io_ = m["dtype"] if m["dtype"] == m["out_dtype"] else f"{m['dtype']}→{m['out_dtype']}"
        rows.append([io_, label, num_cell(fmt_us(m["time_us"])), num_cell(fmt_num(m["tflops"], 1)),
                     num_cell(fmt_sci(m.get("err_max_norm"))), num_cell(fmt_sci(m.get("err_rel_fro"))),
                     DTYPE_BYTES.get(m["out_dtype"], "?"),
                     num_cell(fmt_ratio(base["time_us"] / m["time_us"]) if base else "–")])
    return table_html(["precision", "kernel", "time µs", "TFLOP/s", "max error (norm.)", "Frobenius error",
                       "bytes per output element", "speed-up vs fp32 pick"], rows)


def lab_cublas_size(lab):
    model, dev = lab.model, lab.dev
    series = defaultdict(dict)
    for jp in lab.problems():
        m = lab.pick(jp["key"])
        if m:
            series[m["dtype"]][m["n"]] = m
    if not series:
        return None
    ns = sorted({n for s in series.values() for n in s})
    dts = sorted(series)
    rows = [[n] + [num_cell(fmt_num(series[d][n]["tflops"], 1) if n in series[d] else "–") for d in dts] for n in ns]
    out = [table_html(["n"] + [f"{d} TFLOP/s (pick)" for d in dts], rows, "narrow")]
    if len(ns) < 2:
        out.append('<p class="omitted">The plot needs at least two sizes.</p>')
        return "\n".join(out)
    fig, ax = plt.subplots(figsize=(7.2, 3.8))
    for d in dts:
        pts = sorted(series[d].items())
        ax.plot([n for n, _ in pts], [m["tflops"] for _, m in pts], "-o", ms=3.5, lw=1.3, label=d,
                color=ROOF_STYLES.get(DTYPE_ROOF.get(d, ""), ("#555555",))[0])
        roof = model.dtype_roof(dev, base_dtype(d))
        if roof:
            ax.axhline(roof / 1e12, lw=0.8, ls=":", color=ROOF_STYLES.get(DTYPE_ROOF.get(d, ""), ("#555555",))[0])
    ax.set_xscale("log", base=2)
    ax.set_xticks(ns)
    ax.set_xticklabels([size_label(n) for n in ns], fontsize=7.5)
    ax.xaxis.set_minor_formatter(NullFormatter())
    vals = [m["tflops"] for s in series.values() for m in s.values()]
    if max(vals) / min(vals) > 30:  # the small sizes and fp32 would lie flat on a linear axis
        ax.set_yscale("log")
        log_ticks(ax, "y")
    else:
        ax.set_ylim(bottom=0)
    ax.set_xlabel("n (n×n·n×n)")
    ax.set_ylabel("TFLOP/s" + (" (log)" if ax.get_yscale() == "log" else ""))
    ax.set_title("cuBLASLt's pick against size" + (" (dotted: that dtype's measured roof)"
                                                    if any(model.dtype_roof(dev, base_dtype(d)) for d in dts) else ""))
    ax.legend(fontsize=8)
    out.append(fig_html(fig, "cuBLASLt against size"))
    return "\n".join(out)


def lab_alignment(lab):
    """The squares' alignment table and plot, one of each per input type the store holds them in."""
    parts = [(dt, alignment_for(lab, dt)) for dt in ("f16", "bf16")]
    parts = [(dt, html) for dt, html in parts if html]
    if len(parts) == 1:
        return parts[0][1]
    return "\n".join(f"<h4>{esc(dt)}</h4>\n{html}" for dt, html in parts) or None


def alignment_for(lab, dtype):
    by_n = defaultdict(dict)  # n -> series -> row
    for jp in lab.problems():
        if not (jp["m"] == jp["n"] == jp["k"]) or jp["dtype"] != dtype:
            continue  # the squares in this type (a job holds other shapes beside them)
        n, key = jp["n"], jp["key"]
        p = lab.pick(key)
        if p:
            by_n[n]["cuBLASLt pick"] = p
        # Transformed forms beside the plain ones: "cuBLASLt pick, pad" is its pick for the padded
        # problem, copies included; "wmma tuned, pad" the family's best through pad.
        for t, m in lab.transformed_picks(key):
            by_n[n][f"cuBLASLt pick, {t}"] = m
        for m in lab.fixed(jp, "shared_tile"):
            by_n[n]["fixed 32×32 shared tiles"] = m
        for fam in jp.get("families", []):
            if jp.get("configs", {}).get(fam):
                continue
            base = f"{fam} tuned" if fam != "cublaslt" else "cuBLASLt best"
            for t, m in lab.tuned_forms(key, fam):
                by_n[n][base if t == "none" else f"{base}, {t}"] = m
    by_n = {n: s for n, s in by_n.items() if s}
    if not by_n:
        return None
    names = ["cuBLASLt pick", "cuBLASLt best", "fixed 32×32 shared tiles"]
    names += sorted({s for v in by_n.values() for s in v} - set(names))
    names = [s for s in names if any(s in v for v in by_n.values())]
    rows = []
    for n in sorted(by_n):
        s = by_n[n]
        best = min(s.values(), key=lambda m: m["time_us"])
        pick = s.get("cuBLASLt pick")
        rows.append([n, s[next(iter(s))]["align"]] + [num_cell(fmt_num(s[x]["tflops"], 1) if x in s else "–")
                                                      for x in names]
                    + [num_cell(fmt_ratio(pick["time_us"] / best["time_us"]) if pick else "–")])
    out = [table_html(["n", "alignment (bytes)"] + [f"{x} TFLOP/s" for x in names] + ["best ÷ pick"], rows)]
    steps = []
    for a, b in ((2048, 2049), (4096, 4097)):
        for x in names:
            if a in by_n and b in by_n and x in by_n[a] and x in by_n[b]:
                ta, tb = by_n[a][x]["time_us"], by_n[b][x]["time_us"]
                fa, fb = by_n[a][x]["tflops"], by_n[b][x]["tflops"]
                steps.append(f"{a} → {b}, {x}: time {100 * (tb / ta - 1):+.1f} %, throughput {100 * (fb / fa - 1):+.1f} %")
    if steps:
        out.append("<ul>" + "".join(f"<li>{esc(s)}</li>" for s in steps) + "</ul>")
    ranges = [(r, [n for n in sorted(by_n) if r[0] <= n <= r[1]]) for r in ((4088, 4104), (2048, 2304), (8184, 8200))]
    ranges = [(r, ns) for r, ns in ranges if len(ns) >= 2]
    if ranges:
        fig, axes = plt.subplots(1, len(ranges), figsize=(5.2 * len(ranges), 3.8), squeeze=False)
        for ax, (r, ns) in zip(axes[0], ranges):
            for x in names:
                pts = [(n, by_n[n][x]["tflops"]) for n in ns if x in by_n[n]]
                if not pts:
                    continue
                series, _, form = x.partition(", ")  # "wmma tuned, pad": the wmma style, dotted
                style = dict(color=PICK_COLOR, ls="--", marker="s") if series == "cuBLASLt pick" else \
                    dict(color=color_of("cublaslt"), marker="o") if series == "cuBLASLt best" else \
                    dict(color=color_of("shared_tile"), marker="^") if series.startswith("fixed") else \
                    dict(color=color_of(series.split()[0]), marker="D")
                if form:
                    style.update(ls=":", marker="v", mfc="white")
                ax.plot([p[0] for p in pts], [p[1] for p in pts], lw=1.2, ms=3.5, label=x, **style)
            for n in ns:
                if n % 8 == 0:
                    ax.axvline(n, color="#e0d8c8", lw=0.8, zorder=0)
            ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))  # n is a whole number
            ax.set_xlabel(f"n (square, {dtype}; faint lines: multiples of 8; dotted: through a transform)")
            ax.set_ylabel("TFLOP/s")
            ax.set_ylim(bottom=0)
            ax.set_title(f"n = {r[0]}…{r[1]}")
        handles = OrderedDict()
        for ax in axes[0]:
            for h, l in zip(*ax.get_legend_handles_labels()):
                handles.setdefault(l, h)
        fig.tight_layout(rect=(0, 0.08, 1, 1))
        fig.legend(list(handles.values()), list(handles), loc="lower center", ncol=len(handles), fontsize=8)
        out.append(fig_html(fig, f"alignment, {dtype}"))
    return "\n".join(out)


def lab_cublas_kernels(lab):
    rows_by_dt = defaultdict(list)
    for jp in lab.problems():
        m = lab.pick(jp["key"])
        if m:
            rows_by_dt[m["dtype"]].append(m)
    if not rows_by_dt:
        return None
    out = []
    for d, ms in sorted(rows_by_dt.items()):
        ms.sort(key=lambda m: m["n"])
        base = next((m for m in ms if m["n"] == 4096), None)
        rows = [[m["n"], m["align"], num_cell(fmt_us(m["time_us"])), num_cell(fmt_num(m["tflops"], 1)),
                 num_cell(f"{100 * (m['time_us'] / base['time_us'] - 1):+.1f} %" if base else "–"),
                 code_cell(short_description(m) or readable(m), m["config"])] for m in ms]
        out.append(f"<h4>{esc(d)}</h4>")
        out.append(table_html(["n", "alignment", "time µs", "TFLOP/s", "vs 4096", "cuBLASLt's chosen algorithm"], rows))
    return "\n".join(out)


LAYOUT_CASE = {"nn": "A·B", "tn": "A stored transposed", "nt": "B stored transposed", "tt": "both stored transposed"}


def lab_layout(lab):
    groups = defaultdict(list)
    for jp in lab.problems():
        for fam in jp.get("families", []):
            ms = lab.fixed(jp, fam) if jp.get("configs", {}).get(fam) else [lab.tuned(jp["key"], fam)]
            for m in ms:
                if m:
                    groups[(m["dtype"], "cuBLASLt pick" if m.get("pick") else f"{fam}, tuned")].append(m)
    if not groups:
        return None
    rows = []
    for (d, kind), ms in sorted(groups.items()):
        base = next((m for m in ms if m["layout"] == "nn"), None)
        for m in sorted(ms, key=lambda m: ["nn", "tn", "nt", "tt"].index(m["layout"]) if m["layout"] in LAYOUT_CASE else 9):
            rows.append([d, kind, m["layout"], LAYOUT_CASE.get(m["layout"], ""), num_cell(fmt_us(m["time_us"])),
                         num_cell(fmt_num(m["tflops"], 1)),
                         num_cell(fmt_ratio(base["time_us"] / m["time_us"]) if base else "–")])
    return table_html(["dtype", "kernel", "layout", "case", "time µs", "TFLOP/s", "vs nn"], rows)


def lab_skinny(lab):
    model, dev = lab.model, lab.dev
    pts = []
    for jp in lab.problems():
        pick, best = lab.pick(jp["key"]), lab.tuned(jp["key"], "cublaslt")
        for fam in jp.get("families", []):
            if fam != "cublaslt":
                m = lab.tuned(jp["key"], fam)
                if m and (best is None or m["time_us"] < best["time_us"]):
                    best = m
        if pick or best:
            pts.append((jp, pick, best))
    if not pts:
        return None
    bw = model.bandwidth(dev)
    rows = []
    for jp, pick, best in sorted(pts, key=lambda t: t[0]["m"]):
        ref = pick or best
        bps = ref["bytes"] / (ref["time_us"] * 1e-6)
        rows.append([jp["m"], fmt_num(ref["intensity"], 1),
                     num_cell(fmt_us(pick["time_us"]) if pick else "–"),
                     num_cell(fmt_num(pick["tflops"], 2) if pick else "–"),
                     num_cell(fmt_num(bps / 1e9, 0)),
                     num_cell(fmt_num(100 * bps / bw, 0) if bw else "–"),
                     num_cell(fmt_num(best["tflops"], 2) if best else "–"),
                     best["family"] if best else "–",
                     num_cell(fmt_ratio(pick["time_us"] / best["time_us"]) if pick and best else "–")])
    out = [table_html(["M", "intensity (FLOP/B)", "pick time µs", "pick TFLOP/s", "GB/s (pick, minimal bytes)",
                       "% of memory roof", "best TFLOP/s", "best family", "best ÷ pick"], rows)]
    fig, ax = plt.subplots(figsize=(7.4, 4.0))
    for name, idx, style in (("cuBLASLt pick", 1, dict(color=PICK_COLOR, ls="--", marker="s")),
                             ("best found", 2, dict(color=color_of("cublaslt"), marker="o"))):
        ps = sorted(((t[0]["m"], t[idx]["tflops"]) for t in pts if t[idx]), key=lambda p: p[0])
        if ps:
            ax.plot([p[0] for p in ps], [p[1] for p in ps], lw=1.3, ms=3.5, label=name, **style)
    tensor = model.dtype_roof(dev, pts[0][0]["dtype"])
    if bw:
        ms = sorted(t[0]["m"] for t in pts)
        ai = {t[0]["m"]: (t[1] or t[2])["intensity"] for t in pts}
        ax.plot(ms, [min(bw * ai[m], tensor or float("inf")) / 1e12 for m in ms], color="#999999", lw=1, ls=":",
                label="roofline at that intensity (measured roofs)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    log_ticks(ax, "y")
    ms_all = sorted(t[0]["m"] for t in pts)
    ax.set_xticks(ms_all)
    ax.set_xticklabels([str(m) for m in ms_all], fontsize=7.5)
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel(f"M  (M×{pts[0][0]['k']} · {pts[0][0]['k']}×{pts[0][0]['n']}, {pts[0][0]['dtype']})")
    ax.set_ylabel("TFLOP/s")
    ax.set_title("Skinny M: the weight traffic bounds small M")
    ax.legend(fontsize=7.5, loc="upper left")
    out.append(fig_html(fig, "skinny M"))
    return "\n".join(out)


def lab_generic(lab):
    """Any other job: each problem's best per family beside cuBLASLt's pick, and the speed-up
    of the best over the pick across the job's shapes (what a tuned table buys)."""
    rows, speedups = [], []
    for jp in lab.problems():
        key = jp["key"]
        pick = lab.pick(key)
        best = lab.model.best.get((lab.dev, key))
        if pick and best:
            speedups.append((pick["time_us"] / best["time_us"], key))
        for fam in sorted({f for (d, k, f) in lab.model.fam_best if d == lab.dev and k == key}):
            m = lab.tuned(key, fam)
            rows.append([key, fam, config_cell(m), num_cell(fmt_us(m["time_us"])),
                         num_cell(fmt_num(m["tflops"], 1)),
                         num_cell(fmt_ratio(pick["time_us"] / m["time_us"]) if pick else "–")])
    if not rows:
        return None
    summary = ""
    if speedups:
        gm = geomean([x for x, _ in speedups])
        hi, lo = max(speedups), min(speedups)
        summary = (f"<p>Best over cuBLASLt's pick across the {len(speedups)} shapes with both: geomean "
                   f"<b>{gm:.3f}×</b>; best {hi[0]:.3f}× at <code>{esc(hi[1])}</code>, worst {lo[0]:.3f}× at "
                   f"<code>{esc(lo[1])}</code>.</p>")
    return summary + table_html(["problem", "family", "best config", "time µs", "TFLOP/s", "× pick"], rows)


LAB_SECTIONS = OrderedDict([
    ("ladder", ("The ladder", lab_ladder)),
    ("register_patch", ("Register patch against occupancy", lab_register_patch)),
    ("tiles", ("The tile is the intensity", lab_tiles)),
    ("precision", ("Precision: speed and error", lab_precision)),
    ("cublas_size", ("cuBLASLt against size", lab_cublas_size)),
    ("alignment", ("Alignment", lab_alignment)),
    ("cublas_kernels", ("Which algorithm cuBLASLt picks", lab_cublas_kernels)),
    ("layout", ("Layout", lab_layout)),
    ("skinny", ("Skinny M", lab_skinny)),
])


# Jobs outside the lab whose experiment has a lab section's plot too, above the generic table
# (configs/alignment.toml: the alignment cliff with and without transforms).
SUITE_SECTIONS = {"alignment": lab_alignment}


def lab_suite(fn):
    def body(lab):
        parts = [x for x in (fn(lab), lab_generic(lab)) if x]
        return "\n".join(parts) if parts else None
    return body


def section_jobs(model, dev):
    jobs = model.data.get("jobs", [])
    if not jobs:
        return ""
    order = list(LAB_SECTIONS)
    jobs = sorted(jobs, key=lambda j: (not j.get("lab"), order.index(j["id"]) if j.get("lab") and j["id"] in order
                                       else len(order), j["id"]))
    named = model.data.get("jobs_named")
    out = ["<h2>The lab's experiments</h2>" if all(j.get("lab") for j in jobs) else "<h2>Experiments</h2>"]
    absent = []  # (title, source, why): experiments this store has nothing of, listed once at the end
    for job in jobs:
        lab = Lab(model, dev, job)
        title, fn = LAB_SECTIONS.get(job["id"], (job.get("name") or job["id"], lab_generic)) \
            if job.get("lab") else (job.get("name") or job["id"],
                                    lab_suite(SUITE_SECTIONS[job["id"]]) if job["id"] in SUITE_SECTIONS else lab_generic)
        src = job.get("source", "")
        head = f'<h3>{esc(title)} <span class="src">{esc(src)}</span></h3>'
        if not lab.has_data():
            absent.append((title, src, "no data for its problems"))
            continue
        body = fn(lab)
        if body is None:
            absent.append((title, src, "its problems, but not the configs it measures"))
            continue
        desc = f'<p class="desc">{esc(job.get("description", ""))}</p>' if job.get("description") else ""
        found, total, missing = lab.coverage()
        cov = ""
        if missing:
            # One line, and the list folded away: what is shown matters more than what is not.
            cov = (f'<div class="meta"><p>{found} of the {total} kernels it names are in the store '
                   f'(<code>gemmtune tune --config {esc(src)}</code> measures the rest).</p>'
                   f'<details><summary>The {len(missing)} missing</summary><ul class="examples">'
                   + "".join(f"<li>{esc(x)}</li>" for x in missing) + "</ul></details></div>")
        out.append(head + desc + cov + body)
    if absent:
        items = "".join(f"<li><b>{esc(t)}</b> <span class=\"src\">{esc(src)}</span>: {esc(why)}</li>"
                        for t, src, why in absent)
        out.append(f'<h3>Not in this store</h3><p class="meta">{len(absent)} of the {len(jobs)} experiments have '
                   "nothing here to show; <code>gemmtune tune --config FILE</code> runs one, "
                   "<code>tools/run_lab.sh OUT</code> all of them (on a GPU).</p><ul class=\"examples\">"
                   + items + "</ul>")
    if not named:
        out.insert(1, "<p>Every job in configs/lab, shown where the store holds its problems (name jobs with "
                      "<code>--job</code> to choose).</p>")
    return "\n".join(out)
