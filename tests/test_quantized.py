"""The INT8 and OpenVINO runtimes, for real on the CPU: calibration that cannot leak, and a quick collect of each."""

import hashlib
import json

import duckdb
import numpy as np
import pytest
from click.testing import CliRunner

from collect import calibration
from collect.agent.shipped import load_seeds, torch_q_function
from rtreport_cli.main import main

pytestmark = pytest.mark.slow  # real collects end to end: python -m pytest -m slow (CI runs them)

NEW = ["ort-cpu-int8", "openvino-cpu-fp32", "openvino-cpu-int8"]
SMALL = calibration.CalibrationPlan(seeds=(20000,), states_per_game=48, max_steps=240)  # a quick run's set


def test_calibration_seeds_are_none_of_the_preregistered_seeds():
    lists = load_seeds()
    judged = set(lists["evaluation"]) | set(lists["play"]) | set(lists["fixed_state_harvest"])
    assert judged >= set(range(10000, 11170)) and not set(calibration.PLAN.seeds) & judged
    assert calibration.disjoint_reason(calibration.PLAN) is None
    assert "[1000, 10500]" in calibration.disjoint_reason(calibration.CalibrationPlan(seeds=(20000, 1000, 10500)))


def test_calibration_states_are_none_of_the_fixed_states(shipped_model, fixed_states):
    states, dropped = calibration.harvest(torch_q_function(shipped_model), SMALL, fixed_states)
    assert len(states) == 48 and dropped == 0
    fixed = {s.tobytes() for s in fixed_states}
    assert not any(s.tobytes() in fixed for s in states)
    # a state that is also a fixed state is left out
    again, dropped = calibration.harvest(
        torch_q_function(shipped_model), SMALL, np.concatenate([fixed_states, states[5:6]])
    )
    assert dropped == 1 and len(again) == 47 and not any((s == states[5]).all() for s in again)


@pytest.fixture(scope="module")
def quantized_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("quantized") / "q.duckdb"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(calibration, "PLAN", SMALL)
        result = CliRunner().invoke(
            main,
            [
                "collect",
                "--quick",
                "--quiet",
                "--repeats",
                "0",  # the run's own rounds only (repeats are tested on their own)
                "--out",
                str(out),
                "--label",
                "q",
                "--artifacts",
                str(out.parent / "artifacts"),
                "--runtimes",
                ",".join(["torch-cpu-fp32", *NEW, "ort-cuda-int8"]),
            ],
        )
    # ort-cuda-int8 is named but cannot run on a machine without CUDA: the run is kept and the exit says so (5)
    assert result.exit_code == 5 and "ort-cuda-int8" in result.output.splitlines()[-1], result.output
    con = duckdb.connect(str(out), read_only=True)
    yield con, out.parent / "artifacts"
    con.close()


def test_each_new_runtime_prepares_decides_and_plays(quantized_run):
    con, _ = quantized_run
    rows = {
        r[0]: r[1:]
        for r in con.execute(
            "SELECT runtime_id, status, precision, artifact_bytes, prepare_seconds FROM runtimes"
        ).fetchall()
    }
    assert set(rows) == {"torch-cpu-fp32", *NEW, "ort-cuda-int8"}  # --runtimes chose exactly these
    for rid in NEW:
        status, precision, size, seconds = rows[rid]
        assert status == "available" and precision == rid.rsplit("-", 1)[1] and size > 1_000_000 and seconds > 0
        states = con.execute("SELECT count(*) FROM state_q WHERE runtime_id = ?", [rid]).fetchone()[0]
        decisions = con.execute(
            "SELECT count(*) FROM latency WHERE runtime_id = ? AND kind = 'decision'", [rid]
        ).fetchone()[0]
        games = con.execute("SELECT count(*) FROM episodes WHERE runtime_id = ?", [rid]).fetchone()[0]
        assert (states, decisions, games) == (8, 3 * 300, 2)
    assert rows["openvino-cpu-fp32"][2] > 3 * rows["openvino-cpu-int8"][2]  # INT8 weights: a quarter of the bytes
    status, reason = con.execute("SELECT status, reason FROM runtimes WHERE runtime_id = 'ort-cuda-int8'").fetchone()
    assert status == "unavailable" and "CUDAExecutionProvider is not in onnxruntime" in reason


def test_quantized_runtimes_share_one_recorded_calibration_set(quantized_run):
    con, artifacts = quantized_run
    details = {
        rid: json.loads(d)
        for rid, d in con.execute(
            "SELECT runtime_id, details FROM runtimes WHERE precision = 'int8' AND status = 'available'"
        ).fetchall()
    }
    assert set(details) == {"ort-cpu-int8", "openvino-cpu-int8"}
    sets = [d["quantization"]["calibration"] for d in details.values()]
    assert sets[0]["sha256"] == sets[1]["sha256"]
    artifacts = artifacts / con.execute("SELECT run_id FROM runs").fetchone()[0]  # the run's own folder
    made = np.load(artifacts / sets[0]["file"])
    assert sets[0]["seeds"] == [20000] and sets[0]["states"] == len(made) == 48
    assert hashlib.sha256((artifacts / sets[0]["file"]).read_bytes()).hexdigest() == sets[0]["sha256"]
    for rid, d in details.items():
        prepare = con.execute("SELECT prepare_seconds FROM runtimes WHERE runtime_id = ?", [rid]).fetchone()[0]
        assert prepare >= d["quantization"]["quantize_seconds"] > 0  # quantizing counts as preparing
    ov = json.loads(con.execute("SELECT details FROM runtimes WHERE runtime_id = 'openvino-cpu-fp32'").fetchone()[0])
    assert ov["compiled"]["INFERENCE_PRECISION_HINT"] == "f32" and ov["compiled"]["NUM_STREAMS"] == "1"
