"""Every runtime rtreport knows: one declarative entry each, here or in another package.

A runtime is a ``Runtime``: its id, what it is (framework, device, precision, variant), ``check(model)``
— why this machine cannot run it, or None — and ``make(model, artifacts, cuda_index)``, which returns its
runner (``runners.base.Runner``). Other packages add runtimes through the ``rtreport.runtimes`` entry-point
group, the way pytest finds ``pytest11`` plugins: the entry point names a ``Runtime``, a list of them, or a
function returning either. Nothing else in rtreport needs to change; everything the report shows about a
runtime is stored in the run's file.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, replace
from typing import Callable

ENTRY_POINT_GROUP = "rtreport.runtimes"


@dataclass(frozen=True)
class Runtime:
    id: str  # e.g. "ort-cuda-fp16"
    framework: str  # "PyTorch", "ONNX Runtime", "TensorRT", …
    device: str  # "cpu" or "cuda"
    precision: str  # "fp32", "fp16" or "int8"
    variant: str = ""  # e.g. "CUDA graph", "IO binding"
    check: Callable = lambda model: None  # ModelSource | None -> reason it cannot run here, or None
    make: Callable | None = None  # (ModelSource, Artifacts, cuda_index) -> Runner
    reference_rank: int | None = None  # the available runtime of lowest rank is the run's reference
    # Why a plain `collect` leaves it out (measured only when --runtimes names it), or "" (measured by default).
    opt_in: str = ""
    # A runtime from another package: (its distribution's name, version, SHA-256 of its installed files).
    package: tuple = ()
    # The runtime whose decision path this one replays as a CUDA graph: the same kernels with the same arguments,
    # launched by the graph instead of the host. In play, that runtime's decisions may come from this one
    # (``collect.play.twins``), checked bit for bit on a sample of them; "" for none.
    same_kernels_as: str = ""

    @property
    def title(self) -> str:
        extra = f", {self.variant}" if self.variant else ""
        return f"{self.framework} {self.device.upper()} {self.precision.upper()}{extra}"


def make_runner(spec: Runtime, model, artifacts, cuda_index: int):
    """``spec``'s runner for ``model``, told what one decision's input is (the model's task's observation) before
    anything prepares it."""
    runner = spec.make(model, artifacts, cuda_index)
    task = getattr(model, "task", None)
    if task is not None:
        runner.observation = task.observation
    if getattr(model, "fixed_batch", None) is not None:  # a model that takes one batch size: only that one is asked
        runner.fixed_batch = model.fixed_batch
    return runner


def _builds_every_batch(runtime: str, reason: Callable) -> Callable:
    """``check`` of a runtime that builds for the sweep's batch sizes ahead (TensorRT's optimisation profile):
    its own reason, else why a model whose input fixes the batch cannot run on it."""

    def check(model):
        from .fixed_batch import refusal

        return reason(model) or (refusal(model, runtime) if model is not None else None)

    return check


# -- the built-in runtimes ---------------------------------------------------------------------------------


def _torch(device, precision, graph=False, compiled=False, rank=None) -> Runtime:
    from .runners.torch_runner import COMPILE_MODE, TorchRunner

    suffix = "-compile" if compiled else "-graph" if graph else ""
    variant = f"torch.compile ({COMPILE_MODE}) + CUDA graph" if compiled else "CUDA graph" if graph else ""
    info = Runtime(
        f"torch-{device}-{precision}{suffix}",
        "PyTorch",
        device,
        precision,
        variant,
        lambda model: TorchRunner.unavailable_reason(device, model.format if model else "pytorch", compiled),
        lambda model, artifacts, cuda: TorchRunner(info, model.torch_model, cuda, graph or compiled, compiled),
        rank,
        same_kernels_as=f"torch-{device}-{precision}" if graph and not compiled else "",
    )
    return info


def _ort(device, precision, graph=False, ep=None, rank=None) -> Runtime:
    from .runners.onnxrt import OrtRunner

    ep = ep or device
    variant = {
        "cpu": "",
        "cuda": "IO binding + CUDA graph" if graph else "IO binding",
        "tensorrt": "TensorRT EP, IO binding",
    }[ep]
    rid = f"ort-trt-{precision}" if ep == "tensorrt" else f"ort-{device}-{precision}{'-graph' if graph else ''}"

    def make(model, artifacts, cuda):
        onnx = artifacts.onnx_fp16 if precision == "fp16" and ep != "tensorrt" else artifacts.onnx_fp32
        return OrtRunner(info, onnx, cuda, graph, ep, artifacts.folder / "ort-trt-cache")

    info = Runtime(
        rid,
        "ONNX Runtime",
        device,
        precision,
        variant,
        _builds_every_batch("TensorRT", lambda model: OrtRunner.unavailable_reason(ep))
        if ep == "tensorrt"
        else lambda model: OrtRunner.unavailable_reason(ep),
        make,
        rank,
        same_kernels_as=f"ort-{device}-{precision}" if graph else "",
    )
    return info


def _tensorrt(flavour, precision, graph=False) -> Runtime:
    from .runners.tensorrt_runner import TensorRTRunner
    from .runners.trt_build import FLAVOURS

    def make(model, artifacts, cuda):
        return TensorRTRunner(
            info,
            flavour,
            {"fp32": artifacts.onnx_fp32, "fp16": artifacts.onnx_fp16},
            artifacts.folder,
            model.sha256,
            cuda,
            graph,
            model.num_actions,
        )

    info = Runtime(
        f"{flavour}-{precision}{'-graph' if graph else ''}",
        FLAVOURS[flavour].name,
        "cuda",
        precision,
        "CUDA graph" if graph else "",
        _builds_every_batch(FLAVOURS[flavour].name, lambda model: TensorRTRunner.unavailable_reason(flavour)),
        make,
        same_kernels_as=f"{flavour}-{precision}" if graph else "",
    )
    return info


def _ort_rtx(precision) -> Runtime:
    from .runners.ort_plugin_ep import OrtPluginEpRunner

    def make(model, artifacts, cuda):
        return OrtPluginEpRunner(info, artifacts.onnx_fp16 if precision == "fp16" else artifacts.onnx_fp32, cuda)

    info = Runtime(
        f"ort-trtrtx-{precision}",
        "ONNX Runtime",
        "cuda",
        precision,
        "TensorRT-RTX EP (plugin)",
        lambda model: OrtPluginEpRunner.unavailable_reason(),
        make,
    )
    return info


# INT8 and OpenVINO on the CPU: each quantized runtime flips about one decision in eight, so it plays its own game on
# nearly every seed; with them a full CPU collect takes far longer than the README's one command promises.
OPT_IN = (
    "opt-in: measured only when --runtimes names it (its calibration, and its own games where it flips, "
    "make a full run much longer)"
)


def _ort_int8(device) -> Runtime:
    from .runners.onnxrt import OrtRunner
    from .runners.ort_int8 import OrtInt8Runner

    info = Runtime(
        f"ort-{device}-int8",
        "ONNX Runtime",
        device,
        "int8",
        "QDQ" if device == "cpu" else "QDQ, IO binding",
        lambda model: OrtRunner.unavailable_reason(device),
        lambda model, artifacts, cuda: OrtInt8Runner(info, model, artifacts, cuda),
        opt_in=OPT_IN,
    )
    return info


def _openvino(precision) -> Runtime:
    from .runners import openvino_runner

    info = Runtime(
        f"openvino-cpu-{precision}",
        "OpenVINO",
        "cpu",
        precision,
        "NNCF PTQ" if precision == "int8" else "",
        lambda model: openvino_runner.unavailable_reason(precision),
        lambda model, artifacts, cuda: openvino_runner.OpenVinoRunner(info, model, artifacts),
        opt_in=OPT_IN,
    )
    return info


def builtin_runtimes() -> list[Runtime]:
    """In report order. Reference ranks: PyTorch FP32 on the GPU (TF32 off), else on the CPU; a run that
    measures neither falls back to ONNX Runtime FP32 and says so."""
    return [
        _torch("cpu", "fp32", rank=1),
        _ort("cpu", "fp32", rank=3),
        _ort_int8("cpu"),
        _openvino("fp32"),
        _openvino("int8"),
        _torch("cuda", "fp32", rank=0),
        _torch("cuda", "fp32", graph=True),
        _torch("cuda", "fp16"),
        _torch("cuda", "fp16", graph=True),
        _torch("cuda", "fp32", compiled=True),
        _torch("cuda", "fp16", compiled=True),
        _ort("cuda", "fp32", rank=2),
        _ort("cuda", "fp32", graph=True),
        _ort("cuda", "fp16"),
        _ort("cuda", "fp16", graph=True),
        _tensorrt("trt", "fp32"),
        _tensorrt("trt", "fp32", graph=True),
        _tensorrt("trt", "fp16"),
        _tensorrt("trt", "fp16", graph=True),
        _ort("cuda", "fp32", ep="tensorrt"),
        _ort("cuda", "fp16", ep="tensorrt"),
        _tensorrt("trtrtx", "fp32"),
        _tensorrt("trtrtx", "fp32", graph=True),
        _tensorrt("trtrtx", "fp16"),
        _tensorrt("trtrtx", "fp16", graph=True),
        _ort_rtx("fp32"),
        _ort_rtx("fp16"),
        _ort_int8("cuda"),
    ]


# -- runtimes from other packages ----------------------------------------------------------------------------


def plugin_runtimes(taken: set[str], warn=lambda line: print(line, file=sys.stderr)) -> list[Runtime]:
    from importlib.metadata import entry_points

    from .packages import package_of

    found = []
    for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        try:
            obj = ep.load()
            obj = obj() if callable(obj) and not isinstance(obj, Runtime) else obj
            items = [obj] if isinstance(obj, Runtime) else list(obj)
            if not all(isinstance(r, Runtime) and r.make is not None for r in items):
                raise TypeError("expected Runtime entries with a make function")
            package = package_of(ep)
            items = [replace(r, package=package) for r in items]
        except Exception as e:  # a broken plugin must not stop a run of the others
            warn(f"rtreport: runtime plugin {ep.name} ({ep.value}) ignored: {type(e).__name__}: {e}")
            continue
        for r in items:
            if r.id in taken:
                warn(f"rtreport: runtime plugin {ep.name} ignored its runtime {r.id}: that id is taken")
                continue
            taken.add(r.id)
            found.append(r)
    return found


def all_runtimes() -> list[Runtime]:
    builtin = builtin_runtimes()
    return builtin + plugin_runtimes({r.id for r in builtin})


def reference_runtime_id(available_ids: list[str], runtimes: list[Runtime] | None = None) -> str | None:
    ranked = sorted(
        (r.reference_rank, r.id)
        for r in (runtimes or all_runtimes())
        if r.reference_rank is not None and r.id in available_ids
    )
    return ranked[0][1] if ranked else None
