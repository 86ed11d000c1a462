"""ONNX Runtime INT8: static post-training quantization (QDQ) of the run's FP32 ONNX, on the CPU or CUDA EP.

``onnxruntime.quantization.quantize_static`` inserts QuantizeLinear/DequantizeLinear pairs around every Conv and
Gemm: weights INT8 with one scale per output channel, activations UINT8 with scales from the run's calibration
states (``collect.calibration``: the reference's own play on seeds the report never judges), taken at the
99.999th percentile of each tensor's values rather than its extreme, so that a rare outlier does not coarsen the
steps of every other value. LayerNormalization, ReLU and the input's /255 stay FP32 (per-channel quantization of
LayerNormalization's one-dimensional weights fails in onnxruntime 1.32, and normalising in 8 bits would cost the
most accuracy for the least time). The CPU EP fuses each Q/DQ pattern into integer kernels; ONNX Runtime's CUDA EP
has no INT8 convolution or Gemm, so there the Q/DQ nodes run as nodes around FP32 kernels (the INT8 rounding, not
INT8 arithmetic): its ``details`` say so. The quantized model is made once per run, shared by both EPs and by
every play process; calibration and quantization count in the runtime's ``prepare_seconds``.
"""

from __future__ import annotations

import contextlib
import io
import logging
import time
from pathlib import Path

import numpy as np

from ..calibration import calibration_set
from .onnxrt import OrtRunner

OPS = ("Conv", "Gemm")
SETTINGS = {
    "format": "QDQ",
    "weights": "int8, per output channel",
    "activations": "uint8, per tensor",
    "calibration_method": "Percentile (99.999)",
    "quantized_ops": list(OPS),
    "fp32_ops": "LayerNormalization, ReLU, the input's /255",
}
CUDA_NOTE = (
    "ONNX Runtime's CUDA EP implements QuantizeLinear and DequantizeLinear but no INT8 Conv or Gemm: "
    "the values are rounded to the INT8 grid and computed in FP32 (no TF32)"
)
CALIBRATION_BATCH = 64


def calibration_batch(states: int, limit: int = CALIBRATION_BATCH) -> int:
    """The size of every calibration batch: the largest that divides the ``states`` and is at most ``limit``.
    ONNX Runtime's percentile calibrator stacks each tensor's values batch by batch and fails on batches of
    unequal sizes, so a last partial batch is not an option; 512 states (whole games) keep batches of 64, and a set
    of any other size (games shorter than ``states_per_game``, states left out) is calibrated on in equal batches
    all the same, down to one state each."""
    return next(b for b in range(min(limit, states), 0, -1) if states % b == 0)


def quantize_qdq(source: Path, states: np.ndarray, out: Path, batch_limit: int = CALIBRATION_BATCH) -> None:
    """``batch_limit``: the largest calibration batch (a model that takes one batch size: that one)."""
    from onnxruntime.quantization import (
        CalibrationDataReader,
        CalibrationMethod,
        QuantFormat,
        QuantType,
        quantize_static,
    )

    import onnx

    # the model's own input name (an exported or user-given ONNX need not call it "observation"), and the batch
    # size its input fixes, if it does (then every batch is of that size)
    given = onnx.load(str(source)).graph.input[0]
    input_name, first = given.name, given.type.tensor_type.shape.dim[0]
    size = calibration_batch(len(states), min(batch_limit, first.dim_value or batch_limit))

    class Reader(CalibrationDataReader):
        def __init__(self):
            self._batches = iter(states[i : i + size] for i in range(0, len(states), size))

        def get_next(self):
            batch = next(self._batches, None)
            return None if batch is None else {input_name: batch}

    # The percentile calibrator prints its progress, and the quantizer logs advice through the root logger: both
    # would land between collect's progress lines.
    logging.disable(logging.WARNING)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            quantize_static(
                str(source),
                str(out),
                Reader(),
                quant_format=QuantFormat.QDQ,
                activation_type=QuantType.QUInt8,
                weight_type=QuantType.QInt8,
                per_channel=True,
                calibrate_method=CalibrationMethod.Percentile,
                op_types_to_quantize=list(OPS),
                extra_options={"CalibPercentile": 99.999},
            )
    finally:
        logging.disable(logging.NOTSET)


class OrtInt8Runner(OrtRunner):
    def __init__(self, info, model, artifacts, cuda_index: int = 0):
        self._model, self._artifacts = model, artifacts
        self._quantization: dict = {}
        super().__init__(info, self._quantized, cuda_index)

    def _quantized(self) -> tuple[Path, float]:
        """The INT8 model, and the seconds this run spent on it (export, calibration states, quantization) less
        those spent here and now: ``Runner.prepare`` adds its own wall time, which includes them."""
        start = time.perf_counter()
        calibration = calibration_set(self._model, self._artifacts)
        source, export_seconds = self._artifacts.onnx_fp32()
        limit = self._model.fixed_batch or CALIBRATION_BATCH
        path, seconds = self._artifacts.make(
            f"model_int8_qdq-{calibration.info['key']}.onnx",
            lambda out: quantize_qdq(source, calibration.states(), out, limit),
        )
        self._quantization = {
            **SETTINGS,
            "calibration_batch": calibration_batch(int(calibration.info["states"]), limit),
            "library": "onnxruntime.quantization.quantize_static",
            "quantize_seconds": round(seconds, 3),
            "calibration": calibration.info,
        }
        return path, export_seconds + calibration.seconds + seconds - (time.perf_counter() - start)

    def describe_impl(self) -> dict:
        d = super().describe_impl()
        details = {**d.get("details", {}), "quantization": self._quantization}
        if self.info.device == "cuda":
            details["int8_kernels"] = CUDA_NOTE
        return {**d, "details": details}
