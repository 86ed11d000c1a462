"""Play through a private CUDA MPS daemon (``collect.mps``, ``collect --play-mps``), and the DuckDB storage format
of run files (``collect.store.STORAGE``).

No GPU here, and no ``nvidia-cuda-mps-control``: a stand-in control program (a shell script, said so) answers as
the real one does, to test what the daemon wrapper asks and how it reads the answers; whether workers really
become its clients was measured on the H200 (docs/measurements.md §7). What must hold everywhere: without the control
program, or when a CUDA client through it fails, play goes on as plain processes with the same episodes, and the
pool says why."""

import json
import os
import stat
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from collect import paths
from collect.mps import MpsDaemon
from collect.play import Players, Task
from collect.progress import Lines
from conftest import COMMITTED_RUNS
from rtreport_cli.main import main
from collect.store import STORAGE_NUMBER, RunStore, compact, storage_number
from test_engine import _one_at_a_time, _plain, prepared  # noqa: F401  (the module's prepared runners)

STAND_IN = """#!/bin/sh
# stand-in for nvidia-cuda-mps-control (no GPU here): logs its arguments, environment and commands
echo "args=$* pipe=$CUDA_MPS_PIPE_DIRECTORY log=$CUDA_MPS_LOG_DIRECTORY" >> "{log}"
[ "$1" = "-d" ] && exit {start_code}
while read -r line; do
  echo "cmd=$line" >> "{log}"
  case "$line" in
    get_server_list) echo 4242 ;;
    "get_client_list 4242") printf '101\\n102\\n' ;;
  esac
done
"""


def _stand_in(tmp_path, start_code=0) -> tuple[Path, Path]:
    log = tmp_path / "control.log"
    exe = tmp_path / "nvidia-cuda-mps-control"
    exe.write_text(STAND_IN.format(log=log, start_code=start_code))
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return exe, log


def test_the_daemon_is_private_lists_its_clients_and_is_told_to_quit(tmp_path):
    exe, log = _stand_in(tmp_path)
    with MpsDaemon(str(exe)) as mps:
        pipe = mps.env["CUDA_MPS_PIPE_DIRECTORY"]
        assert mps.reason is None and Path(pipe).is_dir() and pipe != "/tmp/nvidia-mps"
        assert "CUDA_MPS_PIPE_DIRECTORY" not in os.environ  # only the workers get it
        assert mps.clients() == [101, 102]
    said = log.read_text()
    assert f"args=-d pipe={pipe}" in said and "cmd=get_client_list 4242" in said
    assert said.strip().endswith("cmd=quit") and not Path(pipe).exists()


def test_a_daemon_that_does_not_start_or_cannot_serve_cuda_says_why(tmp_path, monkeypatch):
    with MpsDaemon(str(tmp_path / "missing")) as mps:
        assert mps.env == {} and "did not start" in mps.reason
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    with MpsDaemon() as mps:
        assert mps.env == {} and mps.reason == "nvidia-cuda-mps-control is not on PATH"
    monkeypatch.undo()
    failing = tmp_path / "failing"
    failing.mkdir()
    exe, _ = _stand_in(failing, start_code=3)
    with MpsDaemon(str(exe)) as mps:
        assert mps.env == {} and mps.reason.startswith("nvidia-cuda-mps-control -d exited with 3")
    exe, log = _stand_in(tmp_path)
    with MpsDaemon(str(exe)) as mps:
        mps.probe()  # no CUDA here: the client fails, so the daemon is stopped and play goes on without it
        assert mps.env == {} and mps.reason.startswith("a CUDA client through the MPS daemon failed")
    assert "cmd=quit" in log.read_text()


@pytest.mark.slow  # a long end-to-end run: python -m pytest -m slow (CI runs it)
def test_play_asked_to_use_mps_with_cpu_runtimes_plays_the_same_games_and_says_why_not(
    prepared,  # noqa: F811  (test_engine's fixture, imported above)
    tmp_path,
    monkeypatch,
):
    runners, artifacts = prepared
    exe, log = _stand_in(tmp_path)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    tasks = [Task("torch-cpu-fp32", ("ort-cpu-fp32",), s, 60) for s in (1000, 1001, 1002)]
    expected = _one_at_a_time(runners, tasks)
    used = {"torch-cpu-fp32": runners["torch-cpu-fp32"], "ort-cpu-fp32": runners["ort-cpu-fp32"]}
    said = []
    with Players(used, 2, paths.AGENT_WEIGHTS, artifacts, 0, slots=2, mps=True) as players:
        state = players.start_through_mps(Lines(said.append))
        results = list(players.run(tasks))
    assert state == "off: no GPU runtime plays" and len(said) == 1 and state in said[0]
    assert [_plain(r) for _, r, _ in results] == expected
    assert not log.exists()  # no daemon was started for CPU runtimes
    with Players(used, 2, paths.AGENT_WEIGHTS, artifacts, 0, mps=False) as players:
        assert players.mps_state() is None  # not asked: nothing said


def test_play_mps_where_no_gpu_runtime_plays_is_recorded_as_off_with_why(tmp_path):
    out = tmp_path / "run.duckdb"
    result = CliRunner().invoke(
        main,
        [
            "collect",
            "--quick",
            "--runtimes",
            "torch-cpu-fp32",
            "--out",
            str(out),
            "--play-mps",
            "--artifacts",
            str(tmp_path / "a"),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "play: MPS off: no GPU runtime plays" in result.output
    con = duckdb.connect(str(out), read_only=True)
    settings = json.loads(con.execute("SELECT settings FROM runs").fetchone()[0])
    con.close()
    assert settings["play_mps"] == "off: no GPU runtime plays"
    # the key says how this session played: a resume without --play-mps does not keep the earlier session's
    result = CliRunner().invoke(main, ["collect", "--resume", str(out), "--rounds", "4"])
    assert result.exit_code == 0, result.output
    con = duckdb.connect(str(out), read_only=True)
    assert json.loads(con.execute("SELECT settings FROM runs").fetchone()[0])["play_mps"] is None
    con.close()


def test_run_files_are_written_in_the_oldest_storage_format_and_compaction_brings_newer_ones_back(tmp_path):
    store = RunStore(tmp_path / "new.duckdb", "r1")
    store.con.close()
    assert storage_number(tmp_path / "new.duckdb") == STORAGE_NUMBER
    plain = tmp_path / "plain.duckdb"  # whatever this DuckDB writes by default (2.0: its own newer format)
    con = duckdb.connect(str(plain))
    con.execute("CREATE TABLE t AS SELECT range AS i, 'row ' || range AS s FROM range(5000)")
    con.close()
    before = storage_number(plain)
    replaced = compact(plain)
    assert storage_number(plain) == STORAGE_NUMBER
    assert replaced or before == STORAGE_NUMBER  # a newer format is always rewritten, even if not smaller
    con = duckdb.connect(str(plain), read_only=True)
    assert con.execute("SELECT count(*), sum(i) FROM t").fetchone() == (5000, sum(range(5000)))
    con.close()


@pytest.mark.parametrize("path", COMMITTED_RUNS, ids=lambda p: p.name)
def test_published_files_are_readable_by_every_duckdb_the_project_allows(path):
    assert storage_number(path) == STORAGE_NUMBER
