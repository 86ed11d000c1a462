"""PyTorch eager: CPU FP32 (the CPU reference), CUDA FP32 (the GPU reference, TF32 off) and CUDA FP16."""
from __future__ import annotations

import numpy as np
import torch

from .base import Runner, RuntimeInfo, RuntimeUnavailable


def set_tf32(enabled: bool) -> None:
    """TF32 for convolutions and matmuls; the FP32 reference runs with it off."""
    torch.backends.cuda.matmul.allow_tf32 = enabled
    torch.backends.cudnn.allow_tf32 = enabled


def tf32_state() -> dict:
    return {"matmul": torch.backends.cuda.matmul.allow_tf32, "cudnn": torch.backends.cudnn.allow_tf32}


class TorchRunner(Runner):
    def __init__(self, model_loader, device: str = "cpu", precision: str = "fp32", cuda_index: int = 0):
        super().__init__()
        self.info = RuntimeInfo(f"torch-{device}-{precision}", "PyTorch", device, precision)
        self._model_loader = model_loader
        self._torch_device = f"cuda:{cuda_index}" if device == "cuda" else "cpu"

    @staticmethod
    def unavailable_reason(device: str, model_format: str) -> str | None:
        if model_format != "pytorch":
            return "the model was given as ONNX; PyTorch runners need the PyTorch weights"
        if device == "cuda" and not torch.cuda.is_available():
            return f"no CUDA device visible to PyTorch {torch.__version__} (torch.cuda.is_available() is False)"
        return None

    def prepare_impl(self):
        reason = self.unavailable_reason(self.info.device, "pytorch")
        if reason:
            raise RuntimeUnavailable(reason)
        if self.info.device == "cuda":
            set_tf32(False)
        model = self._model_loader().to(self._torch_device).eval()
        self.model = model.half() if self.info.precision == "fp16" else model
        self.artifact_bytes = sum(p.numel() * p.element_size() for p in self.model.parameters())

    def infer_impl(self, batch: np.ndarray) -> np.ndarray:
        with torch.inference_mode():
            x = torch.from_numpy(batch).to(self._torch_device, non_blocking=False)
            return self.model(x).float().cpu().numpy()

    def describe_impl(self) -> dict:
        d = {"torch": torch.__version__, "threads": torch.get_num_threads()}
        if self.info.device == "cuda":
            d.update(tf32=tf32_state(), gpu=torch.cuda.get_device_name(self._torch_device),
                     cuda=torch.version.cuda, cudnn=torch.backends.cudnn.version())
        else:
            d["tf32"] = "not applicable (CPU)"
        return d
