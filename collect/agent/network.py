"""The Q-network: Nature-DQN CNN with LayerNorm (as in PQN), taking the raw uint8 stack.

Scaling to [0, 1] happens inside the model, so every runtime (PyTorch, ONNX Runtime,
TensorRT, ...) receives the same uint8 tensor (N, 4, 84, 84) and nothing outside the model
can differ between them.
"""

from __future__ import annotations

import hashlib
import warnings
from pathlib import Path

import torch
from torch import nn

from .protocol import FRAME_STACK, NUM_ACTIONS, SCREEN_SIZE

ARCHITECTURE = (
    "Nature-DQN CNN with LayerNorm: uint8 (N,4,84,84) -> /255 -> "
    "conv 32x8x8/4 -> LN -> ReLU -> conv 64x4x4/2 -> LN -> ReLU -> conv 64x3x3/1 -> LN -> ReLU -> "
    "flatten 3136 -> fc 512 -> LN -> ReLU -> fc num_actions (one Q-value per action)"
)
ONNX_OPSET = 17  # LayerNormalization is a single op from opset 17 on
ONNX_INPUT = "observation"
ONNX_OUTPUT = "q_values"


class QNetwork(nn.Module):
    def __init__(self, num_actions: int = NUM_ACTIONS):
        super().__init__()
        self.num_actions = num_actions
        self.network = nn.Sequential(
            nn.Conv2d(FRAME_STACK, 32, 8, stride=4),
            nn.LayerNorm([32, 20, 20]),
            nn.ReLU(),
            nn.Conv2d(32, 64, 4, stride=2),
            nn.LayerNorm([64, 9, 9]),
            nn.ReLU(),
            nn.Conv2d(64, 64, 3, stride=1),
            nn.LayerNorm([64, 7, 7]),
            nn.ReLU(),
            nn.Flatten(),
            nn.Linear(3136, 512),
            nn.LayerNorm(512),
            nn.ReLU(),
            nn.Linear(512, num_actions),
        )

    def forward(self, observation: torch.Tensor) -> torch.Tensor:
        # Scale in the weights' own dtype, so a half-precision copy of the model takes the same uint8 input.
        return self.network(observation.to(self.network[0].weight.dtype) / 255.0)


def parameter_count(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def load_weights(path: str | Path, device: str = "cpu") -> QNetwork:
    """A QNetwork from a state-dict file; the action count is read from the final layer."""
    state = torch.load(path, map_location=device, weights_only=True)
    num_actions = state["network.13.weight"].shape[0]
    model = QNetwork(num_actions).to(device)
    model.load_state_dict(state)
    return model.eval()


def export_onnx(model: QNetwork, path: str | Path) -> None:
    """Export with a dynamic batch axis and uint8 input; deterministic bytes for the same weights."""
    model = model.cpu().eval()
    example = torch.zeros((1, FRAME_STACK, SCREEN_SIZE, SCREEN_SIZE), dtype=torch.uint8)
    torch.onnx.export(
        model,
        (example,),
        str(path),
        input_names=[ONNX_INPUT],
        output_names=[ONNX_OUTPUT],
        dynamic_axes={ONNX_INPUT: {0: "batch"}, ONNX_OUTPUT: {0: "batch"}},
        opset_version=ONNX_OPSET,
        dynamo=False,
    )


def export_policy_onnx(module, observation, out, output_name: str = ONNX_OUTPUT) -> None:
    """Export a user's module with a dynamic batch axis and the observation's (``tasks.Observation``) dtype, by the
    TorchScript exporter as for the shipped agent (it needs no extra package). A TorchScript module is exported as
    it is: the exporter takes a script module only as the whole model."""
    if isinstance(getattr(module, "inner", None), torch.jit.ScriptModule):
        module = module.inner
    example = torch.zeros((1, *observation.shape), dtype=getattr(torch, observation.dtype))
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the exporter's notes on a script module's signature: not the user's concern
        torch.onnx.export(
            module.cpu().eval(),
            (example,),
            str(out),
            input_names=[ONNX_INPUT],
            output_names=[output_name],
            dynamic_axes={ONNX_INPUT: {0: "batch"}, output_name: {0: "batch"}},
            opset_version=ONNX_OPSET,
            dynamo=False,
        )


def sha256_file(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
