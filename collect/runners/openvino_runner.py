"""OpenVINO on the CPU: FP32 (the run's ONNX converted to OpenVINO's IR) and INT8 (NNCF post-training quantization).

The IR is read from the same FP32 ONNX as every other runtime and saved uncompressed (``ov.save_model`` would
otherwise store the weights as FP16). The INT8 model is ``nncf.quantize`` of that IR over the run's calibration
states (``collect.calibration``), NNCF's defaults otherwise (its mixed preset: symmetric weights, asymmetric
activations, fast bias correction). Both are made once per run and every play process loads the saved files.

One thread configuration, fair against ONNX Runtime's CPU EP and PyTorch (which use every core they may run on):
``PERFORMANCE_HINT`` LATENCY, one stream, ``INFERENCE_NUM_THREADS`` = the cores this process may run on, and
``INFERENCE_PRECISION_HINT`` f32 — without it OpenVINO computes in BF16 on CPUs that have BF16 instructions, and
"FP32" would not be FP32. What the compiled model reports for each goes into the runtime's ``details``/``numerics``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import logging
import os
import time
from pathlib import Path

import numpy as np

from ..calibration import calibration_set
from .base import Runner, RuntimeUnavailable

REPORTED = ("PERFORMANCE_HINT", "NUM_STREAMS", "INFERENCE_NUM_THREADS", "INFERENCE_PRECISION_HINT")


def unavailable_reason(precision: str) -> str | None:
    needed = ["openvino"] + (["nncf"] if precision == "int8" else [])
    missing = [name for name in needed if importlib.util.find_spec(name) is None]
    if missing:
        return f'{" and ".join(missing)} not installed (pip install "rtreport[collect]")'
    return None


def compile_config() -> dict:
    return {
        "PERFORMANCE_HINT": "LATENCY",
        "NUM_STREAMS": 1,
        "INFERENCE_NUM_THREADS": len(os.sched_getaffinity(0)),
        "INFERENCE_PRECISION_HINT": "f32",
    }


def save_ir(model, out: Path) -> None:
    import openvino as ov

    ov.save_model(model, str(out), compress_to_fp16=False)


def quantize_nncf(ir: Path, states: np.ndarray, out: Path) -> None:
    import nncf
    import openvino as ov

    nncf.set_log_level(logging.ERROR)
    model = ov.Core().read_model(str(ir))
    dataset = nncf.Dataset([states[i : i + 1] for i in range(len(states))])
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):  # its progress bar
        quantized = nncf.quantize(model, dataset, subset_size=len(states))
    save_ir(quantized, out)


class OpenVinoRunner(Runner):
    def __init__(self, info, model, artifacts):
        super().__init__(info)
        self._model, self._artifacts = model, artifacts
        self._quantization: dict = {}

    def _ir(self) -> tuple[Path, float]:
        """The IR this runtime runs and the seconds this run spent making it (export, conversion, quantization)."""
        import openvino as ov

        source, export_seconds = self._artifacts.onnx_fp32()
        fp32, convert_seconds = self._artifacts.make(
            "openvino_fp32.xml", lambda out: save_ir(ov.Core().read_model(str(source)), out)
        )
        if self.info.precision == "fp32":
            return fp32, export_seconds + convert_seconds
        import nncf

        calibration = calibration_set(self._model, self._artifacts)
        int8, seconds = self._artifacts.make(
            f"openvino_int8-{calibration.info['key']}.xml", lambda out: quantize_nncf(fp32, calibration.states(), out)
        )
        self._quantization = {
            "library": f"nncf.quantize (NNCF {nncf.__version__})",
            "preset": "NNCF default (mixed)",
            "subset_size": int(calibration.info["states"]),
            "quantize_seconds": round(seconds, 3),
            "calibration": calibration.info,
        }
        return int8, export_seconds + convert_seconds + calibration.seconds + seconds

    def prepare_impl(self):
        reason = unavailable_reason(self.info.precision)
        if reason:
            raise RuntimeUnavailable(reason)
        import openvino as ov

        start = time.perf_counter()
        path, made_seconds = self._ir()
        # Everything made for this runtime counts, also what another runtime made first (the ONNX export, the
        # calibration states); ``Runner.prepare`` adds this call's wall time, so what was made here is taken off.
        self.prepare_seconds = made_seconds - (time.perf_counter() - start)
        self.artifact_path = path
        self.artifact_bytes = path.stat().st_size + path.with_suffix(".bin").stat().st_size
        self.compiled = ov.Core().compile_model(str(path), "CPU", compile_config())
        self.request = self.compiled.create_infer_request()

    def infer_impl(self, batch: np.ndarray) -> np.ndarray:
        return np.array(self.request.infer({0: batch})[0], dtype=np.float32, copy=True)  # its buffer is reused

    def describe_impl(self) -> dict:
        import openvino as ov

        libraries = {"openvino": ov.__version__}
        if self._quantization:
            import nncf

            libraries["nncf"] = nncf.__version__
        compiled = {name: _shown(self.compiled.get_property(name)) for name in REPORTED}
        details = {"device": "CPU", "requested": {k: str(v) for k, v in compile_config().items()}, "compiled": compiled}
        if self._quantization:
            details["quantization"] = self._quantization
        return {
            "libraries": libraries,
            "details": details,
            "numerics": {"tf32": "not-applicable", "inference_precision": compiled["INFERENCE_PRECISION_HINT"]},
        }

    def close_impl(self):
        self.request = self.compiled = None


def _shown(value) -> str:
    """A compiled model's property as OpenVINO spells it in its configuration ("f32", "LATENCY", "2")."""
    for spelling in ("to_string", "name"):
        if callable(getattr(value, spelling, None)):
            return str(getattr(value, spelling)())
    return str(getattr(value, "name", value))
