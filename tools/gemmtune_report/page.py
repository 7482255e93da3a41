"""The page: every section for every device in one self-contained HTML file, and the command
line (report.py DIR)."""
import json
import os
import sys
import traceback

from .common import STRICT, esc, omitted
from .model import Model
from .sections import (
    section_header, section_parameters, section_roofline, section_roofs, section_sizes, section_speedup,
    section_winners)
from .lab import section_jobs

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
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(page)
        os.replace(tmp, os.path.join(out_dir, "index.html"))
    except OSError as e:
        # A full disk: no half-written page is left beside the data it was made from.
        if os.path.exists(tmp):
            os.remove(tmp)
        sys.stderr.write(f"report.py: cannot write {os.path.join(out_dir, 'index.html')}: {e}\n")
        return 1
    print(f"wrote {os.path.join(out_dir, 'index.html')} ({len(page) // 1024} KiB)", file=sys.stderr)
    return 0
