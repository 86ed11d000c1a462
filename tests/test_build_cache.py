"""The build's cache of analysed files (site_gen/cache.py): a hit gives the same site byte for byte, and a
changed file, other gates or a damaged entry is never taken from it."""

import shutil

import pytest
from click.testing import CliRunner

from conftest import COMMITTED_RUNS
from rtreport_cli.main import main
from rtreport.gates import Gates
from site_gen import build as build_module
from site_gen.cache import RunCache


def _tree(folder):
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _build(files, out, *extra):
    result = CliRunner().invoke(main, ["build", *map(str, files), "--out", str(out), *extra])
    assert result.exit_code == 0, result.output
    return _tree(out)


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv("RTREPORT_CACHE_DIR", str(folder))
    return folder


def _no_reading(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a file was read although its results were in the cache")

    monkeypatch.setattr(build_module, "load_file", refuse)


def test_a_build_from_the_cache_is_the_same_site_byte_for_byte(cache_dir, tmp_path, monkeypatch):
    files = [COMMITTED_RUNS[0]]
    fresh = _build(files, tmp_path / "fresh", "--no-cache")
    assert not cache_dir.exists()  # --no-cache neither reads nor writes it
    first = _build(files, tmp_path / "first")  # fills the cache
    assert len(list(cache_dir.rglob("*.pickle"))) == 1
    _no_reading(monkeypatch)
    again = _build(files, tmp_path / "again")  # every result from the cache
    assert fresh.keys() == first.keys() == again.keys()
    assert [k for k in fresh if not fresh[k] == first[k] == again[k]] == []


def test_the_same_bytes_elsewhere_are_a_hit_that_knows_its_new_place(tmp_path):
    gates = Gates.load()
    cache = RunCache(gates, False, tmp_path / "cache")
    copy = tmp_path / "elsewhere.duckdb"
    shutil.copyfile(COMMITTED_RUNS[0], copy)
    assert cache.get(copy) is None
    cache.put(COMMITTED_RUNS[0], [_FakeResult(COMMITTED_RUNS[0])])
    found = RunCache(gates, False, tmp_path / "cache").get(copy)
    assert [r.rows.source for r in found] == [copy] and found[0].gates is gates


def test_other_bytes_gates_or_allow_invalid_are_a_miss(tmp_path):
    gates = Gates.load()
    cache = RunCache(gates, False, tmp_path / "cache")
    copy = tmp_path / "copy.duckdb"
    shutil.copyfile(COMMITTED_RUNS[0], copy)
    cache.put(copy, [_FakeResult(copy)])
    assert cache.get(copy) is not None
    stricter = Gates(gates.min_p95_reduction, gates.min_same_action_fraction, gates.play_margin / 2)
    assert RunCache(stricter, False, tmp_path / "cache").get(copy) is None
    assert RunCache(gates, True, tmp_path / "cache").get(copy) is None
    copy.with_name(copy.name + ".wal").write_bytes(b"")  # a log beside it, which DuckDB would replay
    assert RunCache(gates, False, tmp_path / "cache").get(copy) is None
    copy.with_name(copy.name + ".wal").unlink()
    assert RunCache(gates, False, tmp_path / "cache").get(copy) is not None
    with open(copy, "ab") as f:  # one more byte: another file
        f.write(b"\0")
    assert RunCache(gates, False, tmp_path / "cache").get(copy) is None


def test_a_damaged_entry_is_a_miss_and_the_build_still_succeeds(cache_dir, tmp_path):
    files = [COMMITTED_RUNS[0]]
    first = _build(files, tmp_path / "first")
    for entry in cache_dir.rglob("*.pickle"):
        entry.write_bytes(entry.read_bytes()[:100])
    assert _build(files, tmp_path / "again") == first


class _Rows:
    def __init__(self, source):
        self.source = source


class _FakeResult:
    def __init__(self, source):
        self.rows, self.gates = _Rows(source), None
