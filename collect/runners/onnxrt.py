"""ONNX Runtime: CPU EP FP32; CUDA EP FP32 (TF32 off) and FP16 with IO binding.

On CUDA the session computes on a CUDA stream that this runner owns (the CUDA EP's ``user_compute_stream``, a
PyTorch stream), so that in play (``collect.engine``) the decisions of many game slots can be issued on it
without a host synchronisation after each: per slot its own device input and output bound to the session (the
graph variant: its one captured graph, replayed for each slot in turn on that stream), copies and runs all
ordered on the one stream, each slot's result fetched after its own event. The same session and kernels as
``infer``; the engine's self-check compares the two bit for bit before trusting it.
"""

from __future__ import annotations

import re

import numpy as np
import onnxruntime as ort

from ..measure import MAX_BATCH
from .base import CudaSlots, Runner, RuntimeUnavailable, torch_dtype

# Errors only: ONNX Runtime 1.31 warns "No registered plugin EP device found for 'CUDAExecutionProvider'" at every
# CUDA session, once per play worker, which buried the progress lines of an H200 run; its errors still print.
LOG_SEVERITY = 3
ort.set_default_logger_severity(LOG_SEVERITY)

PROVIDERS = {"cpu": "CPUExecutionProvider", "cuda": "CUDAExecutionProvider", "tensorrt": "TensorrtExecutionProvider"}


