"""PyTorch: eager on the CPU (the CPU reference) and CUDA (the GPU reference, TF32 off), and on CUDA
FP32/FP16 a captured CUDA graph of the eager model, and ``torch.compile`` (Inductor) captured the same way."""

from __future__ import annotations

import os

import numpy as np
import torch

from .base import CudaSlots, Runner, RuntimeUnavailable, torch_dtype


def set_tf32(enabled: bool) -> None:
    """TF32 for convolutions and matmuls; the FP32 reference runs with it off."""
    torch.backends.cuda.matmul.allow_tf32 = enabled
    torch.backends.cudnn.allow_tf32 = enabled


def tf32_state() -> dict:
    return {"matmul": torch.backends.cuda.matmul.allow_tf32, "cudnn": torch.backends.cudnn.allow_tf32}


# Inductor's kernels without its own CUDA graphs ("reduce-overhead" would add a device copy into its
# static input each call). No autotuning: on the H200, "max-autotune-no-cudagraphs" took 62 s to prepare and
# its graph ran slower (0.159 vs 0.087 ms per replay, FP32; benchmarks/torch_cuda_variants.py).
COMPILE_MODE = "default"


_FILES_AT_PROCESS_START: list = []  # the cache's file count when this process first looked, before any compile


def inductor_cache_state() -> dict:
    """Where Inductor keeps its compiled kernels and how many files were there before this runtime compiled, and
    when this process first looked (before its first compile): a repeat that found the run's cache (its folder
    carried, ``TORCHINDUCTOR_CACHE_DIR``) loads the same kernels, one that started with an empty cache generates
    them again; only processes of the second kind show whether compiling reproduces (``rtreport.reproducibility``).
    A second compiled runtime of one process finds the first one's files: that is not a carried cache."""
    import getpass
    import tempfile

    folder = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    if not folder:
        try:
            user = getpass.getuser()
        except Exception:  # no user name (a container without one): Inductor's own fallback names it so too
            user = "unknown"
        folder = os.path.join(tempfile.gettempdir(), f"torchinductor_{user}")
    files = sum(len(names) for _, _, names in os.walk(folder)) if os.path.isdir(folder) else 0
    if not _FILES_AT_PROCESS_START:
        _FILES_AT_PROCESS_START.append(files)
    return {
        "set_by_environment": "TORCHINDUCTOR_CACHE_DIR" in os.environ,
        "files_before_compile": files,
        "files_at_process_start": _FILES_AT_PROCESS_START[0],
    }


