"""tools/report.py's page, on data made here (no store, no GPU): the lab's ladder shows in its figure
the very numbers its table prints, and a family's result is the one the winners table shows.
Needs matplotlib; skipped without it."""
import os
import re
import sys

import pytest

pytest.importorskip("matplotlib")
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tools"))

from gemmtune_report import lab as lab_module  # noqa: E402
from gemmtune_report.lab import Lab, lab_ladder  # noqa: E402
from gemmtune_report.model import Model  # noqa: E402
from gemmtune_report.sections import section_winners  # noqa: E402

GPU = "NVIDIA H200"
KEY = "4096x4096x4096 f16>f16 nn a16"
FLOPS = 2.0 * 4096 ** 3


def row(id_, family, config, time_us, pick=False, quick=False):
    return {"id": id_, "device": GPU, "key": KEY, "m": 4096, "n": 4096, "k": 4096, "dtype": "f16", "kind": "f16",
            "out_dtype": "f16", "layout": "nn", "align": 16, "family": family, "config": config,
            "transform": "none", "params": [], "params_from": "index", "time_us": time_us,
            "tflops": FLOPS / (time_us * 1e-6) / 1e12, "flops": FLOPS, "quick": quick, "replay": True,
            "pick": pick, "description": ""}


def ladder_data():
    """wmma's tune decided with its finalist's re-timing (346.65 us, 396.5 TFLOP/s); a later compare timed
    the same config at 331 us (415 TFLOP/s). cuBLASLt's pick beside it."""
    winner = row(1, "wmma", "wmma_bm128_bn256", 346.65)
    faster = row(2, "wmma", "wmma_bm128_bn256", 331.0)
    pick = row(3, "cublaslt", "cublaslt_algo66", 210.83, pick=True)
    job = {"id": "ladder", "lab": True, "name": "lab-ladder", "source": "configs/lab/ladder.toml",
           "problems": [{"key": KEY, "m": 4096, "n": 4096, "k": 4096, "families": ["wmma", "cublaslt"],
                         "configs": {"cublaslt": [{"text": "@pick", "pick": True, "name": None}]}}]}
    return {"format": "gemmtune-report/1", "measurements": [winner, faster, pick],
            "winners": [{"device": GPU, "key": KEY, "family": "wmma", "config": "wmma_bm128_bn256", "row_id": 1,
                         "note": "", "tie": False, "tie_with": "", "runner_up": "", "margin": None}],
            "devices": [{"name": GPU, "ok": 3, "rows": 3}], "roofs": [], "jobs": [job]}


def test_the_ladder_figure_shows_the_numbers_of_its_table(monkeypatch):
    data = ladder_data()
    figures = []
    real = lab_module.fig_html

    def keep(fig, alt):
        figures.append([p.get_width() for p in fig.axes[0].patches])
        return real(fig, alt)

    monkeypatch.setattr(lab_module, "fig_html", keep)
    model = Model(data)
    html = lab_ladder(Lab(model, GPU, data["jobs"][0]))
    assert html and len(figures) == 1
    # The table's TFLOP/s column (the fourth cell of each body row), in the figure's order.
    table = [float(re.findall(r'<td class="num">([^<]*)</td>', tr)[1])
             for tr in re.findall(r"<tr><td>.*?</tr>", html)]
    assert len(table) == len(figures[0]) == 2
    assert [round(v, 2) for v in figures[0]] == table
    # wmma's rung is the row its tune decided with, not the fastest timing anywhere.
    assert table[0] == round(FLOPS / 346.65e-6 / 1e12, 2) == 396.48


def test_a_familys_result_is_the_winners_table_number():
    data = ladder_data()
    model = Model(data)
    assert model.family_result(GPU, KEY, "wmma")["id"] == 1
    assert "396.5" in section_winners(model, GPU)
    # Without a recorded winner, the fastest measured config.
    data["winners"] = []
    assert Model(data).family_result(GPU, KEY, "wmma")["id"] == 2


def test_a_page_that_cannot_be_written_leaves_no_half_page(tmp_path):
    """A full disk while the page is written (RLIMIT_FSIZE below the page's size, SIGXFSZ ignored, as
    ENOSPC would): exit 1 naming index.html, the data file kept, and no partial page left behind."""
    import json
    import resource
    import signal
    import subprocess
    (tmp_path / "data.json").write_text(json.dumps(ladder_data()))
    script = os.path.join(os.path.dirname(__file__), "..", "..", "tools", "report.py")

    def small_disk():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

    r = subprocess.run([sys.executable, script, str(tmp_path)], preexec_fn=small_disk, capture_output=True, text=True)
    assert r.returncode == 1, r.stderr
    assert "cannot write" in r.stderr and "index.html" in r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.json"]
