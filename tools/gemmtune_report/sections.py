"""The report's sections per device: header, roofs and the roofline, TFLOP/s against size,
the speed-up over cuBLASLt's pick, parameters of the best family, winners."""
import math
import re
from collections import OrderedDict, defaultdict

import matplotlib
import matplotlib.pyplot as plt
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, NullFormatter

from .common import (
    DTYPE_MARKERS, DTYPE_ROOF, INK, PICK_COLOR, ROOF_STYLES, Raw, base_dtype, color_of, config_cell,
    esc, fig_html, finite, fmt_num, fmt_ratio, fmt_sci, fmt_us, geomean, log_ticks, num_cell, omitted,
    size_label, table_html)
from .model import pct_roof, rank

# ---------------------------------------------------------------------------------------
# Header

def section_header(model):
    data = model.data
    meas = model.meas
    replay = sum(1 for m in meas if m.get("replay"))
    out = []
    names = ", ".join(d["name"] for d in model.devices) or "no device"
    out.append(f"<h1>gemmtune report — {esc(names)}</h1>")
    if replay:
        all_replay = replay == len(meas)
        what = ("Every measurement on this page is a REPLAY" if all_replay else
                f"{replay} of {len(meas)} measurements on this page are REPLAYS")
        out.append(f'<div class="replay">REPLAY — {esc(what)}: recorded measurements fed back to the tuner, '
                   "not timed on a GPU in this run. Use them to see the flow, not to judge a GPU.</div>")
    out.append(f'<p class="meta">store <code>{esc(data.get("store"))}</code> · {data.get("rows", 0)} rows, '
               f'{len(data.get("measurements", []))} successful · generated {esc(data.get("generated"))} by gemmtune '
               f'{esc(data.get("gemmtune_version"))}</p>')
    for n in data.get("notes", []):
        out.append(f'<p class="note">note: {esc(n)}</p>')
    rows = []
    for d in data.get("devices", []):
        if not d.get("rows"):
            continue
        libs = "; ".join(f"{f}: {', '.join(v)}" for f, v in (d.get("libraries") or {}).items())
        fv = "; ".join(f"{f} {', '.join(v)}" for f, v in (d.get("family_versions") or {}).items())
        rows.append([d["name"], ", ".join(d.get("archs", [])), d.get("sm_count") or "–",
                     ", ".join(d.get("drivers", [])), ", ".join(d.get("cuda_runtimes", [])),
                     ", ".join(d.get("nvrtc", [])), libs or "–", fv,
                     ", ".join(d.get("input_dists", [])), ", ".join(h for h in d.get("hosts", []) if h) or "–",
                     f"{d.get('first', '')[:19]} … {d.get('last', '')[:19]}",
                     f"{d['rows']} ({d.get('ok', 0)} ok, {d.get('replay_rows', 0)} replay, {d.get('quick_rows', 0)} quick)"])
    if rows:
        out.append("<h2>Provenance</h2>")
        out.append(table_html(["GPU", "arch", "SMs", "driver", "CUDA runtime", "NVRTC", "libraries", "family versions",
                               "inputs", "hosts", "measured (UTC)", "rows"], rows, "prov"))
        uu = [u for d in data.get("devices", []) for u in d.get("uuids", []) if u]
        if uu:
            out.append(f'<p class="meta">GPU UUIDs: {esc(", ".join(uu))}</p>')
    sc = data.get("status_counts", [])
    if sc:
        statuses = sorted({s["status"] for s in sc}, key=lambda s: (s != "ok", s))
        fams = sorted({s["family"] for s in sc})
        cnt = {(s["family"], s["status"]): s["count"] for s in sc}
        trs = [[f] + [num_cell(cnt.get((f, s), "")) for s in statuses] for f in fams]
        out.append("<h3>Measurements by outcome</h3>")
        out.append(table_html(["family"] + statuses, trs, "narrow"))
        ex = [(s["family"], s["status"], s["example"]) for s in sc if s.get("example")]
        if ex:
            out.append('<ul class="examples">' + "".join(
                f"<li>{esc(f)} {esc(st)}: <code>{esc(msg)}</code></li>" for f, st, msg in ex) + "</ul>")
    return "\n".join(out)


