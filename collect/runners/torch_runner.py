"""PyTorch: eager on the CPU (the CPU reference) and CUDA (the GPU reference, TF32 off), and on CUDA
FP32/FP16 a captured CUDA graph of the eager model, and ``torch.compile`` (Inductor) captured the same way."""
from __future__ import annotations

import numpy as np
import torch

from ..agent.protocol import OBSERVATION_SHAPE
from .base import Runner, RuntimeUnavailable


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


class TorchRunner(Runner):
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
        if model_format != "pytorch":
            return "the model was given as ONNX; PyTorch runners need the PyTorch weights"
        if device == "cuda" and not torch.cuda.is_available():
            return f"no CUDA device visible to PyTorch {torch.__version__} (torch.cuda.is_available() is False)"
        if compiled:
            from torch.utils._triton import has_triton
            if not has_triton():
                return f"torch.compile's Inductor needs Triton, which PyTorch {torch.__version__} cannot find here"
        return None

    def prepare_impl(self):
        reason = self.unavailable_reason(self.info.device, "pytorch", self.compiled)
        if reason:
            raise RuntimeUnavailable(reason)
        if self.info.device == "cuda":
            set_tf32(False)
        model = self._model_loader().to(self._torch_device).eval()
        self.model = model.half() if self.info.precision == "fp16" else model
        self.num_actions = self.model.num_actions
        self.artifact_bytes = sum(p.numel() * p.element_size() for p in self.model.parameters())
        if self.compiled:
            # Compiled on the first call (the warm-up inside _capture), so compile time counts in prepare.
            self.model = torch.compile(self.model, mode=COMPILE_MODE, fullgraph=True, dynamic=False)
        if self.cuda_graph:
            self._capture()

    def _capture(self):
        """Capture one batch=1 forward into a CUDA graph over static buffers (PyTorch's documented recipe):
        warm up on a side stream, capture, then each decision copies into the static input and replays."""
        dev = self._torch_device
        self.static_in = torch.zeros((1, *OBSERVATION_SHAPE), dtype=torch.uint8, device=dev)
        self.host_in = torch.zeros((1, *OBSERVATION_SHAPE), dtype=torch.uint8).pin_memory()
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

    # -- concurrent play: an eager CUDA decision per game slot on the slot's own stream, all in flight together --
    def _slot(self, slot: int) -> dict:
        slots = self.__dict__.setdefault("_slots", {})
        if slot not in slots:
            slots[slot] = {"stream": torch.cuda.Stream(self._torch_device), "done": torch.cuda.Event(),
                           "host_in": torch.zeros((1, *OBSERVATION_SHAPE), dtype=torch.uint8).pin_memory(),
                           "host_out": torch.zeros((1, self.num_actions), dtype=torch.float32).pin_memory()}
        return slots[slot]

    def submit(self, slot: int, batch: np.ndarray) -> None:
        """Eager CUDA: the same kernels as ``infer``, issued on the slot's own stream without waiting (PyTorch
        gives each stream its own cuBLAS workspace). CPU, and CUDA graphs: decided here and now, one at a time.
        Graphs are kept out of the overlap on purpose: on the H200, one captured graph per slot replayed on the
        slots' own streams played FP16 games that collapsed (a mean of 377-566 decisions instead of ~1,800),
        while FP32 graphs replayed stored games exactly. The likely cause, not yet verified: every graph captured
        on PyTorch's default capture stream bakes in that stream's one cuBLAS workspace, which concurrent
        replays then share."""
        if self.info.device != "cuda" or self.cuda_graph:
            return super().submit(slot, batch)
        s = self._slot(slot)
        s["host_in"].numpy()[...] = batch  # the slot's previous decision was fetched: its copies are done
        with torch.cuda.stream(s["stream"]), torch.inference_mode():
            x = s["host_in"].to(self._torch_device, non_blocking=True)
            s["host_out"].copy_(self.model(x).float(), non_blocking=True)
            s["done"].record(s["stream"])

    def fetch(self, slot: int) -> np.ndarray:
        if self.info.device != "cuda" or self.cuda_graph:
            return super().fetch(slot)
        s = self._slots[slot]
        s["done"].synchronize()
        return s["host_out"].numpy()[0].copy()

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
        if self.info.device != "cuda":
            return {"libraries": libraries, "numerics": {"tf32": "not-applicable"}, "details": details}
        libraries.update(cuda=torch.version.cuda, cudnn=torch.backends.cudnn.version())
        details["gpu"] = torch.cuda.get_device_name(self._torch_device)
        switches = tf32_state()
        return {"libraries": libraries, "details": details,
                "numerics": {"tf32": "on" if any(switches.values()) else "off", "switches": switches}}
