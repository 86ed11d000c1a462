"""The model under test: the shipped agent, or a user's PyTorch checkpoint or ONNX file.

Validation happens here, before any runtime starts, so bad input is one clear line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from rtreport.errors import UserError

from .agent.network import QNetwork, export_onnx, sha256_file
from .agent.protocol import NUM_ACTIONS, OBSERVATION_SHAPE


@dataclass
class ModelSource:
    path: Path
    format: str  # "pytorch" or "onnx"
    sha256: str
    num_actions: int
    state_dict: dict | None = None

    def torch_model(self) -> QNetwork:
        model = QNetwork(self.num_actions)
        model.load_state_dict(self.state_dict)
        return model.eval()

    def onnx_source(self):
        """What ``Artifacts`` needs: the user's ONNX file, or a function exporting ours once."""
        if self.format == "onnx":
            return self.path
        return lambda out: export_onnx(self.torch_model(), out)


def load_model(path: Path) -> ModelSource:
    path = Path(path)
    if not path.exists():
        raise UserError(f"model file not found: {path}")
    if path.is_dir():
        raise UserError(f"model path is a folder, not a file: {path}")
    source = _load_onnx(path) if path.suffix.lower() == ".onnx" else _load_torch(path)
    if source.num_actions != NUM_ACTIONS:
        raise UserError(
            f"{path}: the model has {source.num_actions} actions, but Breakout's minimal action set has {NUM_ACTIONS}"
        )
    return source


SAVE_HINT = "save the weights with torch.save(model.state_dict(), 'model.pt')"


def _load_torch(path: Path) -> ModelSource:
    import pickle

    import torch

    head = _head(path)
    if not head:
        raise UserError(f"{path} is empty (0 bytes), not a PyTorch checkpoint; {SAVE_HINT}")
    if not (head.startswith(b"PK\x03\x04") or head.startswith(b"\x80")):  # torch.save's zip, or a legacy pickle
        kind = "a text file" if _is_text(head) else "not a PyTorch checkpoint (neither torch.save's zip nor a pickle)"
        raise UserError(f"{path} is {kind}; rtreport needs a state dict of its Q-network: {SAVE_HINT}")
    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as e:
        found = re.search(r"Unsupported global: GLOBAL ([\w.]+)", str(e))
        what = f"a pickled {found.group(1)}" if found else "pickled Python objects"
        raise UserError(
            f"{path} holds {what} (e.g. a whole model saved with torch.save(model)), which rtreport does "
            f"not unpickle because that can run code; {SAVE_HINT}"
        ) from None
    except Exception as e:  # a torn or truncated archive, a damaged pickle
        raise UserError(
            f"{path} is damaged or truncated: PyTorch cannot read it ({type(e).__name__}"
            f"{': ' + _first_line(e)[:120] if _first_line(e) else ''}); {SAVE_HINT}"
        ) from None
    if isinstance(obj, dict) and not any(hasattr(v, "shape") for v in obj.values()):
        obj = obj.get("state_dict") or obj.get("model") or obj
    if not isinstance(obj, dict) or "network.0.weight" not in obj or "network.13.weight" not in obj:
        raise UserError(
            f"{path} is not a state dict of rtreport's Q-network (expected keys network.0.weight … network.13.weight)"
        )
    if obj["network.0.weight"].shape[1] != OBSERVATION_SHAPE[0]:
        raise UserError(
            f"{path}: the network takes {obj['network.0.weight'].shape[1]} stacked frames, not (N, 4, 84, 84)"
        )
    num_actions = int(obj["network.13.weight"].shape[0])
    try:
        QNetwork(num_actions).load_state_dict(obj)
    except RuntimeError as e:  # e.g. a first linear layer sized for another input resolution
        whole = " ".join(
            line.strip() for line in str(e).splitlines() if line.strip()
        )  # PyTorch's first line ends at ':'
        raise UserError(f"{path} does not fit rtreport's Q-network (input (N, 4, 84, 84)): {whole[:600]}") from None
    return ModelSource(path, "pytorch", sha256_file(path), num_actions, obj)


def _load_onnx(path: Path) -> ModelSource:
    import onnx

    if not _head(path):
        raise UserError(f"{path} is empty (0 bytes), not an ONNX model")
    try:
        model = onnx.load(str(path))
        onnx.checker.check_model(model)
    except Exception as e:
        raise UserError(
            f"cannot read {path} as an ONNX model (damaged, truncated or not ONNX): "
            f"{type(e).__name__}: {_first_line(e)}"
        ) from None
    inputs = [i for i in model.graph.input if i.name not in {t.name for t in model.graph.initializer}]
    if len(inputs) != 1 or len(model.graph.output) != 1:
        raise UserError(f"{path}: expected one input and one output, found {len(inputs)} and {len(model.graph.output)}")
    tensor = inputs[0].type.tensor_type
    dims = [d.dim_value if d.HasField("dim_value") else None for d in tensor.shape.dim]
    if tensor.elem_type != onnx.TensorProto.UINT8 or len(dims) != 4 or tuple(dims[1:]) != OBSERVATION_SHAPE:
        shown = ["N" if d is None else d for d in dims]
        raise UserError(
            f"{path}: input must be uint8 (N, 4, 84, 84); found "
            f"{onnx.helper.tensor_dtype_to_np_dtype(tensor.elem_type)} ({', '.join(map(str, shown))})"
        )
    out_dims = [
        d.dim_value if d.HasField("dim_value") else None for d in model.graph.output[0].type.tensor_type.shape.dim
    ]
    num_actions = out_dims[-1] if out_dims and out_dims[-1] else _actions_by_running(path)
    return ModelSource(path, "onnx", sha256_file(path), int(num_actions))


def _actions_by_running(path: Path) -> int:
    import numpy as np
    import onnxruntime as ort

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    out = session.run(None, {session.get_inputs()[0].name: np.zeros((1, *OBSERVATION_SHAPE), np.uint8)})[0]
    return out.shape[-1]


def _head(path: Path, n: int = 512) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read(n)
    except OSError as e:
        raise UserError(f"cannot read {path}: {e.strerror or type(e).__name__}") from None


def _is_text(head: bytes) -> bool:
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return all(c.isprintable() or c in "\r\n\t" for c in text)


def _first_line(e: Exception) -> str:
    text = str(e).strip().splitlines()
    return text[0][:200] if text else ""
