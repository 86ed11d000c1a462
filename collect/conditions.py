"""The GPU's state while latency is measured (clocks, temperature, power, throttling), from NVML through
nvidia-ml-py when it is installed; nothing otherwise (CPU machines, or no NVML)."""
from __future__ import annotations


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
            "sm_clock_mhz": clocks(h, pynvml.NVML_CLOCK_SM), "memory_clock_mhz": clocks(h, pynvml.NVML_CLOCK_MEM),
            "temperature_c": pynvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU),
            "power_w": pynvml.nvmlDeviceGetPowerUsage(h) / 1000.0,
            "performance_state": pynvml.nvmlDeviceGetPerformanceState(h),
            "throttle_reasons": int(pynvml.nvmlDeviceGetCurrentClocksEventReasons(h)
                                    if hasattr(pynvml, "nvmlDeviceGetCurrentClocksEventReasons")
                                    else pynvml.nvmlDeviceGetCurrentClocksThrottleReasons(h)),
        }
    except Exception as e:  # NVML present but unusable here: say so in the row rather than fail the run
        return {"nvml_error": f"{type(e).__name__}: {e}"}
