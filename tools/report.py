#!/usr/bin/env python3
"""gemmtune's report page: DIR/data.json (written by `gemmtune report`) -> DIR/index.html.

The page is self-contained: every plot is a PNG embedded as a base64 data URI and nothing
links outside the file, so it can be mailed, attached to an issue or opened offline.
Needs only matplotlib (Debian: python3-matplotlib). Every section copes with missing
pieces (no roofs, no cuBLASLt pick, no square sweep, one lab experiment run and not the
others): what has no data is left out with one line that says so.

Usage: python3 tools/report.py DIR    (GEMMTUNE_REPORT_STRICT=1: a section that fails is an error)
"""
import base64
import html
import io
import json
import math
import os
import re
import sys
import traceback
from collections import OrderedDict, defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.patheffects  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter  # noqa: E402

STRICT = os.environ.get("GEMMTUNE_REPORT_STRICT") == "1"

INK = "#2a2a2a"
FAMILY_COLORS = {
    "naive": "#9a9384",
    "shared_tile": "#2e7d5b",
    "register_tile": "#3b6ea5",
    "wmma": "#7a4f8c",
    "wgmma_tma": "#b08d2a",
    "skinny": "#4f8c8a",
    "skinny_mma": "#5b5f97",
    "cublaslt": "#c4521e",
}
EXTRA_COLORS = ["#a5463b", "#6b8e23", "#8c6d4f", "#4f6d8c", "#8c4f6d"]
PICK_COLOR = "#111111"
DTYPE_MARKERS = {"f32": "o", "tf32": "s", "f16": "^", "bf16": "D", "e4m3": "v", "e5m2": "<"}
ROOF_STYLES = {"fp32_fma": ("#3b6ea5", "fp32 FMA"), "tensor_tf32": ("#2e7d5b", "tensor tf32"),
               "tensor_f16": ("#7a4f8c", "tensor f16"), "tensor_bf16": ("#c4521e", "tensor bf16"),
               "tensor_e4m3": ("#8c2e4f", "tensor e4m3")}
# FP8's tensor cores run e4m3 and e5m2 at one rate: `gemmtune roofs` measures it in e4m3.
DTYPE_ROOF = {"f32": "fp32_fma", "tf32": "tensor_tf32", "f16": "tensor_f16", "bf16": "tensor_bf16",
              "e4m3": "tensor_e4m3", "e5m2": "tensor_e4m3"}
DTYPE_BYTES = {"f32": 4, "tf32": 4, "f16": 2, "bf16": 2, "e4m3": 1, "e5m2": 1}


def base_dtype(kind):
    """A's type of a measurement's kind ("e4m3:e5m2 row" -> "e4m3"): what its roof and bytes follow."""
    return kind.split()[0].split(":")[0]

plt.rcParams.update({
    "font.size": 9, "axes.edgecolor": "#8f887a", "axes.spines.top": False, "axes.spines.right": False,
    "figure.dpi": 110, "savefig.dpi": 110, "axes.grid": True, "grid.color": "#e6e1d6", "grid.linewidth": 0.6,
    "legend.frameon": False, "axes.titlesize": 10,
})


# ---------------------------------------------------------------------------------------
# Small helpers

def esc(s):
    return html.escape("" if s is None else str(s))