class TorchRunner(CudaSlots, Runner):
    # Each slot's graph captured on the slot's own stream (see ``open_slots``); benchmarks/graph_overlap.py turns
    # it off to show the fault it prevents.
    capture_on_slot_stream = True

    def __init__(self, info, model_loader, cuda_index: int = 0, cuda_graph: bool = False, compiled: bool = False):
        """``info``: the registry entry (device, precision). ``compiled``: ``torch.compile`` with Inductor (its
        own CUDA graphs off), then captured into our CUDA graph like the ``-graph`` variant, so both replay one
        graph per decision and differ only in the kernels: Inductor fuses the /255 scaling, each LayerNorm and
        its ReLU into generated Triton kernels."""
        super().__init__(info)
        device = info.device
        cuda_graph = cuda_graph or compiled
        self.cuda_graph = cuda_graph
        self.compiled = compiled
        self.fixed_batch = 1 if cuda_graph else None
        self._model_loader = model_loader
        self._torch_device = f"cuda:{cuda_index}" if device == "cuda" else "cpu"

    @staticmethod
    def unavailable_reason(device: str, model_format: str, compiled: bool = False) -> str | None:
        if model_format == "onnx":
            return "the model was given as ONNX; PyTorch runners need the PyTorch weights"
        if compiled and model_format == "torchscript":
            return "torch.compile does not compile a TorchScript module; give the model as a Stable-Baselines3 .zip"
        if device == "cuda" and not torch.cuda.is_available():
            return f"no CUDA device visible to PyTorch {torch.__version__} (torch.cuda.is_available() is False)"
        if compiled:
            from torch.utils._triton import has_triton

            if not has_triton():
                return f"torch.compile's Inductor needs Triton, which PyTorch {torch.__version__} cannot find here"
        return None

    def prepare_impl(self):
        reason = self.unavailable_reason(self.info.device, "pytorch", self.compiled)  # the format checked at start
        if reason:
            raise RuntimeUnavailable(reason)
        if self.info.device == "cuda":
            set_tf32(False)
        model = self._model_loader().to(self._torch_device).eval()
        self.model = model.half() if self.info.precision == "fp16" else model
        self.num_actions = self.model.num_actions
        self.artifact_bytes = sum(p.numel() * p.element_size() for p in self.model.parameters())
        if self.compiled:
            self.inductor_cache = inductor_cache_state()
            # Compiled on the first call (the warm-up inside _capture), so compile time counts in prepare.
            self.model = torch.compile(self.model, mode=COMPILE_MODE, fullgraph=True, dynamic=False)
        if self.cuda_graph:
            self._capture()

    def _capture(self):
        """Capture one batch=1 forward into a CUDA graph over static buffers (PyTorch's documented recipe):
        warm up on a side stream, capture, then each decision copies into the static input and replays."""
        dev = self._torch_device
        self.static_in = torch.zeros((1, *self.observation.shape), dtype=torch_dtype(self.observation), device=dev)
        self.host_in = torch.zeros((1, *self.observation.shape), dtype=torch_dtype(self.observation)).pin_memory()
        self.host_out = torch.zeros((1, self.num_actions), dtype=torch.float32).pin_memory()
        side = torch.cuda.Stream(dev)
        side.wait_stream(torch.cuda.current_stream(dev))
        with torch.cuda.stream(side), torch.inference_mode():
            for _ in range(3):
                self.model(self.static_in)
        torch.cuda.current_stream(dev).wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph), torch.inference_mode():
            self.static_out = self.model(self.static_in).float()

    # -- concurrent play (collect.engine): every game slot decides on its own CUDA stream, all slots in flight --
    def open_slots(self, n: int) -> bool:
        """CUDA: a stream per slot and, for the graph runtimes, a graph per slot captured on that slot's own stream,
        all made here, before any game, never while other decisions are in flight. Measured on the H200
        (benchmarks/graph_overlap.py): graphs of different FP16 runtimes all captured on PyTorch's one default
        capture stream corrupted each other's results when replayed together (2 of 2,048 decisions each), while
        captured on their own streams none did. A likely reason, not proven: a graph bakes in scratch memory of
        the stream it was captured on, such as the cuBLAS workspace PyTorch keeps per stream."""
        if self.info.device != "cuda" or n <= 1 or (self.overlap or "").startswith("off"):
            return False
        if len(self._open() or {}) < n:
            self._slots = {slot: self._make_slot() for slot in range(n)}
        self.slot_design = "each on its own stream" + (" with its own graph" if self.cuda_graph else "")
        return True

    def _make_slot(self) -> dict:
        dev = self._torch_device
        stream = torch.cuda.Stream(dev)
        slot = {**self._new_slot(self.num_actions), "stream": stream}
        if self.cuda_graph:
            slot["static_in"] = torch.zeros(
                (1, *self.observation.shape), dtype=torch_dtype(self.observation), device=dev
            )
            stream.wait_stream(torch.cuda.current_stream(dev))
            with torch.cuda.stream(stream), torch.inference_mode():
                self.model(slot["static_in"])  # this stream's scratch (cuBLAS workspace) exists before the capture
            stream.synchronize()
            slot["graph"] = torch.cuda.CUDAGraph()
            capture = stream if self.capture_on_slot_stream else None  # None: PyTorch's one default capture stream
            with torch.cuda.graph(slot["graph"], stream=capture), torch.inference_mode():
                slot["static_out"] = self.model(slot["static_in"]).float()
        return slot

    def submit(self, slot: int, batch: np.ndarray) -> None:
        """With ``open_slots``' streams: the same kernels as ``infer`` (the graph per slot is a capture of the same
        model), issued on the slot's stream without waiting. Otherwise decided here and now."""
        slots = self._open()
        if slots is None:
            return super().submit(slot, batch)
        s = slots[slot]
        s["host_in"].numpy()[...] = batch  # the slot's previous decision was fetched: its copies are done
        with torch.cuda.stream(s["stream"]), torch.inference_mode():
            if self.cuda_graph:
                s["static_in"].copy_(s["host_in"], non_blocking=True)
                s["graph"].replay()
                s["host_out"].copy_(s["static_out"], non_blocking=True)
            else:
                x = s["host_in"].to(self._torch_device, non_blocking=True)
                s["host_out"].copy_(self.model(x).float(), non_blocking=True)
            s["done"].record(s["stream"])

    def infer_impl(self, batch: np.ndarray) -> np.ndarray:
        if self.cuda_graph:
            self.host_in.numpy()[...] = batch
            self.static_in.copy_(self.host_in, non_blocking=True)
            self.graph.replay()
            self.host_out.copy_(self.static_out, non_blocking=True)
            torch.cuda.current_stream(self._torch_device).synchronize()
            return self.host_out.numpy().copy()
        with torch.inference_mode():
            x = torch.from_numpy(batch).to(self._torch_device, non_blocking=False)
            return self.model(x).float().cpu().numpy()

    def describe_impl(self) -> dict:
        libraries = {"torch": torch.__version__}
        details = {"threads": torch.get_num_threads()}
        if self.compiled:
            import triton

            libraries["triton"] = triton.__version__
            details["compile_mode"] = COMPILE_MODE
            details["inductor_cache"] = getattr(self, "inductor_cache", None)
        if self.info.device != "cuda":
            return {"libraries": libraries, "numerics": {"tf32": "not-applicable"}, "details": details}
        libraries.update(cuda=torch.version.cuda, cudnn=torch.backends.cudnn.version())
        details["gpu"] = torch.cuda.get_device_name(self._torch_device)
        switches = tf32_state()
        return {
            "libraries": libraries,
            "details": details,
            "numerics": {"tf32": "on" if any(switches.values()) else "off", "switches": switches},
        }
