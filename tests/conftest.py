import numpy as np
import pytest
from click.testing import CliRunner

from collect import paths
from rtreport.cli import main


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
