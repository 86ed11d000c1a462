"""`rtreport collect` on the CPU: the real ALE, PyTorch and ONNX Runtime, into a real DuckDB file."""

import json
import multiprocessing
import time

import duckdb
import numpy as np
import pytest
import torch
from click.testing import CliRunner

from collect import collector as collector_module
from collect import measure, paths
from collect.artifacts import Artifacts
from rtreport_cli.main import main
from collect.collect_command import run_collect
from collect.options import CollectOptions
from collect.model_input import load_model
from collect.agent.network import QNetwork, export_onnx
from collect.play import Players, Task, auto_workers
from collect.registry import Runtime, all_runtimes
from conftest import ctrl_c_at_game

CPU_RUNTIMES = ["torch-cpu-fp32", "ort-cpu-fp32"]


@pytest.fixture(scope="module")
def quick_db(quick_collect):
    """The test run's one quick collect (conftest), opened read-only, and what it printed."""
    out, output = quick_collect
    con = duckdb.connect(str(out), read_only=True)
    yield con, output
    con.close()


def test_quick_run_records_provenance_and_every_runtime(quick_db):
    con, output = quick_db
    assert dict(con.execute("SELECT * FROM meta").fetchall()) == {"application": "rtreport", "schema_version": "3"}
    run = con.execute(
        "SELECT status, profile, label, reference_runtime, model_format, num_actions, eval_epsilon, "
        "environment, cpu, model_sha256, code_hash, rtreport_version, fixed_states_sha256, "
        "seeds_sha256 FROM runs"
    ).fetchall()
    assert len(run) == 1
    status, profile, label, reference, fmt, actions, eps, env, cpu, sha, code, version, states, seeds = run[0]
    assert (status, profile, label, reference, fmt, actions, eps) == (
        "complete",
        "quick",
        "ci-cpu",
        "torch-cpu-fp32",
        "pytorch",
        4,
        0.01,
    )
    env = json.loads(env)
    assert env["torch"] and env["onnxruntime"] and env["ale-py"] and cpu and len(sha) == 64
    assert len(code) == 64 and version and len(states) == 64 and len(seeds) == 64
    rows = dict(con.execute("SELECT runtime_id, status FROM runtimes").fetchall())
    assert set(rows) == {s.id for s in all_runtimes()}
    assert sorted(r for r, s in rows.items() if s == "available") == sorted(CPU_RUNTIMES)
    opt_in = dict(
        con.execute(
            "SELECT runtime_id, reason FROM runtimes WHERE runtime_id IN "
            "('ort-cpu-int8', 'openvino-cpu-fp32', 'openvino-cpu-int8')"
        ).fetchall()
    )
    assert len(opt_in) == 3 and all(
        r.startswith("opt-in: measured only when --runtimes names it") for r in opt_in.values()
    )
    reasons = con.execute("SELECT runtime_id, reason FROM runtimes WHERE status = 'unavailable'").fetchall()
    assert reasons and all(reason for _, reason in reasons)
    ort_row = con.execute(
        "SELECT artifact_bytes, prepare_seconds FROM runtimes WHERE runtime_id = 'ort-cpu-fp32'"
    ).fetchone()
    assert ort_row[0] > 1_000_000 and ort_row[1] > 0
    assert "torch-cpu-fp32" in output and "8/8" in output and "wrote" in output  # the closing table
    settings = json.loads(con.execute("SELECT settings FROM runs").fetchone()[0])
    # on the CPU every game slot decides in turn: no runtime's decisions overlap, and the file says so
    assert settings["play_slots"] == 1 and settings["play_overlap"] == {}


