"""What a model file is by its bytes, where its name says otherwise: a zip archive cut short, a Stable-Baselines3 save
or an ONNX model under another suffix (``model_input`` takes the format from the suffix first)."""

from __future__ import annotations

import zipfile
from pathlib import Path

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