class OrtRunner(CudaSlots, Runner):
    def __init__(
        self,
        info,
        onnx_path_getter,
        cuda_index: int = 0,
        cuda_graph: bool = False,
        ep: str | None = None,
        engine_cache=None,
    ):
        """``info``: the registry entry. ``onnx_path_getter()`` -> (path, seconds it took to make); called once,
        in prepare.

        ``ep``: the execution provider, "cpu", "cuda" (default for device cuda) or "tensorrt"
        (ONNX Runtime's TensorRT EP, engines cached in ``engine_cache``; CUDA EP beneath it).
        """
        super().__init__(info)
        self.ep = ep or info.device
        self._engine_cache = engine_cache
        self.cuda_graph = cuda_graph
        self.fixed_batch = 1 if cuda_graph else None
        self._onnx_path_getter = onnx_path_getter
        self._cuda_index = cuda_index
        self._stream = None  # CUDA EP: the PyTorch stream the session computes on (see the module's docstring)

    @staticmethod
    def unavailable_reason(ep: str) -> str | None:
        provider = PROVIDERS[ep]
        if provider not in ort.get_available_providers():
            return (
                f"{provider} is not in onnxruntime {ort.__version__}'s providers "
                f"({', '.join(ort.get_available_providers())}); install onnxruntime-gpu"
            )
        return None

    def _provider_options(self) -> list:
        if self.info.device == "cpu":
            return [(PROVIDERS["cpu"], {})]
        if self.ep == "tensorrt":
            shape = "x".join(map(str, self.observation.shape))
            trt = {
                "device_id": str(self._cuda_index),
                "trt_fp16_enable": "1" if self.info.precision == "fp16" else "0",
                "trt_engine_cache_enable": "1",
                "trt_engine_cache_path": str(self._engine_cache),
                "trt_profile_min_shapes": f"observation:1x{shape}",
                "trt_profile_opt_shapes": f"observation:1x{shape}",
                "trt_profile_max_shapes": f"observation:{MAX_BATCH}x{shape}",
            }
            return [
                (PROVIDERS["tensorrt"], trt),
                (PROVIDERS["cuda"], {"device_id": str(self._cuda_index), "use_tf32": "0"}),
                (PROVIDERS["cpu"], {}),
            ]
        # use_tf32=0: ORT's CUDA EP enables TF32 by default; the FP32 comparison must not.
        options = {"device_id": str(self._cuda_index), "use_tf32": "0"}
        if self.cuda_graph:
            options["enable_cuda_graph"] = "1"
        if self._stream is not None:
            options["user_compute_stream"] = str(self._stream.cuda_stream)
        return [(PROVIDERS["cuda"], options), (PROVIDERS["cpu"], {})]

    def prepare_impl(self):
        reason = self.unavailable_reason(self.ep)
        if reason:
            raise RuntimeUnavailable(reason)
        path, make_seconds = self._onnx_path_getter()
        self.prepare_seconds = make_seconds  # the export/conversion is part of preparing this runtime
        self.artifact_path = path
        self.artifact_bytes = path.stat().st_size
        if self.info.device == "cuda" and self.ep == "cuda":
            self._stream = _torch_stream(self._cuda_index)
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        if not getattr(self, "_spinning", True):
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session, why = _session_saying_why(str(path), options, self._provider_options())
        if self.info.device == "cuda" and self.session.get_providers()[0] != PROVIDERS[self.ep]:
            raise RuntimeUnavailable(
                f"{PROVIDERS[self.ep]} did not load ({why or 'no reason given'}; session "
                f"providers: {', '.join(self.session.get_providers())})"
            )
        self.input_name = self.session.get_inputs()[0].name
        self.output_name = self.session.get_outputs()[0].name
        if self.info.device == "cuda":
            self.binding = self.session.io_binding()
        if self.cuda_graph:
            # A CUDA graph replays fixed device addresses: bind OrtValues that live on the GPU for good,
            # and copy each decision's state into the input one (ONNX Runtime's documented pattern).
            n_actions = self.session.get_outputs()[0].shape[-1]
            self.graph_in = ort.OrtValue.ortvalue_from_shape_and_type(
                (1, *self.observation.shape), np.dtype(self.observation.dtype), "cuda", self._cuda_index
            )
            self.graph_out = ort.OrtValue.ortvalue_from_shape_and_type(
                (1, n_actions), np.float32, "cuda", self._cuda_index
            )
            self.binding.bind_ortvalue_input(self.input_name, self.graph_in)
            self.binding.bind_ortvalue_output(self.output_name, self.graph_out)
            self.session.run_with_iobinding(self.binding)  # the first run captures the graph

    def for_play(self):
        """On the CPU, a second session of the same model and options that does not busy-wait between calls
        (``session.intra_op.allow_spinning`` = 0): its spinning threads would otherwise take the cores from the
        runtime it alternates with in play (3.2 ms instead of 1.3 ms per PyTorch + ONNX Runtime step on 2
        cores). Thread scheduling only: the same kernels, the same numbers."""
        if self.info.device != "cpu":
            return self
        twin = OrtRunner(self.info, lambda: (self.artifact_path, 0.0), self._cuda_index)
        twin._spinning, twin.observation = False, self.observation
        twin.prepare()
        return twin

    # -- concurrent play (collect.engine) ------------------------------------------------------------------
    def open_slots(self, n: int) -> bool:
        """CUDA EP on this runner's stream: per slot a pinned host input and output, and (without a graph) a
        device input and output bound to the session by the slot's own IO binding; ``submit`` then only enqueues.
        Runs are not synchronised at their end (the run option ``disable_synchronize_execution_providers``): the
        slot's event, recorded after its output's copy on the same stream, is what ``fetch`` waits for."""
        if self._stream is None or n <= 1 or (self.overlap or "").startswith("off"):
            return False
        stream_option = self.session.get_provider_options().get(PROVIDERS["cuda"], {}).get("user_compute_stream")
        if _pointer(stream_option) != self._stream.cuda_stream:
            self.close_slots(f"the CUDA EP did not take the runner's stream (user_compute_stream is {stream_option!r})")
            return False
        if len(self._open() or {}) < n:
            import torch

            dev = f"cuda:{self._cuda_index}"
            if not hasattr(self, "_async"):
                self._async = ort.RunOptions()
                self._async.add_run_config_entry("disable_synchronize_execution_providers", "1")
            if self.cuda_graph:  # the graph's own input and output, seen by PyTorch (no copy)
                self._graph_io = (
                    _device_tensor(
                        self.graph_in.data_ptr(), (1, *self.observation.shape), np.dtype(self.observation.dtype), dev
                    ),
                    _device_tensor(self.graph_out.data_ptr(), tuple(self.graph_out.shape()), np.float32, dev),
                )
            n_actions = self.session.get_outputs()[0].shape[-1]
            slots = {}
            for slot in range(n):
                s = self._new_slot(n_actions)
                if not self.cuda_graph:
                    s["device_in"] = torch.zeros(
                        (1, *self.observation.shape), dtype=torch_dtype(self.observation), device=dev
                    )
                    s["device_out"] = torch.zeros((1, n_actions), dtype=torch.float32, device=dev)
                    s["binding"] = self.session.io_binding()
                    s["binding"].bind_input(
                        self.input_name,
                        "cuda",
                        self._cuda_index,
                        np.dtype(self.observation.dtype),
                        list(s["device_in"].shape),
                        s["device_in"].data_ptr(),
                    )
                    s["binding"].bind_output(
                        self.output_name,
                        "cuda",
                        self._cuda_index,
                        np.float32,
                        list(s["device_out"].shape),
                        s["device_out"].data_ptr(),
                    )
                slots[slot] = s
            self._slots = slots
        self.slot_design = (
            "all on the session's stream, its one graph replayed for each in turn"
            if self.cuda_graph
            else "all on the session's stream, each with its own device input and output"
        )
        return True

    def submit(self, slot: int, batch: np.ndarray) -> None:
        slots = self._open()
        if slots is None:
            return super().submit(slot, batch)
        import torch

        s = slots[slot]
        s["host_in"].numpy()[...] = batch  # the slot's previous decision was fetched: its copies are done
        device_in, device_out = self._graph_io if self.cuda_graph else (s["device_in"], s["device_out"])
        with torch.cuda.stream(self._stream):
            device_in.copy_(s["host_in"], non_blocking=True)
            self.session.run_with_iobinding(self.binding if self.cuda_graph else s["binding"], self._async)
            s["host_out"].copy_(device_out, non_blocking=True)
            s["done"].record(self._stream)

    def infer_impl(self, batch: np.ndarray) -> np.ndarray:
        if self.info.device == "cpu":
            return self.session.run([self.output_name], {self.input_name: batch})[0]
        if self.cuda_graph:
            self.graph_in.update_inplace(batch)
            self.session.run_with_iobinding(self.binding)
            return self.graph_out.numpy()
        # IO binding: the uint8 input is copied to the device once, the output comes back once.
        self.binding.bind_cpu_input(self.input_name, batch)
        self.binding.bind_output(self.output_name, "cpu")
        self.session.run_with_iobinding(self.binding)
        return self.binding.copy_outputs_to_cpu()[0]

    def describe_impl(self) -> dict:
        libraries = {"onnxruntime": ort.__version__}
        details = {"providers": self.session.get_providers()}
        if self.info.device != "cuda":
            return {"libraries": libraries, "numerics": {"tf32": "not-applicable"}, "details": details}
        options = self.session.get_provider_options()
        cuda = options.get(PROVIDERS["cuda"], {})
        if self.ep == "tensorrt":
            details["trt_fp16_enable"] = options.get(PROVIDERS["tensorrt"], {}).get("trt_fp16_enable")
        details["enable_cuda_graph"] = cuda.get("enable_cuda_graph")
        if self._stream is not None:
            details["compute_stream"] = "a PyTorch CUDA stream of the runner (user_compute_stream)"
        use_tf32 = cuda.get("use_tf32")
        return {
            "libraries": libraries,
            "details": details,
            "numerics": {"tf32": "on" if str(use_tf32) == "1" else "off", "switches": {"use_tf32": use_tf32}},
        }