def test_quick_run_stores_raw_observations(quick_db):
    con, _ = quick_db
    for rid in CPU_RUNTIMES:
        n = con.execute("SELECT count(*) FROM latency WHERE runtime_id = ? AND kind = 'decision'", [rid]).fetchone()[0]
        assert n == 3 * 300 + 2 * 1 * 300  # the run's 3 rounds, and its 2 repeats' round each (fresh processes)
        repeats = con.execute(
            "SELECT round, conditions->>'repeat' FROM rounds WHERE runtime_id = ? AND "
            "conditions->>'phase' = 'repeat' ORDER BY round",
            [rid],
        ).fetchall()
        assert repeats == [(3, "1"), (4, "2")]
        sizes = [
            r[0]
            for r in con.execute(
                "SELECT DISTINCT batch_size FROM latency WHERE runtime_id = ? AND kind = 'batch' ORDER BY 1", [rid]
            ).fetchall()
        ]
        assert sizes == [1, 8, 32]
        q = con.execute(
            "SELECT q_values, action FROM state_q WHERE runtime_id = ? ORDER BY state_index", [rid]
        ).fetchall()
        assert len(q) == 8 and all(len(v) == 4 and a == int(np.argmax(v)) for v, a in q)
        episodes = con.execute(
            "SELECT seed, steps, truncated, step_cap FROM episodes WHERE runtime_id = ? ORDER BY seed", [rid]
        ).fetchall()
        assert [e[0] for e in episodes] == [1000, 1001]
        for seed, steps, truncated, cap in episodes:
            assert cap == 150 and steps <= 150
            trace, source = con.execute(
                "SELECT actions, source FROM episodes WHERE runtime_id = ? AND seed = ?", [rid, seed]
            ).fetchone()
            if source is None:  # played: its own trace
                assert len(trace) == steps and set(trace) <= {0, 1, 2, 3}
            else:  # the reuse rule: the reference's episode, established by the shadow
                assert (rid, seed, source, trace) == ("ort-cpu-fp32", 1001, "torch-cpu-fp32", None)
    # the shadow saw every decision of the reference's two games, and both agreed on all of them
    rows = con.execute(
        "SELECT runtime_id, seed, driver, decisions, same, first_flip, complete FROM shadow "
        "WHERE runtime_id = 'ort-cpu-fp32' ORDER BY seed"
    ).fetchall()
    steps = dict(con.execute("SELECT seed, steps FROM episodes WHERE runtime_id = 'torch-cpu-fp32'").fetchall())
    assert rows == [("ort-cpu-fp32", s, "torch-cpu-fp32", steps[s], steps[s], None, True) for s in (1000, 1001)]


def test_torch_and_ort_cpu_agree_on_the_fixed_states(tmp_path):
    model = load_model(paths.AGENT_WEIGHTS)
    artifacts = Artifacts(tmp_path, model.onnx_source())
    states = np.load(paths.FIXED_STATES)
    specs = {s.id: s for s in all_runtimes()}
    q = {}
    for rid in CPU_RUNTIMES:
        with specs[rid].make(model, artifacts, 0) as runner:
            q[rid] = measure.state_q_values(runner, states)
    assert np.abs(q["torch-cpu-fp32"] - q["ort-cpu-fp32"]).max() <= 1e-4
    np.testing.assert_array_equal(q["torch-cpu-fp32"].argmax(1), q["ort-cpu-fp32"].argmax(1))


def test_same_runtime_and_seed_twice_give_identical_actions(tmp_path):
    model = load_model(paths.AGENT_WEIGHTS)
    spec = next(s for s in all_runtimes() if s.id == "ort-cpu-fp32")
    with spec.make(model, Artifacts(tmp_path, model.onnx_source()), 0) as runner:
        first, _ = measure.play(runner, 1000, None)
        second, _ = measure.play(runner, 1000, None)
    assert first.steps > 500 and first.actions == second.actions and first.score == second.score


def test_list_runtimes_says_why_not():
    result = CliRunner().invoke(main, ["collect", "--list-runtimes"])
    assert result.exit_code == 0
    for spec in all_runtimes():
        assert spec.id in result.output
    assert "does not run here:" in result.output


# -- bad input: one clear line, exit status 2, no traceback ----------------------------------------


def _bad(args, expected):
    result = CliRunner().invoke(main, ["collect", "--quiet", *args])
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and expected in lines[0], result.output


def test_missing_model(tmp_path):
    _bad(["--model", str(tmp_path / "nope.pt"), "--out", str(tmp_path / "x.duckdb")], "not found")


def test_corrupt_models(tmp_path):
    for name, expected in (("bad.pt", "not a PyTorch checkpoint"), ("bad.onnx", "cannot read")):
        (tmp_path / name).write_bytes(b"\x00garbage" * 100)
        _bad(["--model", str(tmp_path / name), "--out", str(tmp_path / "x.duckdb")], expected)


def test_wrong_action_count(tmp_path):
    torch.save(QNetwork(6).state_dict(), tmp_path / "six.pt")
    _bad(["--model", str(tmp_path / "six.pt"), "--out", str(tmp_path / "x.duckdb")], "6 actions")
    export_onnx(QNetwork(6), tmp_path / "six.onnx")
    _bad(["--model", str(tmp_path / "six.onnx"), "--out", str(tmp_path / "x.duckdb")], "6 actions")


