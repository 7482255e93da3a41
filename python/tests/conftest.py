"""Shared fixtures of the Python tests.

The library comes from GEMMTUNE_LIBRARY (ctest sets it to the build's), else where the
package looks by itself; the CLI for the parity tests from GEMMTUNE_CLI, else PATH.
Tests marked gpu need a CUDA GPU and skip with the reason where there is none; with
GEMMTUNE_SKIP_CODE set, a run in which every test skipped exits with that code (CTest then
reports the run as skipped, not passed).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

import gemmtune

REPO = Path(__file__).resolve().parents[2]
LLM_TABLE = REPO / "docs" / "results" / "h200-llm-table.toml"
LLM_TABLE_JSON = REPO / "docs" / "results" / "h200-llm-table.json"


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory) -> str:
    return str(tmp_path_factory.mktemp("cubins"))


@pytest.fixture(scope="session")
def llm_table(cache_dir) -> gemmtune.Table:
    """The committed LLM table, loaded as Table.load does by default (GPU if any, else a dry run)."""
    with gemmtune.Table.load(LLM_TABLE, cache_dir=cache_dir) as t:
        yield t


@pytest.fixture(scope="session")
def cli() -> str:
    path = os.environ.get("GEMMTUNE_CLI") or shutil.which("gemmtune")
    if not path:
        pytest.skip("the gemmtune CLI is needed for the parity tests: set GEMMTUNE_CLI or put it on PATH")
    return path


@pytest.fixture(scope="session")
def gpu_table(llm_table) -> gemmtune.Table:
    """The committed table on a GPU; skips (with why) where there is none."""
    if llm_table.dry_run:
        pytest.skip(f"needs a CUDA GPU: {llm_table.no_gpu_reason}")
    return llm_table


def pytest_sessionfinish(session, exitstatus):
    code = os.environ.get("GEMMTUNE_SKIP_CODE")
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if not code or reporter is None or exitstatus != 0:
        return
    stats = reporter.stats
    ran = sum(len(stats.get(k, [])) for k in ("passed", "failed", "error", "xfailed", "xpassed"))
    if ran == 0 and stats.get("skipped"):
        session.exitstatus = int(code)
