"""Outputs are checked before they are believed (``collect/finite.py``): real tiny Q-networks on CartPole whose last
layer's bias is NaN or +inf, exported to ONNX, and a runtime whose outputs are not finite while the reference's are
(and the other way round). Such a runtime fails with the reason and nothing is compared with it; a reference whose
outputs are not finite ends the run in one line (exit 3) and writes nothing; no warning leaks."""

from __future__ import annotations

import warnings

import duckdb
import numpy as np
import pytest
import torch
from click.testing import CliRunner

from collect import finite, registry
from collect.registry import Runtime
from collect.runners.base import Runner
from rtreport_cli.main import main


def _net(bias: float | None):
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.Tanh(), torch.nn.Linear(16, 2))
    if bias is not None:
        with torch.no_grad():
            net[2].bias.fill_(bias)
    return net


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """{"nan" | "inf" | "ok": (TorchScript path, ONNX path)}."""
    folder = tmp_path_factory.mktemp("models")
    out = {}
    for name, bias in (("nan", float("nan")), ("inf", float("inf")), ("ok", None)):
        net = _net(bias)
        torch.jit.save(torch.jit.script(net), str(folder / f"{name}.pt"))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                net,
                (torch.zeros(1, 4),),
                str(folder / f"{name}.onnx"),
                input_names=["observation"],
                output_names=["q"],
                dynamic_axes={"observation": {0: "n"}, "q": {0: "n"}},
                dynamo=False,
            )
        out[name] = (folder / f"{name}.pt", folder / f"{name}.onnx")
    return out


class _FileRunner(Runner):
    """ONNX Runtime's CPU provider on a given ONNX file (a runtime whose conversion gave other weights)."""

    def __init__(self, info, path):
        super().__init__(info)
        self.path = path

    def prepare_impl(self):
        import onnxruntime as ort

        self.session = ort.InferenceSession(str(self.path), providers=["CPUExecutionProvider"])

    def infer_impl(self, batch):
        return self.session.run(None, {"observation": batch})[0].astype(np.float32)


def _with_runtime(monkeypatch, path):
    spec = Runtime("file-cpu-fp32", "FileRT", "cpu", "fp32", "plugin", check=lambda m: None, make=None)
    spec = Runtime(
        "file-cpu-fp32",
        "FileRT",
        "cpu",
        "fp32",
        "plugin",
        check=lambda m: None,
        make=lambda *a: _FileRunner(spec, path),
    )
    monkeypatch.setattr(registry, "plugin_runtimes", lambda taken, warn=None: [spec])


def _collect(tmp_path, model, runtimes="torch-cpu-fp32,ort-cpu-fp32"):
    out = tmp_path / "run" / "x.duckdb"
    out.parent.mkdir(exist_ok=True)
    args = ["collect", "--quick", "--repeats", "0", "--env", "CartPole-v1", "--model", str(model), "--out", str(out)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = CliRunner().invoke(main, [*args, "--runtimes", runtimes, "--artifacts", str(tmp_path / "art")])
    leaked = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert not leaked, leaked
    assert "Traceback" not in result.output and "RuntimeWarning" not in result.output, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("Error")]
    return result, out, errors


@pytest.mark.parametrize("name,word", [("nan", "NaN"), ("inf", "inf")])
@pytest.mark.parametrize("fmt", [0, 1], ids=["torchscript", "onnx"])
def test_a_reference_whose_outputs_are_not_finite_ends_the_run_in_one_line(tmp_path, models, name, word, fmt):
    runtimes = "torch-cpu-fp32,ort-cpu-fp32" if fmt == 0 else "ort-cpu-fp32"
    result, out, errors = _collect(tmp_path, models[name][fmt], runtimes)
    assert result.exit_code == 3, result.output
    assert len(errors) == 1 and f"its outputs are {word} at decision 0" in errors[0], result.output
    assert "nothing can be compared with it" in errors[0] and "100.00 %" not in result.output
    assert list(out.parent.iterdir()) == []  # nothing written, no partial left


def test_a_candidate_whose_outputs_are_nan_fails_and_is_never_compared(tmp_path, models, monkeypatch):
    _with_runtime(monkeypatch, models["nan"][1])
    result, out, errors = _collect(tmp_path, models["ok"][0], "torch-cpu-fp32,ort-cpu-fp32,file-cpu-fp32")
    assert result.exit_code == 5 and len(errors) == 1, result.output  # it was named by --runtimes
    assert "3 runtimes measured, 1 failed" in result.output
    assert "file-cpu-fp32: fixed states: its outputs are NaN" in errors[0]
    con = duckdb.connect(str(out), read_only=True)
    status, reason = con.execute("SELECT status, reason FROM runtimes WHERE runtime_id = 'file-cpu-fp32'").fetchone()
    n = con.execute("SELECT count(*) FROM task_states").fetchone()[0]
    assert status == "failed" and reason == f"fixed states: its outputs are NaN on {n} of {n} fixed states"
    for table in ("state_q", "shadow", "episodes", "latency"):
        assert not con.execute(f"SELECT count(*) FROM {table} WHERE runtime_id = 'file-cpu-fp32'").fetchone()[0]
    assert con.execute("SELECT count(*) FROM state_q WHERE runtime_id = 'ort-cpu-fp32'").fetchone()[0] == n
    con.close()


def test_a_reference_that_is_nan_where_a_runtime_is_finite_is_refused(tmp_path, models, monkeypatch):
    _with_runtime(monkeypatch, models["ok"][1])
    result, out, errors = _collect(tmp_path, models["nan"][0], "torch-cpu-fp32,file-cpu-fp32")
    assert result.exit_code == 3 and len(errors) == 1 and "the reference" in errors[0] and "NaN" in errors[0]
    assert list(out.parent.iterdir()) == []


def test_the_count_names_nan_and_inf_apart():
    q = np.array([[0.0, 1.0], [np.nan, 1.0], [np.inf, 2.0], [-np.inf, np.nan], [1.0, 2.0]], dtype=np.float32)
    assert finite.counted(q, "fixed states") == "NaN on 2 and inf on 1 of 5 fixed states"
    assert finite.counted(q[[0, 4]], "fixed states") is None
    with pytest.raises(finite.NonFiniteOutputs, match="its outputs are inf on 1 of 1 fixed states"):
        finite.check(q[[2]], "fixed states")
    with pytest.raises(finite.NonFiniteOutputs, match="NaN at decision 7 of the game on seed 3"):
        finite.check_decision(q[1], 3, 7)
    finite.check_decision(np.array([1, 2]), 3, 7)  # integer outputs are numbers