# ---------------------------------------------------------------------------------------
# Roofs and the roofline

def section_roofs(model, dev):
    roofs = model.roofs.get(dev)
    if not roofs:
        return omitted("Measured roofs", f"the store has no measured roofs for {dev} (run `gemmtune roofs`)")
    rows = []
    for name, r in sorted(roofs.items()):
        unit = r.get("unit", "")
        if unit.startswith("FLOP"):
            val = f"{r['value'] / 1e12:.1f} TFLOP/s"
        else:
            val = f"{r['value'] / 1e12:.2f} TB/s"
        rows.append([name, num_cell(val), fmt_num(r.get("sm_clock_mhz"), 0), fmt_num(r.get("power_w"), 0),
                     fmt_num(r.get("temp_c"), 0), Raw(f'<td class="long">{esc(r.get("how", ""))}</td>'), (r.get("time_utc") or "")[:16].replace("T", " ")])
    return "<h3>Measured roofs</h3>" + table_html(
        ["roof", "value", "SM MHz", "W", "°C", "how it was measured", "when (UTC)"], rows)


def draw_roofs(ax, model, dev, xmin, xmax, names=None, label=True):
    """The measured roofs on a log-log FLOP/byte vs TFLOP/s axis; returns the handles drawn."""
    bw = model.bandwidth(dev)
    roofs = model.roofs.get(dev, {})
    compute = [(n, r["value"]) for n, r in roofs.items() if n in ROOF_STYLES and (names is None or n in names)]
    top = max([v for _, v in compute], default=None)
    handles = []
    if bw:
        bw_name = "mem_read" if model.roof(dev, "mem_read") else "mem_copy"
        xs_end = (top / bw) if top else xmax
        xs = [xmin, min(xmax, xs_end)]
        h, = ax.plot(xs, [bw * x / 1e12 for x in xs], color=INK, lw=1.4,
                     label=f"memory ({'stream read' if bw_name == 'mem_read' else 'copy'}) {bw / 1e12:.2f} TB/s")
        handles.append(h)
    for n, v in sorted(compute, key=lambda t: t[1]):
        color, text = ROOF_STYLES[n]
        x0 = max(xmin, v / bw) if bw else xmin
        h, = ax.plot([x0, xmax], [v / 1e12, v / 1e12], color=color, lw=1.4, ls="-",
                     label=f"{text} {v / 1e12:.0f} TFLOP/s" if v >= 1e13 else f"{text} {v / 1e12:.1f} TFLOP/s")
        handles.append(h)
    return handles


