"""TensorRT-family runtimes — native TensorRT and TensorRT for RTX — built from the model's ONNX files
(``trt_build``) and run with ``execute_async_v3`` over pinned host and device buffers on a cuda-python stream,
optionally as one captured CUDA graph per decision.

What has run where: the build path runs for real with TensorRT-RTX on a CPU machine (CI) and on the H200
(where TensorRT-RTX refuses to load engines: compute capability 9.0 is not among those it serves). Execution —
buffers, copies, ``execute_async_v3``, CUDA graphs — needs a GPU the library serves and is tested against a
recording fake only (tests/test_tensorrt.py). Native TensorRT cannot be installed in this project's workplace.
"""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

import numpy as np

from ..agent.protocol import NUM_ACTIONS
from ..measure import MAX_BATCH
from . import trt_build
from .base import Runner, RuntimeUnavailable


def _cudart():
    try:
        from cuda.bindings import runtime as cudart  # cuda-python >= 12.6
    except ImportError:
        from cuda import cudart  # older cuda-python
    return cudart


def cuda_check(result):
    """cuda-python calls return (error, *values): raise on an error, return the values."""
    err, *values = result if isinstance(result, tuple) else (result,)
    if int(err) != 0:
        raise RuntimeError(f"CUDA error {err}")
    return values[0] if len(values) == 1 else tuple(values) if values else None


def engine_file_name(flavour: str, precision: str, version: str, gpu_name: str, model_sha: str) -> str:
    """Engines are specific to the GPU and the library's version: the name says both."""
    gpu = "".join(c if c.isalnum() else "-" for c in gpu_name.lower()).strip("-")
    return f"model-{model_sha[:12]}-{flavour}{version}-{gpu}-{precision}.engine"


def gpu_reason(cudart) -> str | None:
    """Why there is no CUDA GPU to run on, or None."""
    try:
        err, count = cudart.cudaGetDeviceCount()
    except Exception as e:  # a driver-less machine can fail inside the call
        return f"no CUDA GPU: cudaGetDeviceCount failed ({type(e).__name__}: {e})"
    if int(err) != 0 or not count:
        return f"no CUDA GPU visible (cudaGetDeviceCount: {getattr(err, 'name', err)})"
    return None