def test_wrong_input_shape(tmp_path):
    class Small(torch.nn.Module):
        def forward(self, x):
            return x.float().mean(dim=(2, 3))

    torch.onnx.export(
        Small(),
        (torch.zeros((1, 4, 64, 64), dtype=torch.uint8),),
        str(tmp_path / "small.onnx"),
        input_names=["observation"],
        dynamic_axes={"observation": {0: "batch"}},
        dynamo=False,
    )
    _bad(["--model", str(tmp_path / "small.onnx"), "--out", str(tmp_path / "x.duckdb")], "(N, 4, 84, 84)")
    bad_state = QNetwork().state_dict()
    bad_state["network.0.weight"] = torch.zeros((32, 3, 8, 8))
    torch.save(bad_state, tmp_path / "three.pt")
    _bad(["--model", str(tmp_path / "three.pt"), "--out", str(tmp_path / "x.duckdb")], "(N, 4, 84, 84)")


def test_existing_out_is_refused_unless_overwrite(tmp_path):
    out = tmp_path / "taken.duckdb"
    out.write_bytes(b"keep me")
    _bad(["--out", str(out)], "already exists")
    assert out.read_bytes() == b"keep me"


def test_unwritable_out(tmp_path):
    _bad(["--out", str(tmp_path / "no" / "such" / "folder" / "x.duckdb")], "does not exist")
    _bad(["--out", str(tmp_path)], "is a folder")


def test_unknown_runtime_and_device(tmp_path):
    _bad(["--runtimes", "torch-cpu-fp32,tpu-magic", "--out", str(tmp_path / "x.duckdb")], "unknown runtime tpu-magic")
    _bad(["--device", "gpu-zero", "--out", str(tmp_path / "x.duckdb")], "--device")


# -- faults during a run ------------------------------------------------------------------------------


def test_a_runtime_failing_mid_run_is_recorded_and_the_others_go_on(tmp_path, monkeypatch):
    real = all_runtimes()
    ort_spec = next(s for s in real if s.id == "ort-cpu-fp32")

    def make_flaky(model, artifacts, cuda):
        runner = ort_spec.make(model, artifacts, cuda)
        calls = {"n": 0}
        original = runner.infer_impl

        def infer_impl(batch):
            calls["n"] += 1
            if calls["n"] > 400:  # past warm-up, latency and batch sweep: during the fixed states
                raise RuntimeError("simulated device fault")
            return original(batch)

        runner.infer_impl = infer_impl
        return runner

    flaky = Runtime("flaky-cpu-fp32", "Flaky", "cpu", "fp32", make=make_flaky)
    monkeypatch.setattr(collector_module, "all_runtimes", lambda: [*real, flaky])
    monkeypatch.setattr("collect.collect_command.all_runtimes", lambda: [*real, flaky])
    out = tmp_path / "f.duckdb"
    code = run_collect(
        CollectOptions(
            runtime_list="flaky-cpu-fp32,torch-cpu-fp32",
            out=out,
            label="f",
            artifacts=tmp_path / "a",
            quick=True,
            quiet=True,
        )
    )
    assert code == 5  # a runtime named in --runtimes failed: the run is kept, and the exit says so
    con = duckdb.connect(str(out), read_only=True)
    rows = {r[0]: r[1:] for r in con.execute("SELECT runtime_id, status, reason FROM runtimes").fetchall()}
    assert rows["flaky-cpu-fp32"][0] == "failed" and "simulated device fault" in rows["flaky-cpu-fp32"][1]
    assert rows["torch-cpu-fp32"][0] == "available"
    assert con.execute("SELECT count(*) FROM latency WHERE runtime_id = 'flaky-cpu-fp32'").fetchone()[0] > 0
    assert con.execute("SELECT count(*) FROM episodes WHERE runtime_id = 'torch-cpu-fp32'").fetchone()[0] == 2
    assert con.execute("SELECT status FROM runs").fetchone()[0] == "complete"


def test_ctrl_c_leaves_a_valid_file_marked_incomplete(tmp_path, monkeypatch):
    ctrl_c_at_game(monkeypatch, 2)
    out = tmp_path / "c.duckdb"
    code = run_collect(
        CollectOptions(
            runtime_list="torch-cpu-fp32,ort-cpu-fp32",
            out=out,
            label="c",
            artifacts=tmp_path / "a",
            quick=True,
            quiet=True,
        )
    )
    assert code == 130
    con = duckdb.connect(str(out), read_only=True)
    status, detail = con.execute("SELECT status, status_detail FROM runs").fetchone()
    assert status == "incomplete" and "play" in detail
    assert con.execute("SELECT count(*) FROM episodes").fetchone()[0] == 1
    # the rounds before play (2 of --quick's 3; the third comes after play)
    assert con.execute("SELECT count(*) FROM latency WHERE kind = 'decision'").fetchone()[0] == 2 * 2 * 300


