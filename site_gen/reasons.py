"""Why a runtime did not run, by kind, in the reader's language (the library's own words stay available as the
raw text). Kinds are recognised from the reason the run recorded."""

from __future__ import annotations

from . import claims

KINDS = (  # (kind, words that identify it), first match wins
    ("opt_in", ("opt-in: measured only when",)),
    # before the GPU kinds: an install hint may name the compute capabilities the library serves
    ("not_installed", ("package is not installed", "plugin is not installed")),
    ("gpu_not_served", ("compute capability", "cannot run on this gpu", "no device it can run on")),
    ("no_cuda_torch", ("no cuda device visible to pytorch",)),
    ("no_gpu", ("no cuda gpu",)),
    ("no_triton", ("triton",)),
    ("provider_missing", ("executionprovider is not in onnxruntime",)),
    ("provider_not_loaded", ("did not load",)),
    ("not_installed", ("is not installed", "not installed")),
    ("onnx_model", ("given as onnx",)),
    # files made before TensorRT's engines took every agent's input
    ("breakout_input", ("made for the breakout agent's input",)),
)


def kind(status: str, reason: str | None) -> str:
    if status == "failed":
        return "failed"
    text = (reason or "").lower()
    return next((k for k, words in KINDS if any(w in text for w in words)), "other")


def grouped(entries, t) -> list[dict]:
    """``entries``: (runtime title, status, reason). One item per kind and reason text, in order of appearance:
    {"kind": translated kind, "runtimes": "a, b", "raw": the recorded reason}."""
    groups: dict = {}
    for title, status, reason in entries:
        key = (kind(status, reason), reason or "")
        groups.setdefault(key, []).append(title)
    return [
        {"kind": t(f"reason_kind_{k}"), "runtimes": claims.titles(titles, t), "raw": raw}
        for (k, raw), titles in groups.items()
    ]
