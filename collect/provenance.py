"""What machine and software a run measured on, and which code measured it."""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import platform
import socket
import subprocess
from pathlib import Path

from .conditions import cpu_name

# Distributions whose versions a run records (those its runtimes and game protocol may use).
ENVIRONMENT = (
    "numpy",
    "torch",
    "onnxruntime",
    "onnxruntime-gpu",
    "onnx",
    "tensorrt",
    "tensorrt-cu12",
    "tensorrt-cu13",
    "tensorrt-rtx",
    "triton",
    "cuda-python",
    "cuda-bindings",
    "nvidia-ml-py",
    "ale-py",
    "gymnasium",
    "mujoco",
    "stable-baselines3",
    "sb3-contrib",
    "openvino",
    "nncf",
    "opencv-python-headless",
    "duckdb",
)
# The packages whose source is the measurement: their content hash says exactly which code measured a run.
MEASUREMENT_PACKAGES = ("collect", "rtreport")


def version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


# Recorded in a run's environment when onnxruntime and onnxruntime-gpu were both installed (allowed only by
# collect --allow-mixed-onnxruntime): the machine page says so in a banner.
MIXED_ONNXRUNTIME = "mixed-onnxruntime"


def mixed_onnxruntime() -> str | None:
    """Both ONNX Runtime distributions installed (they overwrite each other's files in site-packages): what."""
    cpu, gpu = version("onnxruntime"), version("onnxruntime-gpu")
    return f"onnxruntime {cpu} and onnxruntime-gpu {gpu}" if cpu and gpu else None


def refuse_mixed_onnxruntime() -> None:
    from rtreport.errors import UserError

    both = mixed_onnxruntime()
    if both:
        raise UserError(
            f"{both} are both installed, and they overwrite each other's files, so which one a run "
            "measures is not known: pip uninstall one of them (keep onnxruntime-gpu on a GPU machine), "
            "or give --allow-mixed-onnxruntime to measure anyway (the run records it, its page says so)"
        )


def environment() -> dict:
    env = {d: v for d in ENVIRONMENT if (v := version(d))}
    if both := mixed_onnxruntime():
        env[MIXED_ONNXRUNTIME] = f"{both} both installed (collect --allow-mixed-onnxruntime)"
    return env


def code_hash() -> str:
    """SHA-256 over the measurement packages' Python sources (path and bytes, in sorted order): the same code
    gives the same hash in a checkout, a wheel or a copy without git."""
    import importlib

    h = hashlib.sha256()
    for name in MEASUREMENT_PACKAGES:
        root = Path(importlib.import_module(name).__file__).parent
        for f in sorted(root.rglob("*.py")):
            h.update(f"{name}/{f.relative_to(root).as_posix()}\0".encode())
            h.update(f.read_bytes())
    return h.hexdigest()


# A clean checkout's commit and code hash, written by tools/source_stamp.py where the copy that runs cannot ask git
# itself (the device machine's copy carries a stale .git). Believed only when the code that runs hashes the same.
SOURCE_STAMP = ".source-stamp.json"


def code_version(root: Path | None = None) -> str | None:
    """``git describe`` when rtreport runs from a checkout (None from a wheel). Where git says the tree is dirty
    or cannot say, a source stamp whose code hash equals this code's gives the clean commit it was made from."""
    root = root or Path(__file__).resolve().parent.parent
    described = _describe(root)
    if described is None or described.endswith("-dirty"):
        return _stamped(root) or described
    return described


def _describe(root: Path) -> str | None:
    if not (root / ".git").exists():
        return None
    try:
        out = subprocess.run(
            ["git", "-C", str(root), "describe", "--always", "--dirty", "--abbrev=12"],
            capture_output=True,
            text=True,
            timeout=10,
        )
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def _stamped(root: Path) -> str | None:
    try:
        stamp = json.loads((root / SOURCE_STAMP).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(stamp, dict) or stamp.get("code_hash") != code_hash() or not stamp.get("commit"):
        return None
    return str(stamp["commit"])[:12]


def write_stamp(root: Path) -> dict:
    """The stamp of a clean checkout at ``root`` (its HEAD and this code's hash); refuses a dirty tree."""
    from rtreport.errors import UserError

    def git(*args):
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True).stdout

    if git("status", "--porcelain", "--untracked-files=no").strip():
        raise UserError(f"{root} has uncommitted changes: commit them first, a stamp names a commit")
    stamp = {"commit": git("rev-parse", "HEAD").strip(), "code_hash": code_hash()}
    (root / SOURCE_STAMP).write_text(json.dumps(stamp, indent=1) + "\n")
    return stamp


def _nvidia_smi(field: str) -> str | None:
    try:
        out = subprocess.run(
            ["nvidia-smi", f"--query-gpu={field}", "--format=csv,noheader"], capture_output=True, text=True, timeout=20
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else None


def machine(cuda_index: int) -> dict:
    import torch

    gpu_name = cuda = None
    if torch.cuda.is_available():
        gpu_name = torch.cuda.get_device_name(cuda_index)
        cuda = torch.version.cuda
    return {
        "host": socket.gethostname(),
        "os": platform.platform(),
        "cpu": cpu_name(),
        "cpu_count": os.cpu_count(),
        "gpu_name": gpu_name,
        "gpu_driver": _nvidia_smi("driver_version") if gpu_name else None,
        "cuda_version": cuda,
        "python_version": platform.python_version(),
        "environment": environment(),
        "rtreport_version": version("rtreport"),
        "code_version": code_version(),
        "code_hash": code_hash(),
    }


def memory_bytes() -> int | None:
    """The machine's physical memory (on Linux /proc/meminfo's MemTotal), None where the OS does not say."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None


def hardware() -> dict:
    """What a run records of its machine beside ``machine``'s columns (``settings.hardware``): the GPUs PyTorch
    sees and the memory."""
    import torch

    return {
        "gpu_count": torch.cuda.device_count() if torch.cuda.is_available() else 0,
        "memory_bytes": memory_bytes(),
    }


def kind(cuda_index: int) -> dict:
    """This machine's kind, as ``--resume`` and ``--repeat`` compare it with a run's (``collect.resume``): the CPU
    model and logical core count, the GPU model and count, the memory; not its host name or boot."""
    import torch

    return {
        "cpu": cpu_name(),
        "cpu_count": os.cpu_count(),
        "gpu_name": torch.cuda.get_device_name(cuda_index) if torch.cuda.is_available() else None,
        **hardware(),
    }
