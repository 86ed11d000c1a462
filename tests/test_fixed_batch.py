"""A model whose input fixes the batch size, for real on the CPU: a CartPole ONNX exported without a dynamic batch
axis is measured at batch 1 by ONNX Runtime, its INT8 and OpenVINO, the sweep's stop and its reason in the file and
on both languages' pages; a TorchScript module that takes one observation is told apart; an ONNX fixed at another
batch size is one line."""

from __future__ import annotations

import html
import json

import duckdb
import pytest
import torch
from click.testing import CliRunner

from collect import fixed_batch, tasks
from collect.model_input import load_model
from rtreport_cli.main import main
from site_gen.i18n import Translator

RUNTIMES = ("ort-cpu-fp32", "ort-cpu-int8", "openvino-cpu-fp32")
CARTPOLE = tasks.for_env("CartPole-v1")


def _mlp() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.Tanh(), torch.nn.Linear(16, 2)).eval()


def _export(path, batch: int, dynamic: bool = False):
    torch.onnx.export(
        _mlp(),
        torch.zeros(batch, 4),
        str(path),
        input_names=["observation"],
        output_names=["q"],
        dynamic_axes={"observation": {0: "batch"}} if dynamic else None,
        dynamo=False,
    )
    return path


class OneObservation(torch.nn.Module):
    """A module whose code takes one observation: ``reshape(1, 4)`` fixes its batch at 1."""

    def __init__(self):
        super().__init__()
        self.net = _mlp()

    def forward(self, x):
        return self.net(x.reshape(1, 4))


@pytest.fixture(scope="module")
def fixed_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("fixed")
    model = _export(folder / "fixed.onnx", 1)
    out = folder / "run.duckdb"
    args = ["collect", "--quick", "--quiet", "--repeats", "0", "--env", "CartPole-v1", "--model", str(model)]
    result = CliRunner().invoke(
        main, [*args, "--runtimes", ",".join(RUNTIMES), "--out", str(out), "--artifacts", str(folder / "art")]
    )
    assert result.exit_code == 0, result.output
    site = folder / "site"
    built = CliRunner().invoke(main, ["build", str(out), "--out", str(site)])
    assert built.exit_code == 0, built.output
    return out, site


def test_a_fixed_batch_onnx_is_measured_at_batch_1_by_every_cpu_runtime(fixed_run):
    out, _ = fixed_run
    con = duckdb.connect(str(out), read_only=True)
    try:
        status = dict(con.execute("SELECT runtime_id, status FROM runtimes").fetchall())
        sweep = con.execute("SELECT DISTINCT runtime_id, batch_size FROM latency WHERE kind = 'batch'").fetchall()
        states = dict(con.execute("SELECT runtime_id, count(*) FROM state_q GROUP BY runtime_id").fetchall())
        played = {r[0] for r in con.execute("SELECT DISTINCT runtime_id FROM latency WHERE kind != 'batch'").fetchall()}
        episodes = con.execute("SELECT count(*) FROM episodes").fetchone()[0]
        settings = json.loads(con.execute("SELECT settings FROM runs").fetchone()[0])
        details = json.loads(
            con.execute("SELECT details FROM runtimes WHERE runtime_id = 'ort-cpu-int8'").fetchone()[0]
        )
    finally:
        con.close()
    assert status == {rid: "available" for rid in RUNTIMES}
    assert sorted(sweep) == sorted((rid, 1) for rid in RUNTIMES)  # the sweep stops at what the model takes
    assert set(states) == set(RUNTIMES) and len(set(states.values())) == 1  # every fixed state, one at a time
    assert played == set(RUNTIMES) and episodes > 0
    assert settings["batch_sweep_limit"] == {"batch": 1, "reason": fixed_batch.FIXED_BATCH_REASON.format(batch=1)}
    assert details["quantization"]["calibration_batch"] == 1  # calibrated in batches the model takes


def test_the_page_says_where_the_sweep_stops_and_why_in_both_languages(fixed_run):
    _, site = fixed_run
    for lang, folder in (("en", "en"), ("zh-tw", "zh-tw")):
        page = html.unescape(next((site / folder / "hardware").glob("*/index.html")).read_text())
        said = Translator(lang)("cap_throughput_fixed_batch", batch=1)
        assert said in page and said != Translator(lang)("cap_throughput")


def test_a_module_that_takes_one_observation_is_told_apart(tmp_path):
    fixed, any_batch = tmp_path / "one.pt", tmp_path / "any.pt"
    torch.jit.save(torch.jit.script(OneObservation().eval()), str(fixed))
    torch.jit.save(torch.jit.script(_mlp()), str(any_batch))
    assert load_model(fixed, CARTPOLE).fixed_batch == 1
    assert load_model(any_batch, CARTPOLE).fixed_batch is None
    assert load_model(_export(tmp_path / "dynamic.onnx", 1, dynamic=True), CARTPOLE).fixed_batch is None


def test_tensorrt_leaves_out_a_fixed_batch_model_naming_the_re_export(tmp_path):
    model = load_model(_export(tmp_path / "fixed.onnx", 1), CARTPOLE)
    why = fixed_batch.refusal(model, "TensorRT")
    assert "fixes the batch size at 1" in why and "dynamic_axes" in why and "dynamo=True" in why
    assert fixed_batch.refusal(load_model(_export(tmp_path / "d.onnx", 1, dynamic=True), CARTPOLE), "TensorRT") is None


def test_an_onnx_fixed_at_another_batch_size_is_one_line(tmp_path):
    model = _export(tmp_path / "four.onnx", 4)
    out = tmp_path / "run.duckdb"
    result = CliRunner().invoke(
        main, ["collect", "--quick", "--env", "CartPole-v1", "--model", str(model), "--out", str(out)]
    )
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "fixes the batch size at 4" in lines[0] and "dynamic_axes" in lines[0], lines
    assert not out.exists()


def test_the_registry_checks_tensorrt_against_the_model_after_its_own_reason(tmp_path):
    from collect.registry import _builds_every_batch

    model = load_model(_export(tmp_path / "fixed.onnx", 1), CARTPOLE)
    assert _builds_every_batch("TensorRT", lambda m: None)(model) == fixed_batch.refusal(model, "TensorRT")
    assert _builds_every_batch("TensorRT", lambda m: "not installed")(model) == "not installed"
    assert _builds_every_batch("TensorRT", lambda m: None)(None) is None
