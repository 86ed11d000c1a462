import hashlib

import numpy as np
import pytest
from click.testing import CliRunner

from collect import paths
from rtreport.cli import main


def _digests() -> dict:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(paths.DATA.glob("*.duckdb"))}


@pytest.fixture(scope="session", autouse=True)
def committed_data_stays_untouched():
    """The published measurements are read by tests, never written: a test that resumed a committed file once
    added empty sessions to it. Any test that changes a byte of data/*.duckdb fails the run here."""
    before = _digests()
    yield
    assert _digests() == before, "a test wrote to a committed data/*.duckdb file"


@pytest.fixture(scope="session")
def shipped_model():
    from collect.agent.shipped import shipped_model
    return shipped_model()


@pytest.fixture(scope="session")
def fixed_states():
    return np.load(paths.FIXED_STATES)


@pytest.fixture(scope="session")
def quick_run(tmp_path_factory):
    """One real --quick collect run on this machine (the CPU runtimes)."""
    out = tmp_path_factory.mktemp("runs") / "quick.duckdb"
    result = CliRunner().invoke(main, ["collect", "--quick", "--quiet", "--out", str(out), "--label", "ci-cpu",
                                       "--artifacts", str(out.parent / "artifacts")])
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture(scope="session")
def built_site(quick_run, tmp_path_factory):
    out = tmp_path_factory.mktemp("site") / "site"
    result = CliRunner().invoke(main, ["build", str(quick_run), "--out", str(out)])
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