def _session_saying_why(path: str, options, providers: list):
    """``ort.InferenceSession``, and why its first execution provider did not load, if it did not. ONNX Runtime's
    Python layer prints an "EP Error" block to stdout when a provider fails and then falls back to the next one,
    and its C++ layer logs the failed library load: both are kept out of the terminal (collect's progress lines)
    and the error's first line becomes part of the runtime's reason instead."""
    import contextlib
    import io

    said = io.StringIO()
    ort.set_default_logger_severity(4)
    try:
        with contextlib.redirect_stdout(said):
            session = ort.InferenceSession(path, options, providers=providers)
    finally:
        ort.set_default_logger_severity(LOG_SEVERITY)
    error = next((line for line in said.getvalue().splitlines() if line.startswith("EP Error")), None)
    if error:
        error = error.removeprefix("EP Error").split(" when using [")[0].strip()
        error = re.sub(r"^/\S+:\d+ (?:[^()]*\([^()]*\)\s*)?", "", error)  # the source file and function
    return session, (error[:400].rstrip(".") if error else None)


def _torch_stream(cuda_index: int):
    """A CUDA stream for the session to compute on, or None where PyTorch has no CUDA (the EP then uses its own)."""
    import torch

    if not torch.cuda.is_available():
        return None
    return torch.cuda.Stream(f"cuda:{cuda_index}")


def _pointer(value) -> int | None:
    try:
        return int(str(value), 0)
    except ValueError:
        return None


def _device_tensor(pointer: int, shape: tuple, dtype, device: str):
    """A PyTorch view of device memory ONNX Runtime owns (CUDA array interface; no copy, no synchronisation)."""
    import torch

    class View:
        __cuda_array_interface__ = {
            "shape": tuple(shape),
            "typestr": np.dtype(dtype).str,
            "data": (pointer, False),
            "version": 3,
            "strides": None,
        }

    return torch.as_tensor(View(), device=device)
