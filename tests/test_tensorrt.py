"""The TensorRT runner without TensorRT (it cannot be installed here): its pure decisions, and its
call sequence and buffer plumbing against a recording fake of ``tensorrt`` and cuda-python's ``cudart``.
These tests say nothing about TensorRT's own numerics; no TensorRT figure is produced anywhere here."""
import ctypes
import sys
import types

import numpy as np
import pytest

from collect.runners import tensorrt_runner as trt_runner
from collect.runners.base import RuntimeUnavailable
from collect.registry import all_runtimes


def test_build_plan_per_tensorrt_version():
    assert trt_runner.build_plan(10, "fp32") == trt_runner.BuildPlan("fp32", False, (), ("TF32",))
    assert trt_runner.build_plan(10, "fp16") == trt_runner.BuildPlan("fp32", False, ("FP16",), ())
    assert trt_runner.build_plan(11, "fp32") == trt_runner.BuildPlan("fp32", True, (), ())
    assert trt_runner.build_plan(11, "fp16") == trt_runner.BuildPlan("fp16", True, (), ())
    with pytest.raises(RuntimeUnavailable):
        trt_runner.build_plan(8, "fp32")
    with pytest.raises(ValueError):
        trt_runner.build_plan(10, "int8")


def test_profile_and_engine_name():
    assert trt_runner.profile_shapes(512) == ((1, 4, 84, 84), (1, 4, 84, 84), (512, 4, 84, 84))
    name = trt_runner.engine_file_name("fp16", "10.13.0", "NVIDIA H200 <x>", "ab" * 32)
    assert name == "model-abababababab-trt10.13.0-nvidia-h200--x-fp16.engine"
    assert trt_runner.major_version("11.0.1") == 11


def test_absent_tensorrt_is_a_clean_unavailable_row():
    if "tensorrt" in sys.modules or trt_runner.TensorRTRunner.unavailable_reason() is None:
        pytest.skip("tensorrt is installed here")
    for spec in all_runtimes():
        if spec.framework == "TensorRT":
            assert "tensorrt Python package is not installed" in spec.check(None)


def _info(precision, graph=False):
    return next(r for r in all_runtimes() if r.id == f"trt-{precision}{'-graph' if graph else ''}")


# -- a recording fake of the two libraries ---------------------------------------------------------

class FakeCudart:
    class cudaMemcpyKind:
        cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost = "H2D", "D2H"

    class cudaStreamCaptureMode:
        cudaStreamCaptureModeGlobal = "global"

    def __init__(self):
        self.device, self.host, self.calls, self.capturing = {}, {}, [], None
        self.next_ptr = 0x1000

    def _ptr(self):
        self.next_ptr += 0x1000
        return self.next_ptr

    def cudaSetDevice(self, i):
        return (0,)

    def cudaGetDeviceProperties(self, i):
        return 0, types.SimpleNamespace(name=b"Fake GPU")

    def cudaMalloc(self, n):
        p = self._ptr()
        self.device[p] = bytearray(n)
        return 0, p

    def cudaMallocHost(self, n):
        buf = (ctypes.c_byte * n)()
        self.host[ctypes.addressof(buf)] = buf
        return 0, ctypes.addressof(buf)

    def cudaStreamCreate(self):
        return 0, "stream"

    def cudaMemcpyAsync(self, dst, src, n, kind, stream):
        op = ("copy", dst, src, n, kind)
        if self.capturing is not None:
            self.capturing.append(op)
        else:
            self._run(op)
        return (0,)

    def _run(self, op):
        if op[0] == "copy":
            _, dst, src, n, kind = op
            if kind == "H2D":
                self.device[dst][:n] = ctypes.string_at(src, n)
            else:
                ctypes.memmove(dst, bytes(self.device[src][:n]), n)
        else:
            op[1]()

    def cudaStreamSynchronize(self, stream):
        return (0,)

    def cudaStreamBeginCapture(self, stream, mode):
        self.capturing = []
        return (0,)

    def cudaStreamEndCapture(self, stream):
        graph, self.capturing = self.capturing, None
        return 0, graph

    def cudaGraphInstantiate(self, graph, flags):
        return 0, list(graph)

    def cudaGraphLaunch(self, graph, stream):
        self.calls.append("graph launch")
        for op in graph:
            self._run(op)
        return (0,)

    def cudaFree(self, p):
        return (0,)

    def cudaFreeHost(self, p):
        return (0,)


