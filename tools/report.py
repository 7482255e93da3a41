#!/usr/bin/env python3
"""gemmtune's report page: DIR/data.json (written by `gemmtune report`) -> DIR/index.html.

The page is self-contained: every plot is a PNG embedded as a base64 data URI and nothing
links outside the file, so it can be mailed, attached to an issue or opened offline.
Needs only matplotlib (Debian: python3-matplotlib). Every section copes with missing
pieces (no roofs, no cuBLASLt pick, no square sweep, one lab experiment run and not the
others): what has no data is left out with one line that says so.

The page is made by the package beside this file, gemmtune_report/ (one module per concern);
this file is the command `gemmtune report` runs.

Usage: python3 tools/report.py DIR    (GEMMTUNE_REPORT_STRICT=1: a section that fails is an error)
"""
import os
import sys

# The package lies beside this script (the checkout's tools/, an install's share/gemmtune/),
# whatever the current directory.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from gemmtune_report.page import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(sys.argv))
