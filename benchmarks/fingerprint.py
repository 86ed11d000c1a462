"""The machine a benchmark ran on, printed as the first line of its output: CPU model and count, the
1-minute load average at the start, the GPU, its SM clock and driver (NVML where nvidia-ml-py is installed, else
PyTorch), Python. Figures from different runs of a benchmark compare only when these lines match; within one run,
the benchmarks measure side by side."""

from __future__ import annotations

import os
import platform
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from collect.conditions import cpu_name  # noqa: E402  (light: no torch)


def gpu() -> str:
    try:
        import pynvml

        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByIndex(0)
        name = pynvml.nvmlDeviceGetName(h)
        name = name.decode() if isinstance(name, bytes) else name
        sm = pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM)
        top = pynvml.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_SM)
        driver = pynvml.nvmlSystemGetDriverVersion()
        driver = driver.decode() if isinstance(driver, bytes) else driver
        return f"{name}, SM clock {sm} of {top} MHz, driver {driver}"
    except Exception:
        pass
    try:
        import torch

        if torch.cuda.is_available():
            return f"{torch.cuda.get_device_name(0)} (no NVML: clock and driver unknown)"
    except Exception:
        pass
    return "no GPU"


def fingerprint() -> str:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (
        f"machine: {cpu_name()}, {os.cpu_count()} cores, 1-min load at start {load:.2f}; GPU: {gpu()}; "
        f"Python {platform.python_version()}"
    )
