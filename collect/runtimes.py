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


def _torch(device, precision, graph=False, compiled=False):
    from .runners.torch_runner import TorchRunner
    info = TorchRunner(None, device, precision, 0, graph, compiled).info
    return RuntimeSpec(
        info, lambda model: TorchRunner.unavailable_reason(device, model.format if model else "pytorch", compiled),
        lambda model, artifacts, cuda: TorchRunner(model.torch_model, device, precision, cuda, graph, compiled))


def _ort(device, precision, graph=False, ep=None):
    from .runners.onnxrt import OrtRunner
    info = OrtRunner(None, device, precision, 0, graph, ep).info
    return RuntimeSpec(
        info, lambda model: OrtRunner.unavailable_reason(ep or device),
        lambda model, artifacts, cuda: OrtRunner(
            artifacts.onnx_fp16 if precision == "fp16" and ep != "tensorrt" else artifacts.onnx_fp32,
            device, precision, cuda, graph, ep, artifacts.folder / "ort-trt-cache"))


def _tensorrt(precision, graph=False):
    from .runners.tensorrt_runner import TensorRTRunner
    info = TensorRTRunner({}, None, "", precision, 0, graph).info
    return RuntimeSpec(
        info, lambda model: TensorRTRunner.unavailable_reason(),
        lambda model, artifacts, cuda: TensorRTRunner({"fp32": artifacts.onnx_fp32, "fp16": artifacts.onnx_fp16},
                                                      artifacts.folder, model.sha256, precision, cuda, graph))


def all_runtimes() -> list[RuntimeSpec]:
    """In report order; the first available PyTorch FP32 on the GPU (else CPU) is the reference."""
    return [_torch("cpu", "fp32"), _ort("cpu", "fp32"),
            _torch("cuda", "fp32"), _torch("cuda", "fp32", graph=True),
            _torch("cuda", "fp16"), _torch("cuda", "fp16", graph=True),
            _torch("cuda", "fp32", compiled=True), _torch("cuda", "fp16", compiled=True),
            _ort("cuda", "fp32"), _ort("cuda", "fp32", graph=True),
            _ort("cuda", "fp16"), _ort("cuda", "fp16", graph=True),
            _tensorrt("fp32"), _tensorrt("fp32", graph=True), _tensorrt("fp16"), _tensorrt("fp16", graph=True),
            _ort("cuda", "fp32", ep="tensorrt"), _ort("cuda", "fp16", ep="tensorrt")]


def reference_runtime_id(available_ids: list[str]) -> str | None:
    for rid in ("torch-cuda-fp32", "torch-cpu-fp32", "ort-cuda-fp32", "ort-cpu-fp32"):
        if rid in available_ids:
            return rid
    return None