class TensorRTRunner(Runner):
    def __init__(
        self,
        info,
        flavour: str,
        onnx_getters: dict,
        engine_folder,
        model_sha: str,
        cuda_index: int = 0,
        cuda_graph: bool = False,
        num_actions: int = NUM_ACTIONS,
    ):
        """``flavour``: "trt" or "trtrtx" (``trt_build.FLAVOURS``). ``onnx_getters``: {"fp32": callable,
        "fp16": callable}, each -> (path, seconds to make it). ``num_actions``: the model's outputs per decision
        (its actions' Q-values or logits, or a continuous action's dimensions); its input is ``observation``."""
        super().__init__(info)
        self.flavour = trt_build.FLAVOURS[flavour]
        self._onnx_getters, self._engine_folder, self._model_sha = onnx_getters, Path(engine_folder), model_sha
        self._cuda_index, self.cuda_graph = cuda_index, cuda_graph
        self.fixed_batch = 1 if cuda_graph else None
        self._allocations, self._cuda_objects = [], []
        self._reuse_engine = None  # a serialised engine built by another process's runner (parallel play)
        self.built = None
        self.num_actions = num_actions

    @staticmethod
    def unavailable_reason(flavour: str) -> str | None:
        try:
            trt_build.import_library(trt_build.FLAVOURS[flavour])
            cudart = _cudart()
        except RuntimeUnavailable as e:
            return str(e)
        except ImportError as e:
            return f"cuda-python (cuda.bindings) is not installed ({e}); pip install cuda-python"
        return gpu_reason(cudart)

    # -- prepare ------------------------------------------------------------------------------------
    def prepare_impl(self):
        reason = self.unavailable_reason(self.flavour.key)
        if reason:
            raise RuntimeUnavailable(reason)
        trt, cudart = trt_build.import_library(self.flavour), _cudart()
        self.trt, self.version = trt, trt.__version__
        cuda_check(cudart.cudaSetDevice(self._cuda_index))
        props = cuda_check(cudart.cudaGetDeviceProperties(self._cuda_index))
        gpu_name = (
            props.name.decode(errors="replace").rstrip("\0") if isinstance(props.name, bytes) else str(props.name)
        )
        data = Path(self._reuse_engine).read_bytes() if self._reuse_engine else self._build(gpu_name)
        try:
            self.runtime, self.engine = trt_build.load_engine(trt, data)
        except trt_build.VersionMismatch:
            if not self._reuse_engine:
                raise
            self._reuse_engine = None  # another version's engine: build this version's own
            data = self._build(gpu_name)
            self.runtime, self.engine = trt_build.load_engine(trt, data)
        self.context = self.engine.create_execution_context()
        if self.context is None:
            raise RuntimeError(f"{self.flavour.name} could not create an execution context")
        self.input_name, self.output_name = trt_build.io_tensors(trt, self.engine, self.num_actions, self.observation)
        shape, dtype = tuple(self.observation.shape), np.dtype(self.observation.dtype)
        in_bytes = MAX_BATCH * int(np.prod(shape)) * dtype.itemsize
        out_bytes = MAX_BATCH * self.num_actions * 4
        self.d_in = self._malloc(in_bytes)
        self.d_out = self._malloc(out_bytes)
        self.h_in = self._pinned(in_bytes, dtype).reshape(MAX_BATCH, *shape)
        self.h_out = self._pinned(out_bytes, np.float32).reshape(MAX_BATCH, self.num_actions)
        self.stream = cuda_check(cudart.cudaStreamCreate())
        self._cuda_objects.append(("stream", self.stream))
        for name, ptr in ((self.input_name, self.d_in), (self.output_name, self.d_out)):
            if not self.context.set_tensor_address(name, int(ptr)):
                raise RuntimeError(f"set_tensor_address refused {name}")
        if self.cuda_graph:
            self._capture(cudart)

    def _build(self, gpu_name: str) -> bytes:
        """Build this runtime's engine and keep it in the artifacts folder (its file, size and build time are
        recorded even if the GPU then refuses to load it)."""
        paths = {}
        seconds = 0.0
        for p in ("fp32", "fp16"):
            if p == "fp32" or self.info.precision == "fp16":
                paths[p], made = self._onnx_getters[p]()
                seconds += made
        self.built = trt_build.build(
            self.trt, paths, self.info.precision, self.num_actions, observation=self.observation
        )
        self.artifact_bytes = len(self.built.engine)
        self.prepare_seconds = seconds + self.built.seconds
        self._engine_folder.mkdir(parents=True, exist_ok=True)
        self.artifact_path = self._engine_folder / engine_file_name(
            self.flavour.key, self.info.precision, self.version, gpu_name, self._model_sha
        )
        part = self.artifact_path.with_name(f".{self.artifact_path.name}.{os.getpid()}.tmp")
        try:  # written whole or not at all: a stopped build leaves no half engine
            part.write_bytes(self.built.engine)
            os.replace(part, self.artifact_path)
        finally:
            part.unlink(missing_ok=True)
        return self.built.engine

    def _malloc(self, nbytes):
        ptr = cuda_check(_cudart().cudaMalloc(nbytes))
        self._allocations.append(("device", ptr))
        return ptr

    def _pinned(self, nbytes, dtype) -> np.ndarray:
        ptr = cuda_check(_cudart().cudaMallocHost(nbytes))
        self._allocations.append(("host", ptr))
        buf = (ctypes.c_byte * nbytes).from_address(int(ptr))
        return np.frombuffer(buf, dtype=dtype)

    # -- run ------------------------------------------------------------------------------------------
    def _enqueue(self, cudart, n: int) -> None:
        """Host→device copy, inference, device→host copy, all on our stream (no sync)."""
        shape = tuple(self.observation.shape)
        in_bytes = n * int(np.prod(shape)) * self.h_in.itemsize
        H2D, D2H = cudart.cudaMemcpyKind.cudaMemcpyHostToDevice, cudart.cudaMemcpyKind.cudaMemcpyDeviceToHost
        cuda_check(cudart.cudaMemcpyAsync(self.d_in, self.h_in.ctypes.data, in_bytes, H2D, self.stream))
        if not self.context.set_input_shape(self.input_name, (n, *shape)):
            raise RuntimeError(f"set_input_shape refused ({n}, {shape}) for {self.input_name}")
        if not self.context.execute_async_v3(self.stream):
            raise RuntimeError("execute_async_v3 failed")
        cuda_check(
            cudart.cudaMemcpyAsync(self.h_out.ctypes.data, self.d_out, n * self.num_actions * 4, D2H, self.stream)
        )

    def _capture(self, cudart) -> None:
        """Capture the batch=1 copy-infer-copy sequence into a CUDA graph (after one plain enqueue,
        which TensorRT needs to settle shapes before capture)."""
        self._enqueue(cudart, 1)
        cuda_check(cudart.cudaStreamSynchronize(self.stream))
        mode = cudart.cudaStreamCaptureMode.cudaStreamCaptureModeGlobal
        cuda_check(cudart.cudaStreamBeginCapture(self.stream, mode))
        self._enqueue(cudart, 1)
        graph = cuda_check(cudart.cudaStreamEndCapture(self.stream))
        self._cuda_objects.append(("graph", graph))
        self.graph_exec = cuda_check(cudart.cudaGraphInstantiate(graph, 0))
        self._cuda_objects.append(("graph_exec", self.graph_exec))

    def infer_impl(self, batch: np.ndarray) -> np.ndarray:
        cudart = _cudart()
        n = batch.shape[0]
        self.h_in[:n] = batch
        if self.cuda_graph:
            cuda_check(cudart.cudaGraphLaunch(self.graph_exec, self.stream))
        else:
            self._enqueue(cudart, n)
        cuda_check(cudart.cudaStreamSynchronize(self.stream))
        return self.h_out[:n].copy()

    def worker_args(self) -> dict:
        # Builds time tactics and may pick others in another process: a worker runs this very engine.
        return {"engine_path": str(self.artifact_path)} if self.artifact_path else {}

    def reuse(self, worker_args: dict) -> None:
        self._reuse_engine = worker_args.get("engine_path")

    def describe_impl(self) -> dict:
        b = self.built
        details = {"cuda_graph": self.cuda_graph}
        if b:
            details.update(onnx=b.onnx, typing=b.typing, build_seconds=round(b.seconds, 3), io=b.io)
        return {
            "libraries": {self.flavour.module: getattr(self, "version", None)},
            "numerics": b.numerics if b else {},
            "details": details,
        }

    def close_impl(self) -> None:
        """Free every CUDA object this runner made, in reverse order; the first failure is raised after all."""
        if not (self._allocations or self._cuda_objects):
            return
        cudart = _cudart()
        errors = []
        free = {
            "graph_exec": cudart.cudaGraphExecDestroy,
            "graph": cudart.cudaGraphDestroy,
            "stream": cudart.cudaStreamDestroy,
        }
        for kind, obj in reversed(self._cuda_objects):
            errors.append(_error(free[kind](obj)))
        for kind, ptr in self._allocations:
            errors.append(_error((cudart.cudaFreeHost if kind == "host" else cudart.cudaFree)(ptr)))
        self._allocations.clear()
        self._cuda_objects.clear()
        errors = [e for e in errors if e]
        if errors:
            raise RuntimeError(f"freeing CUDA objects failed: {errors[0]}")


def _error(result) -> str | None:
    err = result[0] if isinstance(result, tuple) else result
    return None if int(err) == 0 else f"CUDA error {err}"
