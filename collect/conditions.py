"""The machine's state while latency is measured: the GPU's (clocks, temperature, power, throttling, from NVML
through nvidia-ml-py when it is installed), and the host's (load, CPU busy, CPU frequency, from /proc and /sys),
and the flags of a round taken under load from other processes (``rtreport.host_load``) or a clock change.
Reading here; the parsing and the flags are pure functions."""

from __future__ import annotations

import math
import os
import platform
import time
from pathlib import Path

from rtreport import host_load

CLOCK_LIMIT = 0.05  # CPU or GPU SM clock differing from the run's first round by more than this share
LOAD_WINDOW = 60.0  # seconds: the kernel's 1-min load average decays with this time constant


def cpu_name() -> str:
    """The CPU's model name (/proc/cpuinfo), else what the platform says."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def gpu_conditions(cuda_index: int) -> dict | None:
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByIndex(cuda_index)
        clocks = pynvml.nvmlDeviceGetClockInfo
        return {
            "sm_clock_mhz": clocks(h, pynvml.NVML_CLOCK_SM),
            "memory_clock_mhz": clocks(h, pynvml.NVML_CLOCK_MEM),
            "temperature_c": pynvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU),
            "power_w": pynvml.nvmlDeviceGetPowerUsage(h) / 1000.0,
            "performance_state": pynvml.nvmlDeviceGetPerformanceState(h),
            "throttle_reasons": int(
                pynvml.nvmlDeviceGetCurrentClocksEventReasons(h)
                if hasattr(pynvml, "nvmlDeviceGetCurrentClocksEventReasons")
                else pynvml.nvmlDeviceGetCurrentClocksThrottleReasons(h)
            ),
        }
    except Exception as e:  # NVML present but unusable here: say so in the row rather than fail the run
        return {"nvml_error": f"{type(e).__name__}: {e}"}


# -- pure: parsing and flags ------------------------------------------------------------------------------
def cpu_jiffies(proc_stat: str) -> tuple[int, int] | None:
    """(busy, total) clock ticks of all cores from /proc/stat's ``cpu`` line; idle and iowait are not busy
    (steal, time the hypervisor gave to others, is)."""
    for line in proc_stat.splitlines():
        if line.startswith("cpu "):
            values = [int(v) for v in line.split()[1:9]]
            total = sum(values)
            return total - values[3] - values[4], total
    return None


def mean_mhz(scaling_khz: list[str], cpuinfo: str) -> float | None:
    """Mean current CPU frequency: cpufreq's ``scaling_cur_freq`` (kHz) of every core, else /proc/cpuinfo's
    ``cpu MHz`` lines; None if neither says."""
    khz = [float(v) for v in scaling_khz if v.strip()]
    if khz:
        return sum(khz) / len(khz) / 1000.0
    mhz = [float(line.split(":")[1]) for line in cpuinfo.splitlines() if line.startswith("cpu MHz") and ":" in line]
    return sum(mhz) / len(mhz) if mhz else None


def decayed_load(history: list[tuple[float, float]], t: float, window: float = LOAD_WINDOW) -> float:
    """The load (cores busy) that CPU time used in the past adds to an exponentially decaying average at ``t``,
    as the kernel's load average decays: ``history`` is [(time, cumulative CPU seconds)] in time order."""
    load = 0.0
    for (a, ca), (b, cb) in zip(history, history[1:]):
        if b > a:
            load += (cb - ca) / (b - a) * (math.exp(-(t - b) / window) - math.exp(-(t - a) / window))
    return load


def _sm_clock(conditions: dict) -> float | None:
    for key in ("after", "before"):
        reading = conditions.get(key) or {}
        if reading.get("sm_clock_mhz"):
            return float(reading["sm_clock_mhz"])
    return None


def first_readings(conditions_in_order) -> dict:
    """The run's first round's CPU frequency and GPU SM clock (the earliest round that has each)."""
    first: dict = {}
    for c in conditions_in_order:
        if c.get("cpu_mhz") and "cpu_mhz" not in first:
            first["cpu_mhz"] = float(c["cpu_mhz"])
        if (sm := _sm_clock(c)) and "sm_clock_mhz" not in first:
            first["sm_clock_mhz"] = sm
    return first


