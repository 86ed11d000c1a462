"""A run killed outright (SIGKILL): found and resumed by the name the user gave, its dead lock taken over with a
line, nothing hidden left behind; build says what it skipped or published as incomplete, and why; a partial file
whose log is gone is reported as such."""

import shutil
import subprocess
import sys

import duckdb
import pytest
from click.testing import CliRunner

from rtreport_cli.main import main

pytestmark = pytest.mark.slow  # real collects end to end: python -m pytest -m slow (CI runs them)


@pytest.fixture(scope="module")
def killed(tmp_path_factory):
    """A folder with what a collect killed during its batch sweep leaves: ``.k.duckdb.PID.partial``, its ``.wal``
    and ``.k.duckdb.lock`` naming the dead process."""
    folder = tmp_path_factory.mktemp("killed")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rtreport",
            "collect",
            "--quick",
            "--runtimes",
            "ort-cpu-fp32",
            "--out",
            str(folder / "k.duckdb"),
            "--artifacts",
            str(folder.parent / "k-artifacts"),
            "--label",
            "killed",
        ],
        cwd=folder,
        stderr=subprocess.PIPE,
        text=True,
    )
    for line in proc.stderr:
        if "batch sweep" in line:
            proc.kill()
            break
    proc.communicate(timeout=60)
    names = sorted(p.name for p in folder.iterdir())
    assert names == [f".k.duckdb.{proc.pid}.partial", f".k.duckdb.{proc.pid}.partial.wal", ".k.duckdb.lock"], names
    return folder, proc.pid


def _copy(folder, dst):
    shutil.copytree(folder, dst)
    return dst


def test_resume_by_the_given_name_continues_the_killed_run(killed, tmp_path):
    folder = _copy(killed[0], tmp_path / "f")
    pid = killed[1]
    result = CliRunner().invoke(
        main, ["collect", "--resume", str(folder / "k.duckdb"), "--artifacts", str(tmp_path / "a")]
    )
    assert result.exit_code == 0, result.output
    assert f"note: took over {folder / '.k.duckdb.lock'} from pid {pid}, which is no longer running" in result.output
    came = f"from {folder}/.k.duckdb.{pid}.partial (left by a run that stopped unexpectedly): measuring"
    assert came in result.output
    assert sorted(p.name for p in folder.iterdir()) == ["k.duckdb"]  # no partial, no log, no lock
    con = duckdb.connect(str(folder / "k.duckdb"), read_only=True)
    assert con.execute("SELECT status, label FROM runs").fetchone() == ("complete", "killed")
    con.close()


def test_build_names_what_it_skipped_and_what_it_published_incomplete(killed, tmp_path):
    folder, pid = killed
    partial = folder / f".k.duckdb.{pid}.partial"
    result = CliRunner().invoke(main, ["build", str(folder), "--out", str(tmp_path / "s")])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert result.output.strip() == (
        f"Error: {folder} holds no .duckdb files: run rtreport collect first, or give the files; skipped {partial}: a "
        f"run to k.duckdb that stopped unexpectedly (pid {pid} is gone); rtreport collect --resume {folder}/k.duckdb "
        f"continues it, rtreport build {partial} publishes it"
    )
    copy = tmp_path / "p"
    copy.mkdir()
    shutil.copyfile(partial, copy / partial.name)
    shutil.copyfile(partial.with_name(partial.name + ".wal"), copy / (partial.name + ".wal"))
    result = CliRunner().invoke(main, ["build", str(copy / partial.name), "--out", str(tmp_path / "s")])
    assert result.exit_code == 0, result.output
    assert (
        f"note: published {copy / partial.name} as running: stopped unexpectedly (still marked running)"
        in result.output
    )


def test_a_partial_whose_log_is_gone_is_reported_as_such(killed, tmp_path):
    folder, pid = killed
    name = f".k.duckdb.{pid}.partial"
    shutil.copyfile(folder / name, tmp_path / name)  # without its .wal
    result = CliRunner().invoke(main, ["build", str(tmp_path / name), "--out", str(tmp_path / "s")])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert f"its log {name}.wal, which held everything it measured, is gone" in result.output
    result = CliRunner().invoke(main, ["build", str(tmp_path), "--out", str(tmp_path / "s")])
    assert f"its log {name}.wal, which held what it measured, is gone" in result.output
