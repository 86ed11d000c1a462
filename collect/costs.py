"""Where the time and the watts go, per runtime: what preparing it cost in memory, which GPU kernels and copies
one decision runs, and how much energy a decision takes. Each is a separate sample from the timed latency
rounds, so none of this instrumentation touches the stored decision latency.

* memory: the increase over preparing the runtime — the process's GPU memory as NVML sees it, PyTorch's
  allocator (reserved bytes), and the process's resident memory (RSS) for every runtime;
* kernels: ``torch.profiler`` (CUPTI sees every CUDA kernel and copy the process issues, whatever library
  issued it) over a sample of batch=1 decisions: per kernel or copy name, calls and device seconds;
* energy: NVML's total-energy counter over a fixed-length run of batch=1 decisions, and over an idle window
  of the same length just before it (the GPU's idle power, from the same counter).
"""

from __future__ import annotations

import os
import time

import numpy as np

ENERGY_SECONDS = 2.0  # batch=1 decisions per runtime for the energy counter
IDLE_SECONDS = 3.0  # the GPU idle before the first runtime's decisions: its idle power, once per session
KERNEL_DECISIONS = 200  # decisions profiled per runtime


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _nvml(cuda_index: int):
    try:
        import pynvml

        pynvml.nvmlInit()
        return pynvml, pynvml.nvmlDeviceGetHandleByIndex(cuda_index)
    except Exception:
        return None, None


def gpu_process_bytes(cuda_index: int) -> int | None:
    """This process's GPU memory as NVML reports it (None without NVML)."""
    nvml, handle = _nvml(cuda_index)
    if nvml is None:
        return None
    try:
        for p in nvml.nvmlDeviceGetComputeRunningProcesses(handle):
            if p.pid == os.getpid():
                return int(p.usedGpuMemory or 0)
        return 0
    except Exception:
        return None


def memory_snapshot(device: str, cuda_index: int) -> dict:
    snap = {"rss": rss_bytes()}
    if device == "cuda":
        snap["nvml"] = gpu_process_bytes(cuda_index)
        try:
            import torch

            snap["allocator"] = int(torch.cuda.memory_reserved(cuda_index))
        except Exception:
            pass
    return snap


def memory_rows(before: dict, after: dict) -> list[tuple[str, float, str, str]]:
    """(kind, value, unit, method) of what preparing a runtime added."""
    rows = [("rss_increase", after["rss"] - before["rss"], "bytes", "/proc/self/statm resident pages")]
    if after.get("nvml") is not None and before.get("nvml") is not None:
        rows.append(
            ("gpu_memory_increase", after["nvml"] - before["nvml"], "bytes", "NVML used GPU memory of this process")
        )
    if "allocator" in after and "allocator" in before:
        rows.append(
            (
                "torch_allocator_increase",
                after["allocator"] - before["allocator"],
                "bytes",
                "torch.cuda.memory_reserved (PyTorch's caching allocator)",
            )
        )
    return rows


def kernel_rows(runner, states: np.ndarray, decisions: int = KERNEL_DECISIONS) -> tuple[list, int]:
    """([(name, kind, calls, device seconds)], decisions profiled); kind: kernel, memcpy_htod, memcpy_dtoh, other."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    views = [states[i : i + 1] for i in range(len(states))]
    for i in range(20):
        runner.infer(views[i % len(views)])
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for i in range(decisions):
            runner.infer(views[i % len(views)])
        torch.cuda.synchronize()
    totals: dict = {}
    for e in prof.events():
        if e.device_type != torch.autograd.DeviceType.CUDA:
            continue
        name = e.name
        kind = (
            "memcpy_htod"
            if "HtoD" in name
            else "memcpy_dtoh"
            if "DtoH" in name
            else "memcpy_other"
            if "Memcpy" in name or "Memset" in name
            else "kernel"
        )
        seconds = e.device_time_total / 1e6 if hasattr(e, "device_time_total") else e.cuda_time_total / 1e6
        calls, total = totals.get((name, kind), (0, 0.0))
        totals[(name, kind)] = (calls + 1, total + seconds)
    return [(name, kind, calls, total) for (name, kind), (calls, total) in sorted(totals.items())], decisions


def energy(
    runner, states: np.ndarray, cuda_index: int, seconds: float = ENERGY_SECONDS, idle: tuple | None = None
) -> tuple[list | None, tuple | None]:
    """([(kind, value, unit, method)], idle): joules per decision, idle and busy power, from NVML's energy counter.
    ``idle``: (watts, when) measured by an earlier call of this session, else measured here over ``IDLE_SECONDS``
    (once per collect command instead of before every runtime); returned for the next call."""
    nvml, handle = _nvml(cuda_index)
    if nvml is None:
        return None, idle
    try:
        counter = nvml.nvmlDeviceGetTotalEnergyConsumption  # millijoules since the driver loaded
        views = [states[i : i + 1] for i in range(len(states))]
        if idle is None:
            e0, t0 = counter(handle), time.perf_counter()
            time.sleep(IDLE_SECONDS)
            idle = (
                (counter(handle) - e0) / 1e3 / (time.perf_counter() - t0),
                time.strftime("%H:%M:%S UTC", time.gmtime()),
            )
        e1, t1 = counter(handle), time.perf_counter()
        n = 0
        while time.perf_counter() - t1 < seconds:
            runner.infer(views[n % len(views)])
            n += 1
        e2, t2 = counter(handle), time.perf_counter()
    except Exception as e:
        return [("energy_error", 0.0, "", f"NVML: {type(e).__name__}: {e}")], idle
    idle_w, busy_w = idle[0], (e2 - e1) / 1e3 / (t2 - t1)
    method = (
        f"NVML total energy counter over {seconds:g} s of batch=1 decisions; idle power over {IDLE_SECONDS:g} s "
        f"with the GPU idle, once per session (at {idle[1]})"
    )
    return [
        ("energy_per_decision", (e2 - e1) / 1e3 / n, "J", method),
        ("energy_above_idle_per_decision", max(0.0, (busy_w - idle_w) * (t2 - t1) / n), "J", method),
        ("idle_power", idle_w, "W", method),
        ("busy_power", busy_w, "W", method),
        ("energy_decisions", float(n), "decisions", method),
    ], idle


def copy_floor(samples: int = 2000) -> list[float] | None:
    """Seconds of one pinned 28 KB uint8 host→device copy plus a 16 B device→host copy and a sync: the floor
    under any batch=1 decision on this GPU (None without CUDA)."""
    try:
        import torch

        if not torch.cuda.is_available():
            return None
    except ImportError:
        return None
    host_in = torch.zeros((1, 4, 84, 84), dtype=torch.uint8).pin_memory()
    dev_in = torch.empty_like(host_in, device="cuda")
    dev_out = torch.zeros((1, 4), device="cuda")
    host_out = torch.zeros((1, 4)).pin_memory()
    stream = torch.cuda.current_stream()
    out = []
    for i in range(samples + 200):
        t = time.perf_counter()
        dev_in.copy_(host_in, non_blocking=True)
        host_out.copy_(dev_out, non_blocking=True)
        stream.synchronize()
        if i >= 200:
            out.append(time.perf_counter() - t)
    return out