# -- episodes played by several processes ------------------------------------------------------------


def _episodes(con, rid):
    rows = con.execute(
        "SELECT seed, score, steps, truncated, source FROM episodes WHERE runtime_id = ? ORDER BY seed", [rid]
    ).fetchall()
    traces = con.execute("SELECT seed, actions FROM episodes WHERE runtime_id = ? ORDER BY seed", [rid]).fetchall()
    return rows, traces


def _no_workers_left(seconds=15.0):
    """True once every worker process has exited (the pool's own thread may be reaping one a moment longer)."""
    deadline = time.monotonic() + seconds
    while multiprocessing.active_children():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


@pytest.mark.slow  # a long end-to-end run: python -m pytest -m slow (CI runs it)
def test_parallel_play_gives_exactly_the_episodes_one_process_gives(quick_db, tmp_path):
    sequential, _ = quick_db
    out = tmp_path / "p.duckdb"
    code = run_collect(
        CollectOptions(
            runtime_list=",".join(CPU_RUNTIMES),
            out=out,
            label="p",
            artifacts=tmp_path / "a",
            quick=True,
            quiet=True,
            play_workers=2,
        )
    )
    assert code == 0
    con = duckdb.connect(str(out), read_only=True)
    settings = json.loads(con.execute("SELECT settings FROM runs").fetchone()[0])
    assert settings["play_workers"] == 2
    for rid in CPU_RUNTIMES:
        rows, traces = _episodes(con, rid)
        assert len(rows) == 2
        assert (rows, traces) == _episodes(sequential, rid)
    shadow = "SELECT runtime_id, seed, driver, decisions, same, first_flip FROM shadow ORDER BY ALL"
    assert con.execute(shadow).fetchall() == sequential.execute(shadow).fetchall()
    assert _no_workers_left()


def test_auto_play_workers():
    assert auto_workers(["cpu", "cpu"], 30) == 1
    assert 1 <= auto_workers(["cpu", "cuda"], 30) <= 8 and auto_workers(["cuda"], 1) == 1


def _ort(tmp_path, artifacts=None):
    model = load_model(paths.AGENT_WEIGHTS)
    artifacts = artifacts or Artifacts(tmp_path, model.onnx_source())
    spec = next(s for s in all_runtimes() if s.id == "ort-cpu-fp32")
    runner = spec.make(model, Artifacts(tmp_path / "parent", model.onnx_source()), 0)
    runner.prepare()
    return runner, artifacts


def test_a_play_worker_that_cannot_prepare_is_an_error_not_a_hang(tmp_path):
    model = load_model(paths.AGENT_WEIGHTS)
    gone = Artifacts(tmp_path, model.onnx_source(), made={"model.onnx": (tmp_path / "gone.onnx", 0.0)})
    runner, artifacts = _ort(tmp_path, gone)
    tasks = [Task("ort-cpu-fp32", (), s, 10) for s in (1000, 1001)]
    with Players({"ort-cpu-fp32": runner}, 2, paths.AGENT_WEIGHTS, artifacts, 0) as players:
        results = list(players.run(tasks))
    assert [r for _, r, _ in results] == [None, None]
    assert all("play worker could not prepare it" in str(f) and f.runtime_id == "ort-cpu-fp32" for _, _, f in results)
    assert _no_workers_left()


@pytest.mark.slow  # a long end-to-end run: python -m pytest -m slow (CI runs it)
def test_ctrl_c_during_parallel_play_keeps_the_episodes_stored(tmp_path, monkeypatch):
    real_next = Players.next_result
    calls = []

    def next_result(self):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real_next(self)

    monkeypatch.setattr(Players, "next_result", next_result)
    out = tmp_path / "c.duckdb"
    code = run_collect(
        CollectOptions(
            runtime_list="torch-cpu-fp32,ort-cpu-fp32",
            out=out,
            label="c",
            artifacts=tmp_path / "a",
            quick=True,
            quiet=True,
            play_workers=2,
        )
    )
    assert code == 130
    con = duckdb.connect(str(out), read_only=True)
    assert con.execute("SELECT status FROM runs").fetchone()[0] == "incomplete"
    # one game ended before the stop (whichever seed it was), stored with any episode it established
    assert con.execute("SELECT count(*) FROM episodes WHERE source IS NULL").fetchone()[0] == 1
    assert _no_workers_left()