def section_roofline(model, dev):
    pts = [m for (d, *_), m in model.configs.items() if d == dev and finite(m.get("tflops"))]
    has_roofs = bool(model.roofs.get(dev))
    if not pts and not has_roofs:
        return omitted("Roofline", "no measured roofs and no successful measurement")
    ai = [m["intensity"] for m in pts]
    bw = model.bandwidth(dev)
    ridges = [r["value"] / bw for n, r in model.roofs.get(dev, {}).items() if bw and n in ROOF_STYLES]
    if ridges:
        xs = ai + ridges
        xmin, xmax = min(xs + [1.0]) / 2.5, max(xs + [100.0]) * 2.5
    else:
        xmin, xmax = min(ai) / 4, max(ai) * 4
    fig, ax = plt.subplots(figsize=(8.6, 5.0))
    handles = draw_roofs(ax, model, dev, xmin, xmax)
    fam_handles, dt_handles = OrderedDict(), OrderedDict()
    groups = defaultdict(list)
    for m in pts:
        groups[(m["family"], m["dtype"])].append(m)
    size, alpha = (24, 0.8) if len(pts) < 300 else (12, 0.5) if len(pts) < 3000 else (6, 0.35)
    for (fam, dt), ms in sorted(groups.items()):
        pick = [m for m in ms if m.get("pick")]
        rest = [m for m in ms if not m.get("pick")]
        if rest:
            ax.scatter([m["intensity"] for m in rest], [m["tflops"] for m in rest], s=size,
                       marker=DTYPE_MARKERS.get(base_dtype(dt), "o"), color=color_of(fam), alpha=alpha, linewidths=0, zorder=3)
        if pick:
            ax.scatter([m["intensity"] for m in pick], [m["tflops"] for m in pick], s=70,
                       marker=DTYPE_MARKERS.get(base_dtype(dt), "o"), facecolors="none", edgecolors=PICK_COLOR, linewidths=1.3,
                       zorder=4)
        fam_handles.setdefault(fam, Line2D([], [], ls="", marker="o", color=color_of(fam), label=fam))
        dt_handles.setdefault(dt, Line2D([], [], ls="", marker=DTYPE_MARKERS.get(base_dtype(dt), "o"), color="#777777", label=dt))
    if any(m.get("pick") for m in pts):
        fam_handles["pick"] = Line2D([], [], ls="", marker="o", markerfacecolor="none", markeredgecolor=PICK_COLOR,
                                     label="cuBLASLt's pick")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(xmin, xmax)
    ys = [m["tflops"] for m in pts] + [r["value"] / 1e12 for n, r in model.roofs.get(dev, {}).items()
                                       if n in ROOF_STYLES]
    if ys:
        ax.set_ylim(min(ys + ([bw * xmin / 1e12] if bw else [])) / 2, max(ys) * 2.5)
    log_ticks(ax, "x")
    log_ticks(ax, "y")
    ax.set_xlabel("arithmetic intensity (FLOP per byte; 2MNK ÷ minimal bytes of A + B + C)")
    ax.set_ylabel("TFLOP/s")
    replayed = all(m.get("replay") for m in pts) and pts
    what = "every replayed config" if replayed else "every measured config"
    ax.set_title(f"Roofline of {dev}: measured roofs, {what} (best timing of each)" if has_roofs else
                 f"{dev}: {what} by arithmetic intensity (best timing of each); no roofs measured: "
                 "`gemmtune roofs`", fontsize=9 if not has_roofs else None)
    if handles:
        leg1 = ax.legend(handles=handles, loc="upper left", fontsize=8, title="measured roofs", title_fontsize=8)
        ax.add_artist(leg1)
    ax.legend(handles=list(fam_handles.values()) + list(dt_handles.values()), loc="lower right", fontsize=8,
              ncol=2)
    notes = []
    if not has_roofs:
        notes.append("no measured roofs for this device (run `gemmtune roofs`): the points stand alone")
    if not pts:
        notes.append("no successful measurement yet: the roofs alone")
    body = fig_html(fig, "roofline")
    text = ("<h2>Roofline</h2><p>Each point is one measured config at its problem's best possible intensity "
            "(every input read once, the output written once); one problem's configs stand in a column. "
            + ("The lines are this device's measured roofs, never datasheet numbers.</p>" if has_roofs else
               "No roofs are drawn: the store holds none for this device, and datasheet numbers are never used.</p>"))
    return text + "".join(f'<p class="note">{esc(n)}</p>' for n in notes) + body


# ---------------------------------------------------------------------------------------
# TFLOP/s against size (square sweeps)

