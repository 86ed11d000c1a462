"""The shipped agent: its files, its ONNX export, its fixed states and its model card."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import onnxruntime as ort
import torch

from collect import paths
from collect.agent import shipped as agent
from collect.agent.network import QNetwork, parameter_count, sha256_file
from collect.agent.protocol import OBSERVATION_SHAPE

ROOT = Path(__file__).resolve().parents[1]  # the checkout


def test_network_shapes_and_uint8_input():
    net = QNetwork()
    out = net(torch.zeros((3, *OBSERVATION_SHAPE), dtype=torch.uint8))
    assert out.shape == (3, 4) and out.dtype == torch.float32
    # Nature-DQN trunk: 32·8x8/4, 64·4x4/2, 64·3x3/1, fc 512, 4 Q-values.
    convs = [m for m in net.modules() if isinstance(m, torch.nn.Conv2d)]
    assert [(c.out_channels, c.kernel_size, c.stride) for c in convs] == [
        (32, (8, 8), (4, 4)),
        (64, (4, 4), (2, 2)),
        (64, (3, 3), (1, 1)),
    ]


def test_a_half_precision_copy_takes_the_same_uint8_input(shipped_model, fixed_states):
    # The H200 run's PyTorch CUDA FP16 failed on exactly this ("Input type (float) and bias type (Half)").
    import copy

    half = copy.deepcopy(shipped_model).half()
    with torch.inference_mode():
        q16 = half(torch.from_numpy(fixed_states[:4])).float().numpy()
        q32 = shipped_model(torch.from_numpy(fixed_states[:4])).numpy()
    assert np.abs(q16 - q32).max() < 0.05


def test_model_card_describes_the_shipped_files():
    card = agent.read_card()
    for entry in card["files"].values():
        path = ROOT / entry["path"]
        assert path.stat().st_size == entry["bytes"]
        assert sha256_file(path) == entry["sha256"]
    assert card["parameters"] == parameter_count(agent.shipped_model())
    assert card["training"]["frames"] == 4 * card["training"]["agent_steps"]


def test_model_card_evaluation_meets_the_target():
    ev = agent.read_card()["evaluation"]
    assert ev["seeds"] == agent.load_seeds()["evaluation"] and len(ev["scores"]) == 30
    assert ev["mean"] == np.mean(ev["scores"]) and ev["median"] == np.median(ev["scores"])
    assert ev["mean"] >= 100


def test_rerunning_the_evaluation_gives_the_card_scores(shipped_model):
    card = agent.read_card()["evaluation"]
    episodes = agent.evaluate(shipped_model, card["seeds"][:3])
    assert [e.score for e in episodes] == card["scores"][:3]
    assert [e.steps for e in episodes] == card["steps"][:3]


def test_onnx_export_matches_pytorch_on_the_fixed_states(shipped_model, fixed_states):
    assert fixed_states.shape == (60, *OBSERVATION_SHAPE) and fixed_states.dtype == np.uint8
    with torch.inference_mode():
        q_torch = shipped_model(torch.from_numpy(fixed_states)).numpy()
    session = ort.InferenceSession(str(paths.AGENT_ONNX), providers=["CPUExecutionProvider"])
    (q_ort,) = session.run(None, {session.get_inputs()[0].name: fixed_states})
    assert session.get_inputs()[0].type == "tensor(uint8)"
    assert np.abs(q_ort - q_torch).max() <= 1e-4
    np.testing.assert_array_equal(q_ort.argmax(1), q_torch.argmax(1))


def test_fixed_states_index_matches_the_shipped_array(fixed_states):
    index = json.loads(paths.FIXED_STATES_INDEX.read_text())
    assert index["sha256"] == sha256_file(paths.FIXED_STATES)
    assert index["harvested_with"]["model_sha256"] == sha256_file(paths.AGENT_WEIGHTS)
    phases = {s["phase"] for s in index["states"]}
    assert phases == {"early", "middle", "late"}
    assert not set(s["seed"] for s in index["states"]) & set(agent.load_seeds()["evaluation"])


@pytest.mark.slow  # a long end-to-end run: python -m pytest -m slow (CI runs it)
def test_regenerate_command_reproduces_the_fixed_states_byte_for_byte(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "rtreport", "agent", "fixed-states", "--check"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "byte-identical" in result.stdout
