"""Loading a table, looking problems up, the entries, and bad input (no GPU needed)."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import gemmtune
from conftest import LLM_TABLE, LLM_TABLE_JSON, REPO


def test_entries_are_the_tables(llm_table):
    want = json.loads(LLM_TABLE_JSON.read_text())["entries"]  # the committed JSON twin of the TOML table
    got = llm_table.entries()
    assert len(got) == len(want) == 28
    for e, w in zip(got, want):
        assert {k: getattr(e, k) for k in w} == w
        assert e.extra == {}
    assert got[0].shape == "1x4096x4096"


def test_every_entry_answers_its_own_key_exactly(llm_table):
    for e in llm_table.entries():
        c = llm_table.lookup(e.m, e.n, e.k, dtype=e.dtype, out_dtype=e.out_dtype, layout=e.layout)
        assert (c.match, c.config, c.how) == ("exact", e.config, "exact"), e.shape


def test_load_without_gpu_is_a_dry_run(llm_table):
    if not llm_table.dry_run:
        pytest.skip("this machine has a GPU: the table was loaded on it")
    assert llm_table.device is None
    assert llm_table.arch == "sm_90"
    assert llm_table.no_gpu_reason.count("no GPU") == 1, llm_table.no_gpu_reason  # not "no GPU found: no GPU found"
    with pytest.raises(gemmtune.NoGpuError, match="loaded as a dry run"):
        llm_table.gemm(1, 4096, 4096, 1 << 20, 2 << 20, 3 << 20, dtype="bf16")


def test_dry_run_false_needs_a_gpu(cache_dir, llm_table):
    if not llm_table.dry_run:
        pytest.skip("this machine has a GPU")
    with pytest.raises(gemmtune.NoGpuError) as e:
        gemmtune.Table.load(LLM_TABLE, dry_run=False, cache_dir=cache_dir)
    assert e.value.status == 3 and str(e.value).startswith("no GPU found")
    assert str(e.value).count("no GPU found") == 1, str(e.value)


def test_alignment_is_part_of_the_key(llm_table):
    e = llm_table.entries()[0]
    assert e.align == 16
    assert llm_table.lookup(e.m, e.n, e.k, dtype=e.dtype, align=16).match == "exact"
    # 2-byte aligned pointers: another key, which no entry has.
    assert llm_table.lookup(e.m, e.n, e.k, dtype=e.dtype, align=2).match != "exact"


def test_bad_arguments_raise_with_the_c_apis_message(llm_table):
    with pytest.raises(gemmtune.InvalidArgumentError) as e:
        llm_table.lookup(0, 4096, 4096, dtype="bf16")
    assert str(e.value) == "sizes 0x4096x4096: each must be in [1, 2147483647]"
    assert e.value.status == 1 and isinstance(e.value, ValueError)
    with pytest.raises(gemmtune.InvalidArgumentError, match=r"leading dimensions lda=10 ldb=4096 ldc=4096 do not fit"):
        llm_table.lookup(1, 4096, 4096, dtype="bf16", lda=10)
    with pytest.raises(gemmtune.InvalidArgumentError, match="dtype: 'f64' is not one of f32, tf32, f16, bf16"):
        llm_table.lookup(1, 1, 1, dtype="f64")
    with pytest.raises(gemmtune.InvalidArgumentError, match="layout: 'xn'"):
        llm_table.lookup(1, 1, 1, layout="xn")
    with pytest.raises(gemmtune.InvalidArgumentError, match="out_dtype: 'tf32'|output dtype"):
        llm_table.lookup(1, 1, 1, dtype="f32", out_dtype="tf32")
    with pytest.raises(gemmtune.InvalidArgumentError, match="align: 3"):
        llm_table.lookup(1, 1, 1, align=3)
    with pytest.raises(gemmtune.InvalidArgumentError, match="m: 1.5 is not an int"):
        llm_table.lookup(1.5, 1, 1)


def test_bad_tables_raise_bad_table_error(tmp_path, cache_dir):
    missing = tmp_path / "missing.toml"
    with pytest.raises(gemmtune.BadTableError) as e:
        gemmtune.Table.load(missing, dry_run=True, cache_dir=cache_dir)
    assert str(e.value) == f"{missing}: cannot be read (missing or not readable)" and e.value.status == 2
    broken = tmp_path / "broken.toml"
    broken.write_text("gemmtune_table = 1\n[[entries]]\nm = \"x\"\n")
    with pytest.raises(gemmtune.BadTableError, match=str(broken)):
        gemmtune.Table.load(broken, dry_run=True, cache_dir=cache_dir)


def test_no_plugins_is_an_invalid_argument(tmp_path, cache_dir):
    with pytest.raises(gemmtune.InvalidArgumentError, match=f"no gemmtune plugins were found in {tmp_path}"):
        gemmtune.Table.load(LLM_TABLE, dry_run=True, plugin_dirs=[str(tmp_path)], cache_dir=cache_dir)


def test_a_closed_table_says_so(cache_dir):
    t = gemmtune.Table.load(LLM_TABLE, dry_run=True, cache_dir=cache_dir)
    t.close()
    t.close()  # twice is fine
    with pytest.raises(gemmtune.InvalidArgumentError, match="was closed"):
        t.lookup(1, 4096, 4096, dtype="bf16")


def test_library_version_is_the_packages():
    assert gemmtune.library_version() == gemmtune.__version__
    assert os.path.isfile(gemmtune.library_path())


def test_a_missing_library_is_reported_with_where_it_was_looked_for(tmp_path):
    env = dict(os.environ, GEMMTUNE_LIBRARY=str(tmp_path / "libnothing.so"), PYTHONPATH=str(REPO / "python"))
    code = ("import gemmtune\n"
            "try:\n    gemmtune.Table.load('x.toml')\n"
            "except gemmtune.LibraryNotFoundError as e:\n    print(type(e).__mro__[1].__name__, e)\n")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.startswith("Error libgemmtune_runtime.so was not found; tried: ")
    assert f"{tmp_path / 'libnothing.so'} (no such file)" in out and "GEMMTUNE_LIBRARY" in out


def test_the_package_is_python_3_9():
    """Every module parses as Python 3.9 (the oldest CPython the package supports)."""
    for path in sorted((REPO / "python" / "gemmtune").glob("*.py")):
        ast.parse(path.read_text(), filename=str(path), feature_version=(3, 9))


def test_online_mode_names_the_transfer_a_first_gemm_times_and_answers_from_the_decisions(tmp_path, cache_dir,
                                                                                         monkeypatch):
    """Table.load(online=...) and GEMMTUNE_ONLINE: a dry run times nothing, so an unbacked transfer
    leaves the default, naming the transfer (pending) a first gemm on a GPU would time; a decision
    in the file beside the table (or online_file) answers without timing."""
    monkeypatch.delenv("GEMMTUNE_ONLINE", raising=False)
    monkeypatch.delenv("GEMMTUNE_ONLINE_FILE", raising=False)
    table = tmp_path / "t.toml"
    table.write_bytes(LLM_TABLE.read_bytes())
    kw = dict(dry_run=True, device_name="NVIDIA H200", cache_dir=cache_dir)
    ask = dict(dtype="bf16")  # 100x4096x4096: the table holds 64x4096x4096 (distance 0.446), without evidence

    def choice(**load):
        with gemmtune.Table.load(table, **kw, **load) as t:
            return t.lookup(100, 4096, 4096, **ask)

    off = choice(online=False)
    assert (off.match, off.rule, off.backing, off.pending) == ("default", "library default", "none", "")
    assert off.is_default and "not backed" in off.reason
    on = choice(online=True)
    assert on.match == "default" and "(nearest (from 64x4096x4096" in on.pending, on
    assert not on.is_default  # a first gemm would time it: not PyTorch's to run
    monkeypatch.setenv("GEMMTUNE_ONLINE", "1")
    assert choice().pending == on.pending
    monkeypatch.setenv("GEMMTUNE_ONLINE", "0")
    assert choice().pending == ""
    monkeypatch.delenv("GEMMTUNE_ONLINE")
    candidate = on.pending.split(" (")[0]
    decision = {"device": "NVIDIA H200", "problem": "100x4096x4096 bf16>bf16 nn a16", "candidate": candidate,
                "default": "cublaslt_pick", "kept": "candidate", "candidate_us": 10.0, "default_us": 12.0, "at": ""}
    (tmp_path / "t.toml.online.jsonl").write_text(json.dumps(decision) + "\n")
    kept = choice(online=True)
    assert (kept.match, kept.rule, kept.backing, kept.config) == ("nearest", "nearest", "online", candidate)
    assert choice(online=False).is_default  # the decisions count in online mode only
    other = tmp_path / "other.jsonl"
    assert choice(online=True, online_file=str(other)).pending == on.pending  # none decided there
    (tmp_path / "t.toml.online.jsonl").write_text(json.dumps(dict(decision, kept="default")) + "\n")
    slower = choice(online=True)
    assert slower.is_default and slower.pending == "" and "the default was kept" in slower.reason