def make_fake_trt(version, cudart, log):
    trt = types.SimpleNamespace(__version__=version)
    trt.Logger = type("Logger", (), {"WARNING": 2, "__init__": lambda self, level=None: None})
    trt.NetworkDefinitionCreationFlag = types.SimpleNamespace(STRONGLY_TYPED=5)
    trt.BuilderFlag = types.SimpleNamespace(FP16="FP16", TF32="TF32")
    trt.MemoryPoolType = types.SimpleNamespace(WORKSPACE="WORKSPACE")

    class Network:
        def get_input(self, i):
            return types.SimpleNamespace(name="observation")

    class Builder:
        def __init__(self, logger):
            pass

        def create_network(self, flags):
            log.append(("create_network", flags))
            return Network()

        def create_builder_config(self):
            return types.SimpleNamespace(
                set_memory_pool_limit=lambda pool, n: log.append(("pool", pool, n)),
                set_flag=lambda f: log.append(("set_flag", f)), clear_flag=lambda f: log.append(("clear_flag", f)),
                add_optimization_profile=lambda p: log.append(("profile",)))

        def create_optimization_profile(self):
            return types.SimpleNamespace(set_shape=lambda name, a, b, c: log.append(("shape", name, a, b, c)))

        def build_serialized_network(self, network, config):
            return b"ENGINE"

    class Parser:
        def __init__(self, network, logger):
            pass

        def parse(self, data):
            log.append(("parse", data))
            return True

    class Context:
        def __init__(self):
            self.addresses, self.shape = {}, None

        def set_tensor_address(self, name, ptr):
            self.addresses[name] = ptr

        def set_input_shape(self, name, shape):
            self.shape = shape

        def execute_async_v3(self, stream):
            n = self.shape[0]
            src, dst = self.addresses["observation"], self.addresses["q_values"]

            def compute():  # "Q-values": per sample, the mean pixel of each of the 4 frames
                x = np.frombuffer(bytes(cudart.device[src][:n * 4 * 84 * 84]), np.uint8).reshape(n, 4, -1)
                cudart.device[dst][:n * 16] = x.mean(axis=2).astype(np.float32).tobytes()
            if cudart.capturing is not None:
                cudart.capturing.append(("kernel", compute))
            else:
                compute()
            log.append(("execute_async_v3", stream))
            return True

    class Engine:
        def get_tensor_name(self, i):
            return ["observation", "q_values"][i]

        def get_tensor_shape(self, name):
            return (-1, 4)

        def create_execution_context(self):
            return Context()

    trt.Builder, trt.OnnxParser = Builder, Parser
    trt.Runtime = lambda logger: types.SimpleNamespace(
        deserialize_cuda_engine=lambda b: log.append(("deserialize", bytes(b))) or Engine())
    return trt


@pytest.mark.parametrize("version,precision,graph", [("10.13.0", "fp32", False), ("10.13.0", "fp16", True),
                                                     ("11.0.0", "fp16", False)])
def test_runner_plumbing_against_a_recording_fake(tmp_path, monkeypatch, version, precision, graph):
    cudart, log = FakeCudart(), []
    monkeypatch.setitem(sys.modules, "tensorrt", make_fake_trt(version, cudart, log))
    monkeypatch.setattr(trt_runner, "_cudart", lambda: cudart)
    onnx = {p: tmp_path / f"{p}.onnx" for p in ("fp32", "fp16")}
    for p, path in onnx.items():
        path.write_bytes(p.encode())
    getters = {p: (lambda path=path: (path, 0.5)) for p, path in onnx.items()}
    runner = trt_runner.TensorRTRunner(_info(precision, graph), getters, tmp_path / "engines", "cd" * 32, 0, graph)
    with runner:
        states = np.random.default_rng(0).integers(0, 256, size=(3, 4, 84, 84), dtype=np.uint8)
        for i in range(3):
            q = runner.infer(states[i:i + 1])
            np.testing.assert_allclose(q, states[i:i + 1].reshape(1, 4, -1).mean(axis=2), rtol=1e-6)
        if not graph:
            np.testing.assert_allclose(runner.infer(states), states.reshape(3, 4, -1).mean(axis=2), rtol=1e-6)
    major = int(version.split(".")[0])
    expected_onnx = b"fp16" if (major >= 11 and precision == "fp16") else b"fp32"
    assert ("parse", expected_onnx) in log
    assert ("create_network", (1 << 5) if major >= 11 else 0) in log
    flags = [e for e in log if e[0] in ("set_flag", "clear_flag")]
    if major >= 11:
        assert flags == []
    else:
        assert flags == ([("clear_flag", "TF32")] if precision == "fp32" else [("set_flag", "FP16")])
    assert ("shape", "observation", (1, 4, 84, 84), (1, 4, 84, 84), (512, 4, 84, 84)) in log
    assert runner.artifact_bytes == len(b"ENGINE") and runner.artifact_path.read_bytes() == b"ENGINE"
    assert (cudart.calls.count("graph launch") == 3) == graph
    assert runner.describe()["libraries"] == {"tensorrt": version}


def test_a_play_worker_runs_the_parents_engine_without_building_its_own(tmp_path, monkeypatch):
    """Parallel play: a builder times tactics, so a second build could be another engine; workers reuse it."""
    cudart, log = FakeCudart(), []
    monkeypatch.setitem(sys.modules, "tensorrt", make_fake_trt("10.13.0", cudart, log))
    monkeypatch.setattr(trt_runner, "_cudart", lambda: cudart)
    onnx = tmp_path / "fp32.onnx"
    onnx.write_bytes(b"fp32")
    getters = {"fp32": lambda: (onnx, 0.5), "fp16": lambda: (onnx, 0.5)}
    with trt_runner.TensorRTRunner(_info("fp32"), getters, tmp_path / "engines", "cd" * 32) as parent:
        args = parent.worker_args()
    assert args == {"engine_path": str(parent.artifact_path)}
    parent.artifact_path.write_bytes(b"THE ENGINE")  # what the worker must load, byte for byte
    log.clear()
    worker = trt_runner.TensorRTRunner(_info("fp32"), getters, tmp_path / "elsewhere", "cd" * 32)
    worker.reuse(args)
    with worker:
        assert worker.infer(np.zeros((1, 4, 84, 84), np.uint8)).shape == (1, 4)
    assert not any(e[0] in ("parse", "create_network") for e in log)
    assert ("deserialize", b"THE ENGINE") in log
    assert not (tmp_path / "elsewhere").exists()
