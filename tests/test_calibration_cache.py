"""The INT8 calibration cache: a damaged one is named and made again; quantization reads the model's input name
and takes fewer states than one batch."""

import hashlib
import json

import numpy as np
import onnxruntime as ort
import pytest
import torch

from collect.calibration import cache_damage
from collect.runners.ort_int8 import quantize_qdq


def _cache(tmp_path):
    path = tmp_path / "calibration-x.npy"
    np.save(path, np.arange(12, dtype=np.float32).reshape(3, 4), allow_pickle=False)
    meta = {"sha256": hashlib.sha256(path.read_bytes()).hexdigest()}
    path.with_suffix(".json").write_text(json.dumps(meta))
    return path


def test_an_intact_cache_is_reused_and_none_is_absent(tmp_path):
    assert cache_damage(tmp_path / "calibration-none.npy") == "absent"
    assert cache_damage(_cache(tmp_path)) is None


@pytest.mark.parametrize("damage", ["truncated json", "truncated npy", "no json"])
def test_a_damaged_cache_is_named(tmp_path, damage):
    path = _cache(tmp_path)
    meta = path.with_suffix(".json")
    if damage == "truncated json":
        meta.write_text(meta.read_text()[:7])
    elif damage == "truncated npy":
        path.write_bytes(path.read_bytes()[:40])
    else:
        meta.unlink()
    reason = cache_damage(path)
    assert reason not in (None, "absent")
    assert (meta.name if damage != "truncated npy" else path.name) in reason


def test_quantization_reads_the_input_name_and_takes_a_short_set(tmp_path):
    net = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2)).eval()
    source = tmp_path / "model.onnx"
    torch.onnx.export(
        net,
        torch.zeros(1, 4),
        str(source),
        input_names=["obs"],
        output_names=["q"],
        dynamic_axes={"obs": {0: "batch"}},
        dynamo=False,
    )
    states = np.random.default_rng(0).normal(size=(37, 4)).astype(np.float32)  # under one batch of 64, one game
    out = tmp_path / "model_int8.onnx"
    quantize_qdq(source, states, out)
    session = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    assert session.get_inputs()[0].name == "obs"
    q = session.run(None, {"obs": states})[0]
    assert q.shape == (37, 2) and np.isfinite(q).all()
    assert any(node.op_type == "QuantizeLinear" for node in __import__("onnx").load(str(out)).graph.node)
