"""Native TensorRT: FP32 and FP16 engines from the model's ONNX, run with execute_async_v3.

NOT RUN HERE: TensorRT cannot be installed in the workplace this was written in (PyPI's tensorrt
packages fetch their libraries from NVIDIA's own index at install time, which is unreachable).
This runner follows NVIDIA's documented Python API (``tensorrt`` 10/11 and cuda-python, as in
TensorRT's ``samples/python/common_runtime.py``); its decisions that need no library — which
ONNX, which builder flags, which shapes, which buffers — live in pure functions that
``tests/test_tensorrt.py`` covers, and the call sequence is checked against a recording fake.
Without the ``tensorrt`` package the runtimes are recorded as unavailable, with that reason.

Precision, by TensorRT major version:
  * TensorRT 10 (weakly typed networks): both engines from the FP32 ONNX; FP32 clears
    ``BuilderFlag.TF32`` (otherwise FP32 convolutions and matmuls may run in TF32), FP16 sets
    ``BuilderFlag.FP16``.
  * TensorRT 11 and later: every network is strongly typed and the precision flags are gone;
    the types in the ONNX decide, so the FP16 engine is built from the FP16 ONNX.
"""
from __future__ import annotations

import ctypes
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from ..agent.protocol import OBSERVATION_SHAPE
from ..measure import MAX_BATCH  # the batch sweep's largest size; the optimisation profile covers 1..MAX_BATCH
from .base import Runner, RuntimeUnavailable

WORKSPACE_BYTES = 1 << 30


@dataclass(frozen=True)
class BuildPlan:
    onnx: str                 # "fp32" or "fp16": which ONNX the engine is parsed from
    strongly_typed: bool
    set_flags: tuple          # BuilderFlag names to set
    clear_flags: tuple        # BuilderFlag names to clear


def major_version(version: str) -> int:
    return int(version.split(".", 1)[0])


def build_plan(trt_major: int, precision: str) -> BuildPlan:
    if precision not in ("fp32", "fp16"):
        raise ValueError(f"unknown precision {precision!r}")
    if trt_major >= 11:
        return BuildPlan(precision, True, (), ())
    if trt_major == 10:
        if precision == "fp32":
            return BuildPlan("fp32", False, (), ("TF32",))
        return BuildPlan("fp32", False, ("FP16",), ())
    raise RuntimeUnavailable(f"TensorRT {trt_major}.x is older than the 10.x API this runner is written for")


def profile_shapes(max_batch: int = MAX_BATCH) -> tuple[tuple, tuple, tuple]:
    """min / opt / max input shapes: tuned for the batch=1 decision, valid up to the sweep's largest batch."""
    return (1, *OBSERVATION_SHAPE), (1, *OBSERVATION_SHAPE), (max_batch, *OBSERVATION_SHAPE)


def engine_file_name(precision: str, trt_version: str, gpu_name: str, model_sha: str) -> str:
    """Engines are specific to the GPU and the TensorRT version: the name says both."""
    gpu = "".join(c if c.isalnum() else "-" for c in gpu_name.lower()).strip("-")
    return f"model-{model_sha[:12]}-trt{trt_version}-{gpu}-{precision}.engine"


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
    return values[0] if len(values) == 1 else tuple(values)


