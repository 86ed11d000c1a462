"""Shared set-up. Tests never read or write the user's files: the checkout's data/, site/, artifacts/ may hold a
run the user made with the README's main command (`rtreport collect && rtreport build`), so tests name the
committed files one by one (``COMMITTED_RUNS``), write only under pytest's temporary folders, and run from a
temporary working folder, so that a command's relative defaults (./data, ./site, ./artifacts/<label>) land there.
``the_checkout_stays_untouched`` fails the run if any file of the checkout appeared, changed or went away."""

import hashlib
import os
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from collect import paths
from rtreport_cli.main import main

ROOT = Path(__file__).resolve().parents[1]  # the checkout
# The published measurements, by name: never a glob of data/, which may hold the user's own runs.
COMMITTED_RUNS = tuple(
    paths.DATA / name
    for name in (
        "cpu-epyc-2core.duckdb",
        "cpu-epyc-2core-2.duckdb",
        "cpu-epyc-2core-3.duckdb",
        "cpu-epyc-2core-4.duckdb",
        "nvidia-h100.duckdb",
        "nvidia-h200.duckdb",
    )
)
# The example agents' runs (docs/own-agent.md), published apart from the site of data/*.duckdb.
EXAMPLE_RUNS = tuple(
    paths.DATA / "examples" / name
    for name in (
        "cpu-xeon-2core-cartpole.duckdb",
        "cpu-xeon-2core-inverted-pendulum.duckdb",
        "cpu-xeon-2core-pong-small.duckdb",
    )
)
# What the checkout may gain while tests run: the venv, caches of the interpreter and of pytest, and the ignored
# folders where wheels and libraries are staged for the GPU machine (docs/gpu-run.md).
_NOT_WATCHED = {".venv", "venv", ".git", "__pycache__", ".pytest_cache", ".ruff_cache", ".whl", ".gl"}


def _checkout_state() -> dict:
    """Every file of the checkout but the venv and caches: path -> (size, mtime, and a hash for data files)."""
    state = {}
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in _NOT_WATCHED and not d.endswith(".egg-info")]
        for name in files:
            path = Path(folder) / name
            st = path.lstat()
            state[path.relative_to(ROOT).as_posix()] = (st.st_size, st.st_mtime_ns)
    return state


def _digests() -> dict:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in COMMITTED_RUNS + EXAMPLE_RUNS}


@pytest.fixture(scope="session", autouse=True)
def the_checkout_stays_untouched(tmp_path_factory):
    """No test reads a relative path of the checkout or writes into it: the session runs from an empty temporary
    folder, and afterwards every file of the checkout (data/, site/, artifacts/, build/, the committed runs byte for
    byte) is as it was."""
    before, digests = _checkout_state(), _digests()
    cwd = Path.cwd()
    os.chdir(tmp_path_factory.mktemp("cwd"))
    yield
    os.chdir(cwd)
    assert _digests() == digests, "a test wrote to a committed data/*.duckdb file"
    after = _checkout_state()
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    assert not changed, f"tests changed files of the checkout: {changed[:20]}"


@pytest.fixture(scope="session", autouse=True)
def build_cache_in_a_temporary_folder(tmp_path_factory):
    """``rtreport build`` keeps its cache of analysed files (site_gen/cache.py) under pytest's folders, never in
    the user's ~/.cache."""
    before = os.environ.get("RTREPORT_CACHE_DIR")
    os.environ["RTREPORT_CACHE_DIR"] = str(tmp_path_factory.mktemp("build-cache"))
    yield
    if before is None:
        os.environ.pop("RTREPORT_CACHE_DIR", None)
    else:
        os.environ["RTREPORT_CACHE_DIR"] = before


@pytest.fixture(scope="session")
def shipped_model():
    from collect.agent.shipped import shipped_model

    return shipped_model()


@pytest.fixture(scope="session")
def fixed_states():
    return np.load(paths.FIXED_STATES)


@pytest.fixture(scope="session")
def quick_collect(tmp_path_factory):
    """One real --quick collect run on this machine (the CPU runtimes), made once for the whole test run and shared:
    (the file, what collect printed). Tests copy the file before changing it."""
    out = tmp_path_factory.mktemp("runs") / "quick.duckdb"
    result = CliRunner().invoke(
        main,
        ["collect", "--quick", "--out", str(out), "--label", "ci-cpu", "--artifacts", str(out.parent / "artifacts")],
    )
    assert result.exit_code == 0, result.output
    return out, result.output


@pytest.fixture(scope="session")
def quick_run(quick_collect):
    return quick_collect[0]


@pytest.fixture(scope="session")
def built_site(quick_run, tmp_path_factory):
    out = tmp_path_factory.mktemp("site") / "site"
    result = CliRunner().invoke(main, ["build", str(quick_run), "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture(scope="session")
def published_site(quick_run, tmp_path_factory):
    """The committed runs plus this machine's quick run, built once for the whole test run (tests only read it)."""
    out = tmp_path_factory.mktemp("published") / "site"
    result = CliRunner().invoke(main, ["build", str(quick_run), *map(str, COMMITTED_RUNS), "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out


def ctrl_c_at_game(monkeypatch, n: int):
    """Ctrl-C as the ``n``-th game of the play phase starts (games before it are stored); returns the real
    ``measure.ShadowedGame``, to put back."""
    from collect import measure

    real, calls = measure.ShadowedGame, {"n": 0}

    def game(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == n:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(measure, "ShadowedGame", game)
    return real


def without_repeats(src, dst):
    """A copy of a collect file as the run alone left it (its repeats' rows removed, sealed again as collect seals)."""
    import shutil

    import duckdb

    from rtreport import integrity

    shutil.copyfile(src, dst)
    con = duckdb.connect(str(dst))
    rounds = [
        r for (r,) in con.execute("SELECT DISTINCT round FROM rounds WHERE conditions->>'phase' = 'repeat'").fetchall()
    ]
    for table, where in (
        ("latency", f"kind = 'decision' AND round IN ({', '.join(map(str, rounds)) or -1})"),
        ("retaken", f"round IN ({', '.join(map(str, rounds)) or -1})"),
        ("rounds", "conditions->>'phase' = 'repeat'"),
        ("repeats", "true"),
        ("repeat_state_q", "true"),
        ("sessions", "session > 0"),
    ):
        con.execute(f"DELETE FROM {table} WHERE {where}")
    integrity.record(con, con.execute("SELECT run_id FROM runs").fetchone()[0])
    con.close()
    return dst
