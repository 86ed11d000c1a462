"""What a model file is, found from the file itself: a zip archive cut short, a Stable-Baselines3 save or an ONNX model
under another suffix (``model_input`` takes the format from the suffix first), an ONNX model's output shape where it
declares none."""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

from rtreport.errors import UserError

from .sb3_model import zip_is_whole


def _head(path: Path) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read(4)
    except OSError:
        return b""


def named_otherwise(path: Path) -> tuple[str, str] | None:
    """(what the file is, the suffix it needs) for a Stable-Baselines3 save or an ONNX model under another name."""
    head = _head(path)
    if head == b"PK\x03\x04":
        try:
            with zipfile.ZipFile(path) as z:
                names = set(z.namelist())
        except (zipfile.BadZipFile, OSError):
            return None
        return ("a Stable-Baselines3 save", ".zip") if {"data", "policy.pth"} <= names else None
    if not head.startswith(b"\x08"):  # an ONNX ModelProto begins with its ir_version field
        return None
    try:
        import onnx

        model = onnx.load(str(path), load_external_data=False)
    except Exception:
        return None
    return ("an ONNX model", ".onnx") if model.graph.node else None


def is_cut_zip(path: Path) -> bool:
    """A file that begins as a zip archive but lacks the zip's end (truncated in a copy or a download)."""
    head = _head(path)
    return head == b"PK\x03\x04" and not zip_is_whole(path)


def onnx_output_shape(path: Path, observation) -> list:
    """The output's shape on one zero observation (``observation``: the task's), ONNX Runtime's own log kept quiet."""
    import numpy as np
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 4  # its log line on stderr would repeat the error below, with its source location
    example = np.zeros((1, *observation.shape), observation.dtype)
    try:
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        out = session.run(None, {session.get_inputs()[0].name: example})[0]
    except Exception as e:
        raise UserError(f"{path}: ONNX Runtime cannot run the model on one observation: {ort_reason(e)}") from None
    return list(getattr(out, "shape", ()))


def ort_reason(e: Exception) -> str:
    """ONNX Runtime's error without its status code and source location: the node that failed and why."""
    text = " ".join(str(e).split())
    node = re.search(r"while running (\w+) node", text)
    text = re.sub(r"^\[ONNXRuntimeError\] : \d+ : \w+ : ", "", text.split("Status Message: ", 1)[-1])
    text = re.sub(r"^\S+:\d+ \S+?\(.*?\) ", "", text)  # file:line and the C++ function
    return (f"its {node.group(1)} node fails: " if node else "") + text[:300]
