"""Shared by the report's modules: matplotlib (headless), colours and markers, number formats,
HTML cells and tables, embedded figures."""
import base64
import html
import io
import math
import os

import matplotlib

matplotlib.use("Agg")  # headless: before pyplot is imported, here, where every module imports from first
import matplotlib.patheffects  # noqa: E402,F401  (sections reads matplotlib.patheffects)
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402,F401  (lab reads matplotlib.ticker)
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
