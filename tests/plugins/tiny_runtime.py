"""A third-party runtime, as another package would ship it: registered only through the ``rtreport.runtimes``
entry-point group (tests/test_architecture.py writes the entry point), touching no rtreport file.

"TinyRT" is not a real inference runtime: it wraps the model's ONNX export in ONNX Runtime's CPU provider under
its own id, title and library version, which is all the plugin mechanism needs to show."""

import numpy as np

from collect.registry import Runtime
from collect.runners.base import Runner


class TinyRunner(Runner):
    def __init__(self, info, onnx_getter):
        super().__init__(info)
        self._onnx_getter = onnx_getter

    def prepare_impl(self):
        import onnxruntime as ort

        path, seconds = self._onnx_getter()
        self.artifact_path, self.artifact_bytes, self.prepare_seconds = path, path.stat().st_size, seconds
        self.session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])

    def infer_impl(self, batch):
        return self.session.run(None, {"observation": batch})[0].astype(np.float32)

    def describe_impl(self):
        return {
            "libraries": {"tinyrt": "0.0.1"},
            "numerics": {"tf32": "not-applicable"},
            "details": {"note": "a test plugin"},
        }


TINY = Runtime(
    "tiny-cpu-fp32",
    "TinyRT",
    "cpu",
    "fp32",
    "plugin",
    check=lambda model: None,
    make=lambda model, artifacts, cuda: TinyRunner(TINY, artifacts.onnx_fp32),
)
RUNTIMES = [TINY]