def flags(conditions: dict, first: dict) -> list[str]:
    """Short reasons why a round was taken under load from other processes (``rtreport.host_load``) or a changed
    clock (empty: none)."""
    out = [why] if (why := host_load.reason(conditions)) else []
    for name, key, now in (
        ("CPU", "cpu_mhz", conditions.get("cpu_mhz")),
        ("GPU SM", "sm_clock_mhz", _sm_clock(conditions)),
    ):
        if now and first.get(key) and abs(now / first[key] - 1) > CLOCK_LIMIT:
            out.append(f"{name} clock {now:.0f} MHz, {now / first[key] - 1:+.0%} from the first round")
    return out


# -- reading the host ---------------------------------------------------------------------------------------
def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def _ticks() -> int:
    return os.sysconf("SC_CLK_TCK")


def own_cpu_seconds() -> float:
    """CPU time of this process (every thread), its ended children and its live ones (play workers)."""
    t = os.times()
    total = t.user + t.system + t.children_user + t.children_system
    me = str(os.getpid())
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and entry.name != me:
            fields = _read(f"/proc/{entry.name}/stat").rpartition(")")[2].split()
            if len(fields) > 12 and fields[1] == me:
                total += (int(fields[11]) + int(fields[12])) / _ticks()
    return total


class Host:
    """Host readings around each round. Keeps this process's CPU time since it started, so that the load this
    run itself put on the host (play, earlier rounds) is told apart from other processes' load."""

    def __init__(self):
        self.cores = os.cpu_count() or 1
        # which boot of the machine (Linux: a fresh id each boot): repeats on one boot, minutes apart, share more
        # of the machine's state than repeats on two (a lent VM's lease is a boot)
        self.boot = _read("/proc/sys/kernel/random/boot_id").strip() or None
        self.history: list[tuple[float, float]] = []
        fields = _read("/proc/self/stat").rpartition(")")[2].split()
        uptime = _read("/proc/uptime").split()
        if len(fields) > 19 and uptime:  # the process's start, on this process's monotonic clock
            age = float(uptime[0]) - int(fields[19]) / _ticks()
            self.history.append((time.monotonic() - max(age, 0.0), 0.0))

    def start(self) -> dict:
        t, own = time.monotonic(), own_cpu_seconds()
        self.history.append((t, own))
        load = _read("/proc/loadavg").split()
        return {
            "t": t,
            "own": own,
            "jiffies": cpu_jiffies(_read("/proc/stat")),
            "mhz": self.mhz(),
            "host_load": float(load[0]) / self.cores if load else None,
            "host_load_own": decayed_load(self.history, t) / self.cores,
        }

    def finish(self, started: dict) -> dict:
        """The host's conditions of a round begun with ``start``."""
        t, own = time.monotonic(), own_cpu_seconds()
        self.history.append((t, own))
        jiffies, mhz = cpu_jiffies(_read("/proc/stat")), self.mhz()
        busy = busy_own = None
        if jiffies and started["jiffies"] and jiffies[1] > started["jiffies"][1]:
            total = jiffies[1] - started["jiffies"][1]
            busy = (jiffies[0] - started["jiffies"][0]) / total
            busy_own = min(1.0, (own - started["own"]) * _ticks() / total)
        readings = [m for m in (started["mhz"], mhz) if m]
        return {
            "host_load": started["host_load"],
            "host_load_own": started["host_load_own"],
            "cpu_busy": busy,
            "cpu_busy_own": busy_own,
            "cpu_mhz": sum(readings) / len(readings) if readings else None,
            "boot": self.boot,
        }

    @staticmethod
    def mhz() -> float | None:
        scaling = [_read(str(p)) for p in Path("/sys/devices/system/cpu").glob("cpu[0-9]*/cpufreq/scaling_cur_freq")]
        return mean_mhz(scaling, "" if any(s.strip() for s in scaling) else _read("/proc/cpuinfo"))
