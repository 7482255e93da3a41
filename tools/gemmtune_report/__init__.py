"""gemmtune's report page, in modules by concern (tools/report.py is the command):
common (formats, HTML, figures), model (data.json as rows and bests), sections (the per-device
sections), lab (the lab's experiments and other jobs), page (the whole page and the command line)."""