def section_sizes(model, dev):
    groups = defaultdict(lambda: defaultdict(dict))  # (dtype,out,layout) -> series -> n -> m
    for (d, key, fam) in model.fam_best:
        m = model.family_result(d, key, fam)
        if d != dev or not (m["m"] == m["n"] == m["k"]):
            continue
        g = (m["dtype"], m["out_dtype"], m["layout"])
        groups[g][fam][m["n"]] = m
    for (d, key), m in model.pick.items():
        if d == dev and m["m"] == m["n"] == m["k"]:
            groups[(m["dtype"], m["out_dtype"], m["layout"])]["cuBLASLt pick"][m["n"]] = m
    # A size sweep's sizes: powers of two and multiples of 256. The one-element steps of an
    # alignment sweep (4088..4104) would stand as vertical spikes here; they have their own
    # section.
    def round_size(n):
        return n & (n - 1) == 0 or n % 256 == 0
    for g in groups:
        for ser in groups[g].values():
            for n in [n for n in ser if not round_size(n)]:
                del ser[n]
    # Every dtype (and layout) with a square problem gets its panel, a sweep or a single size.
    sweeps = {g: s for g, s in groups.items() if any(s.values())}
    if not sweeps:
        return "<h2>TFLOP/s against size</h2>" + omitted(
            "TFLOP/s against size", "the store holds no square problem (configs/squares.toml sweeps them)")
    def sizes_of(g):
        return sorted({n for ser in sweeps[g].values() for n in ser})
    keys = sorted(sweeps, key=lambda g: (list(DTYPE_ROOF).index(base_dtype(g[0])) if base_dtype(g[0]) in DTYPE_ROOF
                                         else 9, g))
    single = [g for g in keys if len(sizes_of(g)) == 1]
    ncol = min(3, len(keys))
    nrow = math.ceil(len(keys) / ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(4.6 * ncol, 3.4 * nrow), squeeze=False)
    for ax, g in zip(axes.flat, keys):
        series = sweeps[g]
        for name in sorted(series, key=lambda s: (s == "cuBLASLt pick", s)):
            pts = sorted(series[name].items())
            # The pick as a hollow square around the points: where cuBLASLt's best is its pick, both show.
            style = dict(color=PICK_COLOR, ls="--", marker="s", ms=8, markerfacecolor="none", mew=1.2, zorder=2) \
                if name == "cuBLASLt pick" else dict(color=color_of(name), marker="o", ms=4, zorder=3)
            ax.plot([n for n, _ in pts], [m["tflops"] for _, m in pts], lw=1.3, label=name, **style)
        roof = model.dtype_roof(dev, base_dtype(g[0]))
        if roof:
            ax.axhline(roof / 1e12, color="#999999", lw=0.9, ls=":")
            ax.annotate(f"measured {DTYPE_ROOF[base_dtype(g[0])]} roof", (0.99, roof / 1e12), xycoords=("axes fraction", "data"),
                        fontsize=7, color="#777777", va="bottom", ha="right")
        ax.set_xscale("log", base=2)
        ns = sorted({n for s in series.values() for n in s})
        ax.set_xticks(ns)
        ax.set_xticklabels([size_label(n) for n in ns], rotation=45 if len(ns) > 6 else 0, fontsize=7.5)
        ax.xaxis.set_minor_formatter(NullFormatter())
        top = max([m["tflops"] for ser in series.values() for m in ser.values()] + [(roof or 0) / 1e12])
        ax.set_ylim(0, top * 1.12)  # room above the roof line and a point that reaches it
        io_ = g[0] if g[0] == g[1] else f"{g[0]}→{g[1]}"
        ax.set_title(f"{io_}, layout {g[2]}" + (" (one size)" if g in single else ""))
        ax.set_xlabel("n (n×n·n×n)")
        ax.set_ylabel("TFLOP/s")
        ax.legend(fontsize=7.5, loc="lower right")
    for ax in list(axes.flat)[len(keys):]:
        ax.set_visible(False)
    fig.tight_layout()
    names = ", ".join((g[0] if g[0] == g[1] else f"{g[0]}→{g[1]}") + f" {g[2]}" for g in single)
    one = (f" {names}: one square size in the store, so a point per family, not a curve "
           "(<code>configs/squares.toml</code> sweeps the sizes).") if single else ""
    return ("<h2>TFLOP/s against size</h2><p>Square problems (sizes that are powers of two or multiples of 256), one "
            "panel per dtype and layout in the store: each family's best config per size, and cuBLASLt's own pick "
            "(heuristic rank 0)." + one + "</p>" + fig_html(fig, "TFLOP/s against size"))


