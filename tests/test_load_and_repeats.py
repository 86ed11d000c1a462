"""Rounds under other processes' load are measured again (the superseded attempt kept), the load is read from the
CPU time other processes used during the round (not the 1-min load average, which counts this run's own waiting
threads), and a plain collect takes its own repeats in fresh processes after the run, so that every file it makes
holds the three independent measurements the speed gate needs."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import duckdb
import numpy as np
import pytest

from collect import after_run, rounds
from collect.store import RunStore, now
from rtreport import host_load


def test_load_is_what_other_processes_used_during_the_round():
    # the 2-core VM after a look of two play processes: load average 1.87 per core, this run's own CPU time
    # accounts for 0.99 of it, and other processes used 1 % of the CPU during the round: not loaded
    after_look = {"host_load": 1.87, "host_load_own": 0.99, "cpu_busy": 1.0, "cpu_busy_own": 0.99}
    assert host_load.foreign_share(after_look) == pytest.approx(0.01) and not host_load.loaded(after_look)
    busy = {**after_look, "cpu_busy_own": 0.6}  # a neighbour took 40 % of the cores' time
    assert host_load.loaded(busy) and host_load.reason(busy) == "other processes used 40% of the CPU during the round"
    assert host_load.foreign_share({"cpu_busy": None}) is None and not host_load.loaded({})
    assert host_load.foreign_share({"cpu_busy": 0.5, "cpu_busy_own": 0.52}) == 0.0  # tick rounding: never < 0


class _Host:
    """Host readings whose first ``loaded`` rounds show other processes using 60 % of the CPU."""

    def __init__(self, loaded: int):
        self.loaded, self.calls = loaded, 0

    def start(self):
        return {}

    def finish(self, reading):
        self.calls += 1
        own = 0.4 if self.calls <= self.loaded else 0.98
        return {
            "host_load": 1.9,
            "host_load_own": 1.0,
            "cpu_busy": 1.0,
            "cpu_busy_own": own,
            "cpu_mhz": None,
            "boot": "b",
        }


class _Runner:
    info = SimpleNamespace(device="cpu")

    def infer(self, x):
        return np.zeros((1, 4), dtype=np.float32)


def _store(tmp_path):
    store = RunStore(tmp_path / "r.duckdb", "r")
    store.start_run({"label": "r", "profile": "quick"})
    return store


@pytest.mark.parametrize("loaded, retakes, kept_loaded", [(0, 2, False), (1, 2, False), (2, 2, False), (5, 2, True)])
def test_a_loaded_round_is_measured_again_and_the_attempt_kept(tmp_path, loaded, retakes, kept_loaded):
    store = _store(tmp_path)
    states = np.zeros((2, 4, 84, 84), dtype=np.uint8)
    host = _Host(loaded)
    rounds.measure_round(
        store, "x", _Runner(), 0, 0, states, 2, 50, host, 0, "before-play", 0, retakes=retakes, pause=0.0
    )
    attempts = min(loaded, retakes)
    kept = store.con.execute("SELECT attempt, conditions, len(seconds) FROM retaken ORDER BY attempt").fetchall()
    assert [a for a, _, _ in kept] == list(range(attempts)) and all(n == 50 for *_, n in kept)
    assert all(host_load.loaded(json.loads(c)) for _, c, _ in kept)  # each superseded attempt ran loaded
    (conditions,) = store.con.execute("SELECT conditions FROM rounds").fetchone()
    c = json.loads(conditions)
    assert c.get("retakes", 0) == attempts and host_load.loaded(c) is kept_loaded
    assert bool(c.get("flagged")) is kept_loaded
    assert store.con.execute("SELECT count(*) FROM latency").fetchone() == (50,)  # only the attempt that counts
    store.close()


def test_each_attempt_counts_its_own_samples_and_a_retake_says_why(tmp_path):
    """The progress of a round measured again for load never runs past its total (5900/2000 was seen): each
    attempt is a phase of its own, and a retake names itself and its reason."""
    from contextlib import contextmanager

    phases = []

    class _UI:
        @contextmanager
        def phase(self, description, total, in_flight=1):
            done = [description, total, 0]
            phases.append(done)
            yield lambda n: done.__setitem__(2, done[2] + n)

    store = _store(tmp_path)
    states = np.zeros((2, 4, 84, 84), dtype=np.uint8)
    progress = rounds.attempts_progress(_UI(), "x: latency round 1/10", 200, 2)
    rounds.measure_round(store, "x", _Runner(), 0, 0, states, 2, 200, _Host(1), 0, "before-play", 0, progress, 2, 0.0)
    assert phases == [
        ["x: latency round 1/10", 200, 200],
        ["x: latency round 1/10 again (1 of 2): other processes loaded the CPU", 200, 200],
    ]
    store.close()


def test_attempts_a_stopped_session_kept_are_never_numbered_again(tmp_path):
    store = _store(tmp_path)
    states = np.zeros((2, 4, 84, 84), dtype=np.uint8)
    # a session stopped after round 3's first loaded attempt of "x": the round itself was never stored
    store.add_retaken("x", 3, 0, now(), [0.001] * 5, {"phase": "before-play", "repeat": 0})
    assert rounds.next_round(store.con, store.run_id) == 4  # a new round never takes 3's number
    rounds.measure_round(store, "x", _Runner(), 3, 0, states, 2, 5, _Host(1), 0, "before-play", 0, pause=0.0)
    assert store.con.execute("SELECT attempt FROM retaken ORDER BY 1").fetchall() == [(0,), (1,)]
    (conditions,) = store.con.execute("SELECT conditions FROM rounds").fetchone()
    assert json.loads(conditions)["retakes"] == 2
    store.close()


def test_the_page_counts_rounds_measured_again_and_still_loaded(tmp_path):
    from site_gen.analysis import load_summary
    from site_gen.load import RunRows, RuntimeRows

    rt = RuntimeRows("x", 0, "X", "t", "cpu", "fp32", "", "available", None, None, None)
    rt.round_info = [
        {"round": 0, "conditions": {"retakes": 1, "cpu_busy": 1.0, "cpu_busy_own": 0.97}},
        {"round": 1, "conditions": {"retakes": 2, "cpu_busy": 1.0, "cpu_busy_own": 0.5}},
        {"round": 2, "conditions": {"cpu_busy": 1.0, "cpu_busy_own": 0.99}},
    ]
    run = RunRows(
        tmp_path / "r.duckdb",
        {"run_id": "r", "settings": {"retakes": 2}},
        [rt],
        retaken=[("x", 0, 0), ("x", 1, 0), ("x", 1, 1)],
    )
    assert load_summary(run) == {"rounds": 3, "retaken": 2, "loaded": 1, "retaking": True, "retakes": 2}
    older = RunRows(tmp_path / "r.duckdb", {"run_id": "r", "settings": {}}, [rt])
    assert load_summary(older)["retaking"] is False


def _run_file(folder, repeats=2, status="complete", have=0):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "run.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE runs (status VARCHAR, settings JSON)")
    con.execute("CREATE TABLE repeats (repeat INTEGER)")
    con.execute(
        "INSERT INTO runs VALUES (?, ?)",
        [status, json.dumps({"repeats": repeats, "repeat_rounds": 1, "repeat_pause_s": 0})],
    )
    for k in range(have):
        con.execute("INSERT INTO repeats VALUES (?)", [k + 1])
    con.close()
    return path


def test_a_run_owes_its_repeats_until_the_file_holds_them(tmp_path):
    assert after_run.owed(_run_file(tmp_path / "a")) == (2, 0)
    assert after_run.owed(_run_file(tmp_path / "b", have=2)) == (2, 2)
    assert after_run.owed(_run_file(tmp_path / "c", status="incomplete")) == (0, 0)  # no repeat of a cut run


def test_each_repeat_is_a_fresh_process_and_a_failed_one_stops_the_rest(tmp_path, monkeypatch):
    path = _run_file(tmp_path / "run")
    started = []

    class Child:
        def __init__(self, cmd, start_new_session, preexec_fn=None):
            started.append((cmd, start_new_session and callable(preexec_fn)))  # and it ends with its parent
            self.code = 0 if len(started) == 1 else 3

        def wait(self, timeout=None):
            return self.code

        def poll(self):
            return self.code

    monkeypatch.setattr(subprocess, "Popen", Child)
    said = []
    options = SimpleNamespace(
        cuda_index=0, model_path=None, artifacts=tmp_path / "a", allow_mixed_onnxruntime=False, quiet=True
    )
    assert after_run.take(path, options, said.append) == 3
    assert [cmd[cmd.index("--repeat") + 1] for cmd, _ in started] == [str(path)] * 2
    assert all(cmd[0] == sys.executable and new for cmd, new in started)  # a fresh interpreter, its own session
    assert "--rounds" in started[0][0] and started[0][0][started[0][0].index("--rounds") + 1] == "1"
    assert "a repeat ended with exit code 3" in said[-1] and "rtreport collect --resume" in said[-1]


def test_a_stop_signal_during_a_repeat_reaches_it_and_ends_the_rest(tmp_path):
    """SIGTERM to collect while a repeat runs: the repeat (a process of its own session) gets it too, and no
    further repeat starts."""
    path = _run_file(tmp_path / "run")
    marker = tmp_path / "got"
    child = (
        f"import signal, sys, time, pathlib\n"
        f"signal.signal(signal.SIGTERM, lambda *a: (pathlib.Path({str(marker)!r}).write_text('term'), "
        f"sys.exit(143)))\ntime.sleep(30)\n"
    )
    script = tmp_path / "parent.py"
    script.write_text(
        "import sys, subprocess\n"
        "from types import SimpleNamespace\n"
        "from pathlib import Path\n"
        "from collect import after_run\n"
        f"after_run.command = lambda path, rounds, options: [sys.executable, '-c', {child!r}]\n"
        "o = SimpleNamespace(cuda_index=0, model_path=None, artifacts=None, allow_mixed_onnxruntime=False,"
        " quiet=True)\n"
        f"sys.exit(after_run.take(Path({str(path)!r}), o, lambda line: print(line, flush=True)))\n"
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[1]), os.environ.get("PYTHONPATH", "")]),
    }
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True, env=env)
    time.sleep(2.5)
    parent.send_signal(signal.SIGTERM)
    out, _ = parent.communicate(timeout=60)
    assert parent.returncode == 143 and marker.read_text() == "term"
    assert out.count("in a fresh process") == 1 and "keeps the complete run and 0 of its 2 repeats" in out


@pytest.mark.slow  # a long end-to-end run: python -m pytest -m slow (CI runs it)
def test_a_run_made_without_repeats_takes_them_on_resume_and_leaves_opt_in_runtimes_out(tmp_path):
    """``--repeats 0`` leaves the speed gate unconfirmed; ``--resume --repeats 1`` takes the one now owed, in a fresh
    process, of the runtimes the run measured: the opt-in ones a plain run left out stay out."""
    from click.testing import CliRunner

    from rtreport_cli.main import main

    out = tmp_path / "r.duckdb"
    result = CliRunner().invoke(
        main,
        [
            "collect",
            "--quick",
            "--out",
            str(out),
            "--label",
            "r",
            "--repeats",
            "0",
            "--artifacts",
            str(tmp_path / "a"),
            "--quiet",
        ],
    )
    assert result.exit_code == 0, result.output
    assert after_run.owed(out) == (0, 0)
    result = CliRunner().invoke(
        main, ["collect", "--resume", str(out), "--repeats", "1", "--artifacts", str(tmp_path / "a"), "--quiet"]
    )
    assert result.exit_code == 0, result.output
    con = duckdb.connect(str(out), read_only=True)
    try:
        assert con.execute("SELECT repeat FROM repeats").fetchall() == [(1,)]
        measured = {r for (r,) in con.execute("SELECT DISTINCT runtime_id FROM repeat_state_q").fetchall()}
        assert measured == {"torch-cpu-fp32", "ort-cpu-fp32"}
        left_out = dict(
            con.execute(
                "SELECT runtime_id, status FROM runtimes WHERE runtime_id LIKE '%int8%' OR runtime_id LIKE 'openvino%'"
            ).fetchall()
        )
        assert left_out and set(left_out.values()) == {"unavailable"}
    finally:
        con.close()


def test_the_provenance_says_which_commands_were_the_repeats_after_the_protocol():
    """The run's "finished" is the protocol's end; its repeats come later, each a command of its own in a fresh
    process, and the provenance table says which commands they were."""
    from site_gen.describe import provenance_rows
    from site_gen.i18n import Translator
    from site_gen.load import load_file

    from conftest import ROOT

    (run,) = load_file(ROOT / "data" / "cpu-epyc-2core-4.duckdb")
    assert run.repeat_sessions == {1: 1, 2: 2}
    for lang, label, finished, repeat in (
        ("en", "Commands that wrote it", "Protocol finished (UTC)", "(repeat 2 in a fresh process, complete)"),
        ("zh-tw", "寫入這份資料的指令", "量測流程結束時間（UTC）", "（新行程中的第 2 次重複量測，完成）"),
    ):
        rows = dict(
            provenance_rows(
                SimpleNamespace(rows=run, runtimes=[], runtime=lambda rid: None, reference_id=None), Translator(lang)
            )
        )
        assert rows[finished] == str(run.run["finished_at"])[:19]
        sessions = rows[label]
        assert sessions.count("in a fresh process" if lang == "en" else "重複量測") == 2 and repeat in sessions
        assert sessions.index(str(run.run["finished_at"])[11:16]) < sessions.index(repeat)