class TensorRTRunner(Runner):
    def __init__(self, info, onnx_getters: dict, engine_folder, model_sha: str, cuda_index: int = 0,
                 cuda_graph: bool = False):
        """``info``: the registry entry (its precision). ``onnx_getters``: {"fp32": callable, "fp16": callable},
        each -> (path, seconds to make it)."""
        super().__init__(info)
        self._onnx_getters, self._engine_folder, self._model_sha = onnx_getters, engine_folder, model_sha
        self._cuda_index, self.cuda_graph = cuda_index, cuda_graph
        self.fixed_batch = 1 if cuda_graph else None
        self._allocations = []
        self._reuse_engine = None  # a serialised engine built by another process's runner (parallel play)

    @staticmethod
    def unavailable_reason() -> str | None:
        try:
            import tensorrt  # noqa: F401
        except ImportError as e:
            return f"the tensorrt Python package is not installed ({e})"
        try:
            _cudart()
        except ImportError as e:
            return f"cuda-python (cuda.bindings) is not installed ({e})"
        return None

    # -- build -----------------------------------------------------------------------------------
    def _build_engine(self, trt, plan: BuildPlan, onnx_path) -> bytes:
        logger = trt.Logger(trt.Logger.WARNING)
        builder = trt.Builder(logger)
        flags = 1 << int(trt.NetworkDefinitionCreationFlag.STRONGLY_TYPED) if plan.strongly_typed else 0
        network = builder.create_network(flags)
        parser = trt.OnnxParser(network, logger)
        with open(onnx_path, "rb") as f:
            if not parser.parse(f.read()):
                errors = "; ".join(str(parser.get_error(i)) for i in range(parser.num_errors))
                raise RuntimeError(f"TensorRT could not parse {onnx_path}: {errors}")
        config = builder.create_builder_config()
        config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, WORKSPACE_BYTES)
        for name in plan.set_flags:
            config.set_flag(getattr(trt.BuilderFlag, name))
        for name in plan.clear_flags:
            config.clear_flag(getattr(trt.BuilderFlag, name))
        profile = builder.create_optimization_profile()
        min_shape, opt_shape, max_shape = profile_shapes()
        profile.set_shape(network.get_input(0).name, min_shape, opt_shape, max_shape)
        config.add_optimization_profile(profile)
        serialized = builder.build_serialized_network(network, config)
        if serialized is None:
            raise RuntimeError("TensorRT's builder returned no engine (see its log above)")
        return bytes(serialized)

    def prepare_impl(self):
        reason = self.unavailable_reason()
        if reason:
            raise RuntimeUnavailable(reason)
        import tensorrt as trt
        cudart = _cudart()
        self.trt_version = trt.__version__
        plan = build_plan(major_version(trt.__version__), self.info.precision)
        onnx_path, onnx_seconds = self._onnx_getters[plan.onnx]()
        cuda_check(cudart.cudaSetDevice(self._cuda_index))
        props = cuda_check(cudart.cudaGetDeviceProperties(self._cuda_index))
        gpu_name = props.name.decode() if isinstance(props.name, bytes) else str(props.name)
        if self._reuse_engine is not None:
            path = Path(self._reuse_engine)
            engine_bytes = path.read_bytes()
        else:
            engine_bytes = self._build_engine(trt, plan, onnx_path)
            self._engine_folder.mkdir(parents=True, exist_ok=True)
            path = self._engine_folder / engine_file_name(self.info.precision, trt.__version__, gpu_name,
                                                          self._model_sha)
            path.write_bytes(engine_bytes)
        self.artifact_path, self.artifact_bytes = path, len(engine_bytes)
        self.plan, self.prepare_seconds = plan, onnx_seconds

        self.runtime = trt.Runtime(trt.Logger(trt.Logger.WARNING))
        self.engine = self.runtime.deserialize_cuda_engine(engine_bytes)
        self.context = self.engine.create_execution_context()
        self.input_name = self.engine.get_tensor_name(0)
        self.output_name = self.engine.get_tensor_name(1)
        self.num_actions = int(self.engine.get_tensor_shape(self.output_name)[-1])
        in_bytes = MAX_BATCH * int(np.prod(OBSERVATION_SHAPE))
        out_bytes = MAX_BATCH * self.num_actions * 4
        self.d_in = self._malloc(cudart.cudaMalloc, in_bytes)
        self.d_out = self._malloc(cudart.cudaMalloc, out_bytes)
        self.h_in = self._pinned(in_bytes, np.uint8).reshape(MAX_BATCH, *OBSERVATION_SHAPE)
        self.h_out = self._pinned(out_bytes, np.float32).reshape(MAX_BATCH, self.num_actions)
        self.stream = cuda_check(cudart.cudaStreamCreate())
        self.context.set_tensor_address(self.input_name, self.d_in)
        self.context.set_tensor_address(self.output_name, self.d_out)
        if self.cuda_graph:
            self._capture(cudart)

    def _malloc(self, fn, nbytes):
        ptr = cuda_check(fn(nbytes))
        self._allocations.append(("device", ptr))
        return ptr

    def _pinned(self, nbytes, dtype) -> np.ndarray:
        cudart = _cudart()
        ptr = cuda_check(cudart.cudaMallocHost(nbytes))
        self._allocations.append(("host", ptr))
        buf = (ctypes.c_byte * nbytes).from_address(int(ptr))
        return np.frombuffer(buf, dtype=dtype)

    # -- run ---------------------------------------------------------------------------------------
    def _enqueue(self, cudart, n: int) -> None:
        """Host→device copy, inference, device→host copy, all on our stream (no sync)."""
        in_bytes = n * int(np.prod(OBSERVATION_SHAPE))
        H2D, D2H = cudart.cudaMemcpyKind.cudaMemcpyHostToDevice, cudart.cudaMemcpyKind.cudaMemcpyDeviceToHost
        cuda_check(cudart.cudaMemcpyAsync(self.d_in, self.h_in.ctypes.data, in_bytes, H2D, self.stream))
        self.context.set_input_shape(self.input_name, (n, *OBSERVATION_SHAPE))
        if not self.context.execute_async_v3(self.stream):
            raise RuntimeError("execute_async_v3 failed")
        cuda_check(cudart.cudaMemcpyAsync(self.h_out.ctypes.data, self.d_out, n * self.num_actions * 4, D2H,
                                          self.stream))

    def _capture(self, cudart) -> None:
        """Capture the batch=1 copy-infer-copy sequence into a CUDA graph (after one plain enqueue,
        which TensorRT needs to settle shapes before capture)."""
        self._enqueue(cudart, 1)
        cuda_check(cudart.cudaStreamSynchronize(self.stream))
        mode = cudart.cudaStreamCaptureMode.cudaStreamCaptureModeGlobal
        cuda_check(cudart.cudaStreamBeginCapture(self.stream, mode))
        self._enqueue(cudart, 1)
        graph = cuda_check(cudart.cudaStreamEndCapture(self.stream))
        self.graph_exec = cuda_check(cudart.cudaGraphInstantiate(graph, 0))

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
        return {"engine_path": str(self.artifact_path)}

    def reuse(self, worker_args: dict) -> None:
        self._reuse_engine = worker_args.get("engine_path")

    def describe_impl(self) -> dict:
        plan = getattr(self, "plan", None)
        if plan is None:
            numerics = {}
        elif "TF32" in plan.clear_flags:
            numerics = {"tf32": "off", "switches": {"BuilderFlag.TF32": "cleared"}}
        elif plan.strongly_typed:
            numerics = {"tf32": "by-types"}
        else:
            numerics = {"tf32": "default"}
        return {"libraries": {"tensorrt": getattr(self, "trt_version", None)}, "numerics": numerics,
                "details": {"plan": asdict(plan) if plan else None, "cuda_graph": self.cuda_graph}}

    def close_impl(self) -> None:
        if not self._allocations:
            return
        cudart = _cudart()
        for kind, ptr in self._allocations:
            (cudart.cudaFreeHost if kind == "host" else cudart.cudaFree)(ptr)
        self._allocations.clear()
