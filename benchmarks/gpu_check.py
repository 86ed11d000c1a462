"""A first look on a GPU machine before a long collect: which libraries load, whether the profiler sees the
kernels of every framework, whether NVML's energy counter moves, and what TensorRT-RTX says about this GPU.

    python benchmarks/gpu_check.py
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np

from collect import costs, paths
from collect.artifacts import Artifacts
from collect.model_input import load_model
from collect.registry import all_runtimes
from fingerprint import fingerprint  # noqa: E402  (benchmarks/fingerprint.py)


def main():
    print(fingerprint(), flush=True)
    import onnxruntime as ort
    import torch

    print(f"torch {torch.__version__} cuda {torch.cuda.is_available()} {torch.cuda.get_device_name(0)}")
    print(f"onnxruntime {ort.__version__} from {Path(ort.__file__).parent}: {ort.get_available_providers()}")
    model = load_model(paths.AGENT_WEIGHTS)
    states = np.load(paths.FIXED_STATES)
    specs = {s.id: s for s in all_runtimes()}
    for rid in specs:
        print(f"  {rid:<24} {specs[rid].check(model) or 'can run'}")
    with tempfile.TemporaryDirectory() as tmp:
        artifacts = Artifacts(Path(tmp), model.onnx_source())
        for rid in ("torch-cuda-fp32-graph", "ort-cuda-fp32", "ort-cuda-fp32-graph", "trtrtx-fp32"):
            if specs[rid].check(model):
                continue
            runner = specs[rid].make(model, artifacts, 0)
            start = time.perf_counter()
            try:
                runner.prepare()
            except Exception as e:
                print(
                    f"{rid}: prepare -> {type(e).__name__}: {e}; built {runner.artifact_bytes} bytes "
                    f"in {runner.prepare_seconds}"
                )
                continue
            print(f"{rid}: prepared in {time.perf_counter() - start:.1f} s")
            rows, n = costs.kernel_rows(runner, states, 50)
            kinds = {}
            for name, kind, calls, seconds in rows:
                kinds.setdefault(kind, [0, 0.0])
                kinds[kind][0] += calls
                kinds[kind][1] += seconds
            print(
                f"  profiler over {n} decisions: "
                + ", ".join(f"{k}: {c / n:.1f}/decision {s / n * 1e6:.1f} µs" for k, (c, s) in kinds.items())
            )
            print(f"  energy: {costs.energy(runner, states, 0, 1.0)}")
            runner.close()
    floor = costs.copy_floor(500)
    print(f"copy floor P50 {np.percentile(floor, 50) * 1e6:.1f} µs" if floor else "no copy floor")


if __name__ == "__main__":
    main()