@pytest.mark.slow  # a long end-to-end run: python -m pytest -m slow (CI runs it)
def test_a_play_worker_that_dies_breaks_the_pool_instead_of_hanging_it(tmp_path):
    from concurrent.futures.process import BrokenProcessPool

    runner, artifacts = _ort(tmp_path)
    artifacts.onnx_fp32()
    tasks = [Task("ort-cpu-fp32", (), s, None) for s in (1000, 1001, 1002, 1003)]  # whole games: long enough
    with pytest.raises(BrokenProcessPool):
        with Players({"ort-cpu-fp32": runner}, 2, paths.AGENT_WEIGHTS, artifacts, 0) as players:
            episodes = players.run(tasks)
            next(episodes)
            players.processes()[0].kill()
            list(episodes)
    assert _no_workers_left()


def test_the_play_copy_of_a_runner_computes_the_same_numbers(tmp_path):
    runner, _ = _ort(tmp_path)
    twin = runner.for_play()
    states = np.load(paths.FIXED_STATES)
    try:
        assert twin is not runner
        np.testing.assert_array_equal(measure.state_q_values(twin, states), measure.state_q_values(runner, states))
    finally:
        twin.close()
        runner.close()


def test_a_run_file_is_compacted_with_every_row_kept_and_a_file_it_cannot_read_is_left_alone(tmp_path):
    import duckdb

    from collect.store import compact

    path = tmp_path / "run.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, q FLOAT[], note VARCHAR)")
    for i in range(300):  # many small transactions, as collect writes, some rows rewritten: free blocks
        con.execute("INSERT INTO t VALUES (?, ?, ?)", [i, [float(i), 0.5], "x" * 2000])
        if i % 3 == 0:
            con.execute("UPDATE t SET note = ? WHERE k = ?", ["y" * 3000, i])
        if i % 20 == 0:
            con.execute("CHECKPOINT")
    con.execute("DELETE FROM t WHERE k % 2 = 0")
    con.execute("CHECKPOINT")
    before = con.execute("SELECT * FROM t ORDER BY k").fetchall()
    con.close()
    size = path.stat().st_size
    assert compact(path) is True
    assert path.stat().st_size < size
    con = duckdb.connect(str(path), read_only=True)
    assert con.execute("SELECT * FROM t ORDER BY k").fetchall() == before
    assert con.execute(
        "SELECT constraint_type FROM duckdb_constraints() WHERE table_name = 't' AND constraint_type = 'PRIMARY KEY'"
    ).fetchall() == [("PRIMARY KEY",)]
    con.close()
    assert not list(tmp_path.glob("*.compact*"))
    bad = tmp_path / "bad.duckdb"
    bad.write_bytes(b"not a DuckDB file")
    assert compact(bad) is False and bad.read_bytes() == b"not a DuckDB file"


@pytest.mark.slow  # a long end-to-end run: python -m pytest -m slow (CI runs it)
def test_play_workers_end_when_their_main_process_is_killed_outright(tmp_path):
    """SIGKILL gives the main process no chance to stop its workers: idle ones notice and end instead of holding
    their cores (and, on a GPU, their contexts) for good."""
    import os
    import signal
    import subprocess
    import sys
    from pathlib import Path

    script = tmp_path / "main.py"
    script.write_text(f"""
import sys, time
sys.path.insert(0, {str(Path(__file__).resolve().parents[1])!r})
from collect import paths
from collect.artifacts import Artifacts
from collect.model_input import load_model
from collect.play import Players
from collect.registry import all_runtimes
if __name__ == "__main__":  # the workers are spawned: they import this file
    model = load_model(paths.AGENT_WEIGHTS)
    artifacts = Artifacts({str(tmp_path / "a")!r}, model.onnx_source())
    runner = next(s for s in all_runtimes() if s.id == "ort-cpu-fp32").make(model, artifacts, 0)
    runner.prepare()
    with Players({{"ort-cpu-fp32": runner}}, 2, paths.AGENT_WEIGHTS, artifacts, 0) as players:
        players.wait_started()
        print(" ".join(str(p.pid) for p in players.processes()), flush=True)
        time.sleep(600)
""")
    main = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    pids = [int(p) for p in main.stdout.readline().split()]
    assert len(pids) == 2
    main.send_signal(signal.SIGKILL)
    main.wait(timeout=10)

    def alive(pid):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return not Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"

    deadline = time.monotonic() + 20
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(alive(p) for p in pids)
