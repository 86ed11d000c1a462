"""ONNX Runtime with NVIDIA's TensorRT-RTX execution provider, shipped as a plugin EP library
(``pip install onnxruntime-ep-nv-tensorrt-rtx``, ONNX Runtime ≥ 1.23): registered with ONNX Runtime, then given
the devices it reports. Precision comes from the model's types (the FP16 runtime loads the FP16 ONNX); inputs
and outputs stay on the host (the EP copies them)."""

from __future__ import annotations

import numpy as np

from .base import Runner, RuntimeUnavailable

PACKAGE = "onnxruntime_ep_nv_tensorrt_rtx"
_registered: dict = {}


def _plugin():
    """(onnxruntime, the plugin module, its EP name), the library registered once per process."""
    import importlib

    import onnxruntime as ort

    try:
        ep = importlib.import_module(PACKAGE)
    except ImportError as e:
        raise RuntimeUnavailable(
            f"the TensorRT-RTX EP plugin is not installed ({e}); pip install onnxruntime-ep-nv-tensorrt-rtx"
        ) from None
    if not hasattr(ort, "register_execution_provider_library"):
        raise RuntimeUnavailable(f"onnxruntime {ort.__version__} has no plugin EP support (needs ≥ 1.23)")
    name = ep.get_ep_name()
    if name not in _registered:
        try:
            ort.register_execution_provider_library(name, ep.get_library_path())
        except Exception as e:
            raise RuntimeUnavailable(
                f"onnxruntime could not load the TensorRT-RTX EP library: "
                f"{type(e).__name__}: {str(e).splitlines()[0][:300]}"
            ) from None
        _registered[name] = True
    return ort, ep, name


def devices():
    ort, _, name = _plugin()
    return [d for d in ort.get_ep_devices() if d.ep_name == name]


class OrtPluginEpRunner(Runner):
    def __init__(self, info, onnx_path_getter, cuda_index: int = 0):
        super().__init__(info)
        self._onnx_path_getter, self._cuda_index = onnx_path_getter, cuda_index

    @staticmethod
    def unavailable_reason() -> str | None:
        try:
            found = devices()
        except RuntimeUnavailable as e:
            return str(e)
        if not found:
            ort, ep, _ = _plugin()
            return (
                f"the TensorRT-RTX EP ({PACKAGE} {getattr(ep, '__version__', '?')}, loaded into onnxruntime "
                f"{ort.__version__}) reports no device it can run on here (it serves RTX-class GPUs: compute "
                "capability 8.0, 8.6, 8.9 and 12.x)"
            )
        return None

    def prepare_impl(self):
        reason = self.unavailable_reason()
        if reason:
            raise RuntimeUnavailable(reason)
        ort, ep, name = _plugin()
        path, self.prepare_seconds = self._onnx_path_getter()
        self.artifact_path, self.artifact_bytes = path, path.stat().st_size
        options = ort.SessionOptions()
        found = devices()
        options.add_provider_for_devices(found[self._cuda_index : self._cuda_index + 1] or found[:1], {})
        try:
            self.session = ort.InferenceSession(str(path), sess_options=options)
        except Exception as e:  # the EP refusing this GPU says so in its own words
            text = " ".join(str(e).split())[:400]
            if "compute capability" in text.lower() or "not supported" in text.lower():
                raise RuntimeUnavailable(f"TensorRT-RTX EP: {text}") from None
            raise
        self.input_name = self.session.get_inputs()[0].name
        self.ep_version = getattr(ep, "__version__", None)

    def infer_impl(self, batch: np.ndarray) -> np.ndarray:
        return self.session.run(None, {self.input_name: batch})[0]

    def describe_impl(self) -> dict:
        import onnxruntime as ort

        return {
            "libraries": {"onnxruntime": ort.__version__, PACKAGE: getattr(self, "ep_version", None)},
            "numerics": {"tf32": "by-types"},
            "details": {"providers": self.session.get_providers() if hasattr(self, "session") else None},
        }
