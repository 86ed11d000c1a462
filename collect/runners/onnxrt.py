"""ONNX Runtime: CPU EP FP32; CUDA EP FP32 (TF32 off) and FP16 with IO binding."""
from __future__ import annotations

import numpy as np
import onnxruntime as ort

from .base import Runner, RuntimeInfo, RuntimeUnavailable

PROVIDERS = {"cpu": "CPUExecutionProvider", "cuda": "CUDAExecutionProvider"}


class OrtRunner(Runner):
    def __init__(self, onnx_path_getter, device: str = "cpu", precision: str = "fp32", cuda_index: int = 0):
        """``onnx_path_getter()`` -> (path, seconds it took to make); called once, in prepare."""
        super().__init__()
        variant = "IO binding" if device == "cuda" else ""
        self.info = RuntimeInfo(f"ort-{device}-{precision}", "ONNX Runtime", device, precision, variant)
        self._onnx_path_getter = onnx_path_getter
        self._cuda_index = cuda_index

    @staticmethod
    def unavailable_reason(device: str) -> str | None:
        provider = PROVIDERS[device]
        if provider not in ort.get_available_providers():
            return (f"{provider} is not in onnxruntime {ort.__version__}'s providers "
                    f"({', '.join(ort.get_available_providers())}); install onnxruntime-gpu")
        return None

    def _provider_options(self) -> list:
        if self.info.device == "cpu":
            return [(PROVIDERS["cpu"], {})]
        # use_tf32=0: ORT's CUDA EP enables TF32 by default; the FP32 comparison must not.
        return [(PROVIDERS["cuda"], {"device_id": str(self._cuda_index), "use_tf32": "0"}), (PROVIDERS["cpu"], {})]

    def prepare_impl(self):
        reason = self.unavailable_reason(self.info.device)
        if reason:
            raise RuntimeUnavailable(reason)
        path, make_seconds = self._onnx_path_getter()
        self.prepare_seconds = make_seconds  # the export/conversion is part of preparing this runtime
        self.artifact_path = path
        self.artifact_bytes = path.stat().st_size
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.session = ort.InferenceSession(str(path), options, providers=self._provider_options())
        if self.info.device == "cuda" and self.session.get_providers()[0] != PROVIDERS["cuda"]:
            raise RuntimeUnavailable(f"the CUDA EP did not load (session providers: {self.session.get_providers()})")
        self.input_name = self.session.get_inputs()[0].name
        self.output_name = self.session.get_outputs()[0].name
        if self.info.device == "cuda":
            self.binding = self.session.io_binding()

    def infer_impl(self, batch: np.ndarray) -> np.ndarray:
        if self.info.device == "cpu":
            return self.session.run([self.output_name], {self.input_name: batch})[0]
        # IO binding: the uint8 input is copied to the device once, the output comes back once.
        self.binding.bind_cpu_input(self.input_name, batch)
        self.binding.bind_output(self.output_name, "cpu")
        self.session.run_with_iobinding(self.binding)
        return self.binding.copy_outputs_to_cpu()[0]

    def describe_impl(self) -> dict:
        d = {"onnxruntime": ort.__version__, "providers": self.session.get_providers(),
             "artifact": str(self.artifact_path)}
        if self.info.device == "cuda":
            opts = self.session.get_provider_options().get(PROVIDERS["cuda"], {})
            d["tf32"] = {"use_tf32": opts.get("use_tf32")}
        else:
            d["tf32"] = "not applicable (CPU)"
        return d
