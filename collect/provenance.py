"""What machine and software a run measured on."""
from __future__ import annotations

import importlib.metadata
import os
import platform
import socket
import subprocess

from .agent import cpu_name
from .paths import ROOT


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _nvidia_smi(field: str) -> str | None:
    try:
        out = subprocess.run(["nvidia-smi", f"--query-gpu={field}", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else None


def code_version() -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "describe", "--always", "--dirty", "--abbrev=12"],
                             capture_output=True, text=True, timeout=10)
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def machine(cuda_index: int) -> dict:
    import onnxruntime
    import torch

    gpu_name = cuda = None
    if torch.cuda.is_available():
        gpu_name = torch.cuda.get_device_name(cuda_index)
        cuda = torch.version.cuda
    tensorrt = _version("tensorrt") or _version("tensorrt-cu12") or _version("tensorrt-cu13")
    return {
        "host": socket.gethostname(), "os": platform.platform(), "cpu": cpu_name(), "cpu_count": os.cpu_count(),
        "gpu_name": gpu_name, "gpu_driver": _nvidia_smi("driver_version") if gpu_name else None, "cuda_version": cuda,
        "python_version": platform.python_version(), "torch_version": torch.__version__,
        "onnxruntime_version": onnxruntime.__version__,  # the module imported, whichever wheel provided it
        "tensorrt_version": tensorrt, "ale_py_version": _version("ale-py"), "gymnasium_version": _version("gymnasium"),
        "numpy_version": _version("numpy"), "rtreport_version": _version("rtreport"), "code_version": code_version(),
    }