# ---------------------------------------------------------------------------------------
# Speed-up over cuBLASLt's pick

COMPARED = "compare: timed interleaved with"  # how `gemmtune compare` marks its side-by-side rows


def compare_runs(model, dev):
    """key -> the rows of the latest `gemmtune compare` run that timed cuBLASLt's pick on it.

    Only compare's own interleaved rows: a compare that first tunes a family stores that tune's
    rows under the same run id, timed apart."""
    runs = defaultdict(list)
    for m in model.meas:
        if (m["device"] == dev and str(m.get("tune_id") or "").startswith("compare-") and not m.get("quick")
                and COMPARED in (m.get("description") or "")):
            runs[(m["key"], m["tune_id"])].append(m)
    latest = {}
    for (key, _), rows in runs.items():
        if not any(r.get("pick") for r in rows):
            continue
        when = (max(r["time_utc"] for r in rows), max(r["id"] for r in rows))
        if key not in latest or when > latest[key][0]:
            latest[key] = (when, rows)
    return {k: v[1] for k, v in latest.items()}


def speedup_figure(rows, side, gm, worst):
    """Bars from 1.0 (the pick) on a log axis, so that 0.98× and 1.02× point apart and read as far from
    1 as they are; each family's row as a tick drawn over the bars, the pick's own at 1.0 included."""
    h = max(2.2, 0.3 * len(rows) + 1.3)
    fig, ax = plt.subplots(figsize=(8.6, h))
    ys = list(range(len(rows)))
    vals = [r[1] for r in rows]
    ax.barh(ys, [v - 1.0 for v in vals], left=1.0, color=[color_of(r[2]["family"]) for r in rows], height=0.55,
            alpha=0.85, zorder=2)
    fams_seen = OrderedDict()
    halo = [matplotlib.patheffects.withStroke(linewidth=4, foreground="white")]
    for y, r in zip(ys, rows):
        for f, sp in sorted(r[3].items(), key=lambda kv: kv[0] == "cublaslt"):
            ax.plot([sp], [y], marker="|", ms=15, mew=2.4, color=color_of(f), zorder=4, path_effects=halo)
            fams_seen.setdefault(f, None)
        right = r[1] >= 1.0
        ax.annotate(f"{r[1]:.3f}×" + ("" if r[4] else " *"), (max(r[1], 1.0) if right else min(r[1], 1.0), y),
                    xytext=(6 if right else -6, 0), textcoords="offset points", va="center",
                    ha="left" if right else "right", fontsize=7.5, zorder=5)
    ax.axvline(1.0, color="#b5ae9f", lw=0.8, zorder=1)
    # The pick's own tick, over everything: the reference every bar starts from.
    ax.plot([1.0] * len(ys), ys, ls="", marker="|", ms=15, mew=2.4, color=PICK_COLOR, zorder=5, path_effects=halo)
    ax.set_yticks(ys)
    ax.set_yticklabels([r[0] for r in rows], fontsize=7.5)
    ax.set_ylim(len(rows) - 0.5, -0.5)  # first shape on top, no margins
    allv = vals + [sp for r in rows for sp in r[3].values()] + [1.0]
    lo, hi = min(allv), max(allv)
    # At least ±5 % around the pick, and room for the labels at either end.
    ax.set_xscale("log")
    ax.set_xlim(min(lo, 0.95) / 1.12, max(hi, 1.05) * 1.12)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}×"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    span = math.log10(max(hi, 1.05) * 1.12) - math.log10(min(lo, 0.95) / 1.12)
    ticks = [0.1, 0.2, 0.5, 1, 2, 5] if span > 0.8 else [0.5, 0.7, 0.8, 0.9, 0.95, 1, 1.05, 1.1, 1.2, 1.3, 1.5, 2]
    ax.set_xticks([t for t in ticks if min(lo, 0.95) / 1.12 <= t <= max(hi, 1.05) * 1.12])
    ax.set_xlabel("speed-up over cuBLASLt's pick (pick time ÷ time, log scale; bars start at the pick, 1×)"
                  + ("" if side == len(rows) else ";  *: best stored timings, not side by side"))
    ax.set_title(f"Speed-up over cuBLASLt's pick: geomean {gm:.3f}×, worst {worst[1]:.3f}× ({worst[0]}); "
                 f"{side} of {len(rows)} shapes side by side", fontsize=9, loc="left")
    handles = [Line2D([], [], color=color_of(f), marker="s", ls="", label=f"{f} (bar: the table's config)") for f in
               sorted({r[2]["family"] for r in rows})]
    handles += [Line2D([], [], color=color_of(f), marker="|", ms=10, mew=2.2, ls="",
                       label=f"{f} best (tick)")
                for f in fams_seen]
    handles.append(Line2D([], [], color=PICK_COLOR, marker="|", ms=10, mew=2.2, ls="", label="cuBLASLt's pick (1×)"))
    ax.legend(handles=handles, fontsize=7.5, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.grid(axis="y", visible=False)
    fig.tight_layout()
    return fig, ax


def section_speedup(model, dev):
    keys = [k for k in model.problem_keys(dev) if (dev, k) in model.pick]
    if not keys:
        return "<h2>Speed-up over cuBLASLt's pick</h2>" + omitted(
            "Speed-up over cuBLASLt's pick", "no problem has a measured cuBLASLt pick (tune or compare with the "
            "cublaslt family on a GPU; the pick is its heuristic's rank 0)")
    runs = compare_runs(model, dev)
    rows = []
    for k in keys:
        if k in runs:
            # Side by side: the latest compare run's rows. The bar is the config the table holds
            # (the tune's winner) when the run timed it, else the run's fastest.
            run = runs[k]
            pick = min((m for m in run if m.get("pick")), key=lambda m: m["time_us"])
            won = model.winners.get((dev, k), {}).get("*")
            won_family = model.by_id.get(won["row_id"], {}).get("family") if won else None
            held = [m for m in run if won and m["config"] == won["config"] and won_family in (None, m["family"])]
            best = min(held or run, key=lambda m: m["time_us"])
            fams = {}
            for m in run:
                fams[m["family"]] = max(fams.get(m["family"], 0.0), pick["time_us"] / m["time_us"])
            rows.append((k, pick["time_us"] / best["time_us"], best, fams, True))
            continue
        pick = model.pick[(dev, k)]
        best = model.best[(dev, k)]
        fams = {f: pick["time_us"] / model.family_result(d, kk, f)["time_us"]
                for (d, kk, f) in model.fam_best if d == dev and kk == k}
        rows.append((k, pick["time_us"] / best["time_us"], best, fams, False))
    side = sum(1 for r in rows if r[4])
    gm = geomean([r[1] for r in rows])
    worst = min(rows, key=lambda r: r[1])
    fig, ax = speedup_figure(rows, side, gm, worst)
    return ("<h2>Speed-up over cuBLASLt's pick</h2><p>Per shape, as cuBLASLt pick's time ÷ the config's time. "
            f"<b>{side} of {len(rows)} shapes side by side</b>: from the latest <code>gemmtune compare</code> run that "
            "timed them, on the same buffers and interleaved; the bar is the config the table holds (the winner of "
            "<code>tune</code>) where that run timed it, else the run's fastest, and the ticks each family's row in that "
            "run. " + ("" if side == len(rows) else
                       "The other shapes (marked *) use each config's best stored timing from any run (full timings "
                       "preferred over exploration ones): the bar is the fastest config of any family, which favours "
                       "configs timed more often. ") + f"Geomean over {len(rows)} shapes: <b>{gm:.3f}×</b>.</p>"
            + fig_html(fig, "speed-up over cuBLASLt's pick"))


# ---------------------------------------------------------------------------------------
# Parameters of the best family

def value_sort_key(v):
    """Numbers in order, "AxB" shapes by their area, then words."""
    head = v.split()[0] if v.split() else v
    if re.fullmatch(r"\d+(x\d+)+", head):
        return (0, math.prod(int(x) for x in head.split("x")), v)
    m = re.match(r"^-?\d+(\.\d+)?", v)
    return (0, float(m.group(0)), v) if m else (1, 0.0, v)


def parameter_figure(fam, key, ms):
    """One small panel per parameter that varies: the best time per value, and every config."""
    params = OrderedDict()
    for m in ms:
        for p, v in m["_params"].items():
            params.setdefault(p, set()).add(v)
    varying = [p for p, vs in params.items() if len(vs) >= 2]
    if not varying:
        return None
    ncol = min(4, len(varying))
    nrow = math.ceil(len(varying) / ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(2.6 * ncol + 0.4, 2.3 * nrow + 0.5), squeeze=False)
    times = [m["time_us"] for m in ms]
    logy = max(times) / min(times) > 20
    best_overall = min(times)
    for ax, p in zip(axes.flat, varying):
        vals = sorted(params[p], key=value_sort_key)
        xs = {v: i for i, v in enumerate(vals)}
        per = defaultdict(list)
        for m in ms:
            if p in m["_params"]:
                per[m["_params"][p]].append(m["time_us"])
        for v, ts in per.items():
            width = 0.3 if len(ts) > 40 else 0.12  # a fixed scatter, the same on every run
            jitter = [xs[v] + ((i * 2654435761 % 1000) / 1000 - 0.5) * 2 * width for i in range(len(ts))]
            ax.scatter(jitter, ts, s=8 if len(ms) < 500 else 4, color=color_of(fam), alpha=0.45 if len(ms) < 500 else 0.2,
                       linewidths=0, zorder=2)
        ax.plot(range(len(vals)), [min(per[v]) if per[v] else float("nan") for v in vals], color=INK, marker="o",
                ms=4, lw=1.2, zorder=3)
        ax.axhline(best_overall, color="#c4521e", lw=0.8, ls=":")
        ax.set_xticks(range(len(vals)))
        crowded = sum(len(v) for v in vals) > 18
        ax.set_xticklabels(vals, rotation=40 if crowded else 0, fontsize=7 if crowded else 7.5,
                           ha="right" if crowded else "center")
        ax.set_title(p, fontsize=9)
        if logy:
            ax.set_yscale("log")
            log_ticks(ax, "y")
        ax.tick_params(axis="y", labelsize=7.5)
        ax.grid(axis="x", visible=False)
    for ax in axes[:, 0]:
        ax.set_ylabel("time (µs)")
    for ax in list(axes.flat)[len(varying):]:
        ax.set_visible(False)
    fig.suptitle(f"{fam} at {key}: best time per parameter value (line), every config (dots), "
                 f"{len(ms)} configs", fontsize=9.5)
    fig.tight_layout()
    return fig_html(fig, f"{fam} parameters")


def section_parameters(model, dev):
    # Families whose parameters have names (from their plugin, their config names or their
    # descriptions), with the configs measured per problem.
    named = defaultdict(lambda: defaultdict(list))  # family -> key -> configs
    for (d, key, fam, _), m in model.configs.items():
        if d == dev and m.get("params_from") in ("plugin", "store", "row", "name", "description") and m["_params"]:
            named[fam][key].append(m)
    cands = {f: ks for f, ks in named.items() if any(len(v) >= 3 for v in ks.values())}
    if not cands:
        return "<h2>Parameters</h2>" + omitted(
            "Time against each parameter", "no family has three or more measured configs of one problem with "
            "named parameters")
    # The best family: the fastest on the most problems, then the closest to the fastest.
    wins = defaultdict(int)
    closeness = defaultdict(list)
    for key in {k for ks in cands.values() for k in ks}:
        bests = {f: min(ks[key], key=rank) for f, ks in cands.items() if key in ks}
        top = min(bests.values(), key=rank)
        wins[top["family"]] += 1
        for f, m in bests.items():
            closeness[f].append(top["time_us"] / m["time_us"])
    order = sorted(cands, key=lambda f: (-wins[f], -geomean(closeness[f]), f))
    out = []
    for i, fam in enumerate(order):
        key = max(cands[fam], key=lambda k: len(cands[fam][k]))
        ms = cands[fam][key]
        if i > 0 and len(ms) < 12:
            continue
        fig = parameter_figure(fam, key, ms)
        if i == 0:
            out.append(f"<h2>Parameters of the best family: {esc(fam)}</h2><p>{esc(fam)} was the fastest family "
                       f"with named parameters on {wins[fam]} problem(s). Its {len(ms)} measured configs at "
                       f"<code>{esc(key)}</code> (the problem where it has the most): for each parameter, the best time "
                       "among the configs with each value (line) and every config (dots); the dotted line is its best "
                       "time overall. A flat line: the parameter does not matter there; a value whose best is far "
                       "above the line costs that much whatever the other parameters are.</p>")
            out.append(fig or omitted("Time against each parameter",
                                      f"the measured configs of {fam} at {key} all share their parameters"))
        elif fig:
            out.append(f"<h3>{esc(fam)} at <code>{esc(key)}</code></h3>{fig}")
    if len(out) > 2:
        out.insert(2, "<p>The other families with a dozen or more measured configs of one problem follow.</p>")
    return "\n".join(out)


# ---------------------------------------------------------------------------------------
# Winners per problem (the compare columns)

def section_winners(model, dev):
    keys = model.problem_keys(dev)
    if not keys:
        return "<h2>Winners per problem</h2>" + omitted("Winners per problem", "no successful measurement")
    out = ["<h2>Winners per problem</h2><p>Per problem: each family's winner as the store records it (else its "
           "fastest measured config, marked *), and cuBLASLt's pick, with the columns of <code>gemmtune compare</code>. "
           "★ marks the winner over all families.</p>"]
    for k in keys:
        pick = model.pick.get((dev, k))
        recorded = model.winners.get((dev, k), {})
        overall = recorded.get("*")
        entries = []
        fams = sorted({f for (d, kk, f) in model.fam_best if d == dev and kk == k}, key=lambda f: (f == "cublaslt", f))
        for f in fams:
            m = model.family_result(dev, k, f)
            w = recorded.get(f)
            entries.append((f + ("" if w and w["row_id"] in model.by_id else "*"), m))
        if pick:
            entries.append(("cuBLASLt pick", pick))
        star_id = overall["row_id"] if overall and overall["row_id"] in model.by_id else model.best[(dev, k)]["id"]
        star_cfg = model.by_id[star_id]["config"] if star_id in model.by_id else None
        rows = []
        for label, m in entries:
            speed = pick["time_us"] / m["time_us"] if pick else float("nan")
            star = "★ " if m["config"] == star_cfg and label != "cuBLASLt pick" else ""
            rows.append([star + label, config_cell(m), num_cell(fmt_us(m["time_us"])),
                         num_cell(fmt_num(m.get("tflops"))), num_cell(fmt_num(pct_roof(model, m))),
                         num_cell(fmt_ratio(speed)), num_cell(fmt_sci(m.get("err_rel_fro"))),
                         "replay" if m.get("replay") else ("quick" if m.get("quick") else "full")])
        out.append(f"<h3><code>{esc(k)}</code></h3>")
        out.append(table_html(["family", "config", "time µs", "TFLOP/s", "% roof", "× pick", "error (rel. Frobenius)",
                               "timing"], rows))
    return "\n".join(out)