def finite(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def fmt_us(v):
    if not finite(v):
        return "–"
    if v < 10:
        return f"{v:.2f}"
    if v < 1000:
        return f"{v:.1f}"
    return f"{v:,.0f}"


def fmt_num(v, digits=1):
    return f"{v:.{digits}f}" if finite(v) else "–"


def fmt_sci(v):
    return f"{v:.1e}" if finite(v) else "–"


def fmt_ratio(v):
    return f"{v:.3f}×" if finite(v) else "–"


def geomean(vals):
    vals = [v for v in vals if finite(v) and v > 0]
    return math.exp(sum(math.log(v) for v in vals) / len(vals)) if vals else float("nan")


def color_of(family, _extra={}):
    if family in FAMILY_COLORS:
        return FAMILY_COLORS[family]
    if family not in _extra:
        _extra[family] = EXTRA_COLORS[len(_extra) % len(EXTRA_COLORS)]
    return _extra[family]


def fig_html(fig, alt):
    buf = io.BytesIO()
    fig.savefig(buf, format="png", bbox_inches="tight", facecolor="white")
    plt.close(fig)
    data = base64.b64encode(buf.getvalue()).decode("ascii")
    return f'<figure><img alt="{esc(alt)}" src="data:image/png;base64,{data}"></figure>'


def table_html(headers, rows, cls=""):
    out = [f'<table class="{cls}"><thead><tr>' + "".join(f"<th>{esc(h)}</th>" for h in headers) + "</tr></thead><tbody>"]
    for r in rows:
        out.append("<tr>" + "".join(c if isinstance(c, Raw) else f"<td>{esc(c)}</td>" for c in r) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


class Raw(str):
    """A table cell given as ready HTML (a <td> with its own markup)."""


def code_cell(s, title=""):
    tip = f' title="{esc(title)}"' if title else ""
    return Raw(f'<td class="cfg"><code{tip}>{esc(s)}</code></td>')


def readable(m):
    """A config as a person reads it, "k=v k=v", where its parameters have their own names (from the
    plugin, the names the store noted, the row's own params, or the config name); else its canonical name."""
    if m.get("params_from") in ("plugin", "store", "row", "name") and m.get("_params"):
        return " ".join(f"{k}={v}" for k, v in m["_params"].items())
    return m["config"]


def config_cell(m):
    """A readable config, its canonical name (what --json and exports give) on hover."""
    text = readable(m)
    return code_cell(text, m["config"] if text != m["config"] else "")


def num_cell(s):
    return Raw(f'<td class="num">{esc(s)}</td>')


def omitted(what, why):
    return f'<p class="omitted">{esc(what)}: left out — {esc(why)}.</p>'


def log_ticks(ax, axis="x"):
    """Plain numbers on a log axis (1, 10, 100 rather than 10^0, 10^1, 10^2), with 2 and 5
    between them where the axis spans few decades. Call it after the limits are set."""
    lo, hi = ax.get_xlim() if axis == "x" else ax.get_ylim()
    decades = math.log10(hi / lo) if lo > 0 and hi > lo else 3
    subs = (1.0, 2.0, 5.0) if decades <= 3.2 else (1.0,)
    a = ax.xaxis if axis == "x" else ax.yaxis
    a.set_major_locator(LogLocator(base=10, subs=subs))
    a.set_major_formatter(FuncFormatter(lambda v, _: (f"{v:g}" if v >= 0.01 else f"{v:.0e}")))
    a.set_minor_formatter(NullFormatter())


def size_label(n):
    return f"{n // 1024}K" if n >= 1024 and n % 1024 == 0 else str(n)


# ---------------------------------------------------------------------------------------
# The data model

class Model:
    def __init__(self, data):
        self.data = data
        self.meas = [m for m in data.get("measurements", []) if finite(m.get("time_us")) and m["time_us"] > 0]
        # FP8 problems are grouped and labelled by their kind (types and scale mode, "e4m3 row"):
        # every panel that groups by dtype keeps different scales apart.
        for m in self.meas:
            m["dtype"] = m.get("kind", m["dtype"])
        self.by_id = {m["id"]: m for m in self.meas}
        for m in self.meas:
            m["_params"] = OrderedDict((p[0], p[1]) for p in (m.get("params") or []))
        # One row per (device, key, family, config): a fully timed measurement over a
        # quick one (quick timings have fewer samples and may catch the clock unsettled),
        # then the fastest (the store's own rule for winners).
        self.configs = {}
        for m in self.meas:
            k = (m["device"], m["key"], m["family"], m["config"])
            cur = self.configs.get(k)
            if cur is None or rank(m) < rank(cur):
                self.configs[k] = m
        self.fam_best, self.best, self.pick = {}, {}, {}
        # Per problem transform ("none", "pad", "swap", "pad+swap"; docs/transforms.md): a
        # family's best in each form it ran in, and cuBLASLt's pick for each transformed problem.
        # The problem's own pick is the plain one.
        self.form_best, self.form_pick = {}, {}
        self.problems = OrderedDict()
        # Bests likewise: a config timed in full beats one only explored quickly (the
        # tuner re-times its finalists in full; a quick time is a ranking, not a result).
        for (dev, key, fam, _), m in sorted(self.configs.items(), key=lambda kv: problem_order(kv[1])):
            self.problems.setdefault((dev, key), m)
            form = m.get("transform", "none")
            picks = ()
            if m.get("pick"):
                picks = ((self.pick, (dev, key)),) if form == "none" else ((self.form_pick, (dev, key, form)),)
            for table, k in ((self.fam_best, (dev, key, fam)), (self.best, (dev, key)),
                             (self.form_best, (dev, key, fam, form))) + picks:
                if k not in table or rank(m) < rank(table[k]):
                    table[k] = m
        self.roofs = defaultdict(dict)
        for r in data.get("roofs", []):
            if finite(r.get("value")):
                self.roofs[r["device"]][r["name"]] = r
        self.winners = defaultdict(dict)  # (device, key) -> family -> winner
        for w in data.get("winners", []):
            self.winners[(w["device"], w["key"])][w["family"]] = w
        devs = [d for d in data.get("devices", []) if d.get("ok") or self.roofs.get(d["name"])]
        self.devices = sorted(devs, key=lambda d: -d.get("ok", 0))
        fams = sorted({m["family"] for m in self.meas}, key=lambda f: (f == "cublaslt", f))
        self.families = fams

    def roof(self, dev, name):
        r = self.roofs.get(dev, {}).get(name)
        return r["value"] if r else None

    def dtype_roof(self, dev, dtype):
        return self.roof(dev, DTYPE_ROOF.get(dtype, ""))

    def bandwidth(self, dev):
        return self.roof(dev, "mem_read") or self.roof(dev, "mem_copy")

    def problem_keys(self, dev):
        return [k for (d, k) in self.problems if d == dev]

    def rows(self, dev, key, family=None):
        return [m for (d, k, f, _), m in self.configs.items() if d == dev and k == key and (family is None or f == family)]


def rank(m):
    return (bool(m.get("quick")), m["time_us"])


def problem_order(m):
    return (m["dtype"], m["out_dtype"], m["layout"], m["m"], m["n"], m["k"], m["align"], m["family"], m["config"])


def roofline_at(model, m):
    """The roofline at m's problem: min(the dtype's roof, intensity x memory roof), FLOP/s; None without the
    dtype's roof (the memory roof alone would rate a compute-bound problem against a rate no kernel reaches).
    As `gemmtune compare` (roofline_at in core/src/measure/roofs.hpp), except that a store without mem_read falls back
    to mem_copy, as the roofline plot does."""
    roof = model.dtype_roof(m["device"], base_dtype(m["dtype"]))
    if not roof:
        return None
    bw = model.bandwidth(m["device"])
    if bw and finite(m.get("intensity")):
        return min(roof, bw * m["intensity"])
    return roof


def pct_roof(model, m):
    roof = roofline_at(model, m)
    return 100.0 * m["tflops"] * 1e12 / roof if roof and finite(m.get("tflops")) else float("nan")


NOTE_PREFIXES = ("finalist", "compare:", "heuristic rank", "not among", "tie ")


def short_description(m):
    """The config's own description, without the tuner's and cuBLASLt's notes around it."""
    parts = [p.strip() for p in (m.get("description") or "").split(";")]
    parts = [p for p in parts if p and not p.startswith(NOTE_PREFIXES)]
    return parts[0] if parts else ""


def kernel_label(m, kind=""):
    """A readable name for a measured config, in the lab's words where the family is one of the lab's."""
    p, fam = m["_params"], m["family"]
    io_ = m["dtype"] if m["dtype"] == m["out_dtype"] else f"{m['dtype']}→{m['out_dtype']}"
    if fam == "cublaslt":
        base = "cuBLASLt pick" if m.get("pick") and kind != "best" else "cuBLASLt best"
        return f"{base} ({io_})"
    if fam == "naive" and "map" in p:
        return f"naive, {p['map']} ({io_})"
    if fam == "shared_tile" and "tile_m" in p and "tile_n" in p:
        return f"shared-memory tiles {p['tile_m']}×{p['tile_n']} ({io_})"
    if fam == "register_tile" and all(x in p for x in ("bm", "bn", "tm", "tn")):
        return f"register tiles {p['tm']}×{p['tn']} patch, {p['bm']}×{p['bn']} block ({io_})"
    if fam == "wmma" and "bm" in p and "bn" in p:
        return f"wmma {p['bm']}×{p['bn']} block ({io_})"
    return f"{fam} ({io_})"


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
    for (d, key, fam), m in model.fam_best.items():
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
        fams = {f: pick["time_us"] / m["time_us"] for (d, kk, f), m in model.fam_best.items() if d == dev and kk == k}
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
            w = recorded.get(f)
            m = model.by_id.get(w["row_id"]) if w else None
            mark = ""
            if m is None:
                m = model.fam_best[(dev, k, f)]
                mark = "*"
            entries.append((f + mark, m))
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
        return self.model.fam_best.get((self.dev, key, family))

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
            "the family's best config anywhere in the store at that problem (past the lab).</p>" + "\n".join(out))


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


# ---------------------------------------------------------------------------------------

CSS = """
body { font-family: -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif; color: #2a2a2a; background: #fbf9f4;
       max-width: 1180px; margin: 1.5em auto; padding: 0 1em; font-size: 14px; line-height: 1.45; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
h2 { border-bottom: 1px solid #d9d3c7; padding-bottom: 0.2em; margin-top: 2em; }
h3 { margin-top: 1.4em; } h4 { margin: 1em 0 0.3em; }
.replay { background: #b3261e; color: white; font-weight: bold; font-size: 1.25em; padding: 0.7em 1em;
          border-radius: 4px; margin: 0.8em 0; letter-spacing: 0.02em; }
.meta, .src { color: #6b665c; font-size: 0.9em; } .src { font-weight: normal; margin-left: 0.6em; }
.note { color: #8a5a00; } .omitted { color: #6b665c; font-style: italic; } .desc { color: #4a463f; }
table { border-collapse: collapse; margin: 0.5em 0 1em; font-size: 12.5px; background: white; }
th, td { border: 1px solid #e2dccf; padding: 3px 7px; vertical-align: top; overflow-wrap: break-word; }
td.long { word-break: break-all; min-width: 18em; }
th { background: #f1ece1; text-align: left; font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.cfg code { font-size: 11px; word-break: break-all; }
table.prov td { font-size: 12px; }
figure { margin: 0.6em 0 1.2em; } figure img { max-width: 100%; border: 1px solid #e6e1d6; background: white; }
code { font-size: 0.92em; } ul.examples { font-size: 0.9em; color: #4a463f; }
nav { font-size: 0.9em; color: #6b665c; }
"""


def build(data):
    model = Model(data)
    parts = [section_header(model)]
    devices = [d["name"] for d in model.devices] or [None]
    sections = [("roofs", section_roofs), ("roofline", section_roofline), ("sizes", section_sizes),
                ("speedup", section_speedup), ("parameters", section_parameters), ("winners", section_winners),
                ("jobs", section_jobs)]
    for dev in devices:
        if dev is None:
            parts.append(omitted("Everything else", "the store holds no successful measurement and no roofs"))
            break
        if len(devices) > 1:
            parts.append(f"<h1 class=\"dev\">{esc(dev)}</h1>")
        for name, fn in sections:
            try:
                parts.append(fn(model, dev))
            except Exception:  # one broken section must not cost the others
                if STRICT:
                    raise
                tb = traceback.format_exc()
                sys.stderr.write(f"report.py: the {name} section failed:\n{tb}")
                parts.append(f'<p class="note">The {esc(name)} section failed: <code>{esc(tb.splitlines()[-1])}</code></p>')
    title = "gemmtune report" + (" — REPLAY" if any(m.get("replay") for m in model.meas) else "")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{esc(title)}</title><style>{CSS}</style></head><body>\n" + "\n".join(p for p in parts if p)
            + "\n</body></html>\n")


def main(argv):
    if len(argv) != 2:
        sys.stderr.write("usage: report.py DIR   (DIR/data.json from `gemmtune report`; writes DIR/index.html)\n")
        return 2
    out_dir = argv[1]
    path = os.path.join(out_dir, "data.json")
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        sys.stderr.write(f"report.py: cannot read {path}: {e}\n")
        return 2
    if data.get("format") != "gemmtune-report/1":
        sys.stderr.write(f"report.py: {path} is not a gemmtune report data file (format {data.get('format')!r})\n")
        return 2
    page = build(data)
    tmp = os.path.join(out_dir, ".index.html.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(page)
    os.replace(tmp, os.path.join(out_dir, "index.html"))
    print(f"wrote {os.path.join(out_dir, 'index.html')} ({len(page) // 1024} KiB)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
