"""Every runtime rtreport knows, whether this machine can run it, and how to make its runner."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .artifacts import Artifacts
from .model_input import ModelSource
from .runners.base import Runner, RuntimeInfo


@dataclass(frozen=True)
class RuntimeSpec:
    info: RuntimeInfo
    unavailable_reason: Callable[[ModelSource | None], str | None]
    make: Callable[[ModelSource, Artifacts, int], Runner]


def _torch(device, precision):
    from .runners.torch_runner import TorchRunner
    return RuntimeSpec(
        RuntimeInfo(f"torch-{device}-{precision}", "PyTorch", device, precision),
        lambda model: TorchRunner.unavailable_reason(device, model.format if model else "pytorch"),
        lambda model, artifacts, cuda: TorchRunner(model.torch_model, device, precision, cuda))


def _ort(device, precision):
    from .runners.onnxrt import OrtRunner
    return RuntimeSpec(
        RuntimeInfo(f"ort-{device}-{precision}", "ONNX Runtime", device, precision,
                    "IO binding" if device == "cuda" else ""),
        lambda model: OrtRunner.unavailable_reason(device),
        lambda model, artifacts, cuda: OrtRunner(
            artifacts.onnx_fp16 if precision == "fp16" else artifacts.onnx_fp32, device, precision, cuda))


def _tensorrt(precision):
    def reason(model):
        try:
            import tensorrt  # noqa: F401
        except ImportError as e:
            return f"the tensorrt Python package is not installed ({e})"
        return "rtreport's native TensorRT runner is not written yet (planned: issue #5)"
    return RuntimeSpec(RuntimeInfo(f"trt-{precision}", "TensorRT", "cuda", precision), reason, None)


def all_runtimes() -> list[RuntimeSpec]:
    """In report order; the first available PyTorch FP32 on the GPU (else CPU) is the reference."""
    return [_torch("cpu", "fp32"), _ort("cpu", "fp32"),
            _torch("cuda", "fp32"), _torch("cuda", "fp16"), _ort("cuda", "fp32"), _ort("cuda", "fp16"),
            _tensorrt("fp32"), _tensorrt("fp16")]


def reference_runtime_id(available_ids: list[str]) -> str | None:
    for rid in ("torch-cuda-fp32", "torch-cpu-fp32", "ort-cuda-fp32", "ort-cpu-fp32"):
        if rid in available_ids:
            return rid
    return None
