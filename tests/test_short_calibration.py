"""INT8 calibration on games shorter than a calibration batch, for real: MountainCar cut at 50 steps by a run
configuration gives a calibration set that no batch of 64 divides; ONNX Runtime's and OpenVINO's INT8 calibrate on
it all the same, in equal batches."""

from __future__ import annotations

import json

import duckdb
import numpy as np
import pytest
import torch
from click.testing import CliRunner

from collect import calibration
from collect.runners.ort_int8 import CALIBRATION_BATCH, calibration_batch, quantize_qdq
from rtreport_cli.main import main

STEPS = 50  # the run configuration's max_episode_steps: every game ends there (the model never reaches the flag)
INT8 = ("ort-cpu-int8", "openvino-cpu-int8")


def _onnx(path, observation: int, actions: int):
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(observation, 16), torch.nn.Tanh(), torch.nn.Linear(16, actions))
    torch.onnx.export(
        net.eval(),
        torch.zeros(1, observation),
        str(path),
        input_names=["observation"],
        output_names=["q"],
        dynamic_axes={"observation": {0: "batch"}},
        dynamo=False,
    )
    return path


@pytest.fixture(scope="module")
def short_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("short")
    config = folder / "run.toml"
    config.write_text(f'[env]\nid = "MountainCar-v0"\nmax_episode_steps = {STEPS}\n')
    out = folder / "run.duckdb"
    result = CliRunner().invoke(
        main,
        ["collect", "--quick", "--quiet", "--repeats", "0", "--config", str(config)]
        + ["--model", str(_onnx(folder / "mc.onnx", 2, 3)), "--runtimes", ",".join(("ort-cpu-fp32", *INT8))]
        + ["--out", str(out), "--artifacts", str(folder / "art")],
    )
    assert result.exit_code == 0, result.output
    con = duckdb.connect(str(out), read_only=True)
    try:
        rows = con.execute("SELECT runtime_id, status, reason, details FROM runtimes").fetchall()
    finally:
        con.close()
    return {rid: (status, reason, json.loads(details or "{}")) for rid, status, reason, details in rows}


def test_int8_calibrates_on_games_shorter_than_a_calibration_batch(short_run):
    states = len(calibration.PLAN.seeds) * STEPS  # every step of every calibration game
    assert states % CALIBRATION_BATCH  # the case that failed: a last batch shorter than the others
    for rid in INT8:
        status, reason, details = short_run[rid]
        assert status == "available", reason
        assert details["quantization"]["calibration"]["states"] == states
    ort = short_run["ort-cpu-int8"][2]["quantization"]["calibration_batch"]
    assert states % ort == 0 and 1 < ort <= CALIBRATION_BATCH
    assert short_run["openvino-cpu-int8"][2]["quantization"]["subset_size"] == states


def test_calibration_batches_are_equal_for_a_set_of_any_size(tmp_path):
    assert calibration_batch(len(calibration.PLAN.seeds) * calibration.PLAN.states_per_game) == CALIBRATION_BATCH
    for n in (1, 7, 37, 63, 64, 65, 200, 511):
        b = calibration_batch(n)
        assert n % b == 0 and b <= CALIBRATION_BATCH and all(n % k for k in range(b + 1, CALIBRATION_BATCH + 1))
        assert calibration_batch(n, 1) == 1
    source = _onnx(tmp_path / "cartpole.onnx", 4, 2)
    for n in (37, 200):  # prime, and three batches of 64 and a short one
        states = np.random.default_rng(n).standard_normal((n, 4)).astype(np.float32)
        quantize_qdq(source, states, tmp_path / f"int8-{n}.onnx")
        assert (tmp_path / f"int8-{n}.onnx").stat().st_size > 0
