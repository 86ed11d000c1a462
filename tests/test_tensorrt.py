"""The TensorRT family. The build path runs for real with TensorRT for RTX on this CPU machine (engines from the
shipped ONNX and the project's FP16 ONNX, checked I/O, TF32 cleared, a wrong model refused); without
``tensorrt-rtx`` those tests skip with the reason. Execution needs a GPU TensorRT-RTX serves: the runner's call
sequence, buffers, CUDA graph and clean-up are checked against a recording fake of the library and cuda-python.
No TensorRT latency, agreement or score is produced anywhere here."""

import ctypes
import importlib.util
import sys
import types

import numpy as np
import onnx
import pytest
import torch

from collect import paths
from collect.artifacts import convert_onnx_to_fp16
from collect.registry import all_runtimes
from collect.runners import tensorrt_runner as trt_runner
from collect.runners import trt_build
from collect.runners.base import RuntimeUnavailable

HAVE_RTX = importlib.util.find_spec("tensorrt_rtx") is not None
needs_rtx = pytest.mark.skipif(not HAVE_RTX, reason="tensorrt-rtx is not installed (pip install tensorrt-rtx)")


@pytest.fixture(scope="module")
def onnx_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("onnx")
    fp16 = folder / "model_fp16.onnx"
    onnx.save(convert_onnx_to_fp16(onnx.load(str(paths.AGENT_ONNX))), str(fp16))
    return {"fp32": paths.AGENT_ONNX, "fp16": fp16}


# -- the real build path (TensorRT-RTX on the CPU) ------------------------------------------------------


@needs_rtx
@pytest.mark.parametrize("precision,onnx_used,max_mb", [("fp32", "fp32", 9.0), ("fp16", "fp16", 5.0)])
def test_tensorrt_rtx_builds_engines_from_the_shipped_onnx(onnx_files, precision, onnx_used, max_mb):
    import tensorrt_rtx as trt

    built = trt_build.build(trt, onnx_files, precision, 4)
    assert built.onnx == onnx_used and built.typing == "strongly typed"
    assert 1e6 < len(built.engine) < max_mb * 1e6 and built.seconds > 0
    assert built.io == {
        "input": "observation",
        "output": "q_values",
        "input_shape": [-1, 4, 84, 84],
        "output_shape": [-1, 4],
    }
    assert built.numerics == {"tf32": "off", "switches": {"BuilderFlag.TF32": "cleared"}}


@needs_rtx
@pytest.mark.parametrize("example", ["cartpole", "inverted-pendulum"])
@pytest.mark.parametrize("precision", ["fp32", "fp16"])
def test_tensorrt_rtx_builds_engines_for_other_agents_inputs(tmp_path, example, precision):
    """A Stable-Baselines3 policy on a float32 vector (CartPole's logits, InvertedPendulum's continuous action):
    the engine takes the task's own observation and outputs, from the ONNX rtreport exports for every runtime."""
    import tensorrt_rtx as trt

    from collect.artifacts import Artifacts
    from collect.model_input import load_model
    from collect.tasks import for_env

    env = {"cartpole": "CartPole-v1", "inverted-pendulum": "InvertedPendulum-v5"}[example]
    task = for_env(env)
    model = load_model(paths.DATA / "examples" / f"{example}.zip", task)
    art = Artifacts(tmp_path, model.onnx_source())
    built = trt_build.build(
        trt,
        {"fp32": art.onnx_fp32()[0], "fp16": art.onnx_fp16()[0]},
        precision,
        model.num_actions,
        observation=model.task.observation,
    )
    assert built.onnx == precision and built.typing == "strongly typed" and len(built.engine) > 1000
    assert built.io["input_shape"] == [-1, *model.task.observation.shape]
    assert built.io["output_shape"] == [-1, model.num_actions]
    with pytest.raises(trt_build.ContractError, match=r"must be uint8 \(N, 4, 84, 84\); it is float"):
        trt_build.build(trt, {"fp32": art.onnx_fp32()[0]}, "fp32", model.num_actions)  # Breakout's contract


@needs_rtx
def test_a_model_that_breaks_the_contract_is_refused_with_one_line(tmp_path):
    import tensorrt_rtx as trt

    class Wrong(torch.nn.Module):
        def forward(self, x):
            return x.float().mean(dim=(2, 3))  # float input of the wrong size, 4 outputs

    torch.onnx.export(
        Wrong(),
        (torch.zeros((1, 4, 64, 64)),),
        str(tmp_path / "w.onnx"),
        input_names=["observation"],
        dynamic_axes={"observation": {0: "batch"}},
        dynamo=False,
    )
    with pytest.raises(trt_build.ContractError) as e:
        trt_build.build(trt, {"fp32": tmp_path / "w.onnx"}, "fp32", 4)
    assert str(e.value) == "input observation must be uint8 (N, 4, 84, 84); it is float (-1, 4, 64, 64)"
    (tmp_path / "junk.onnx").write_bytes(b"not onnx")
    with pytest.raises(trt_build.ContractError, match="cannot parse"):
        trt_build.build(trt, {"fp32": tmp_path / "junk.onnx"}, "fp32", 4)


@needs_rtx
def test_without_a_gpu_tensorrt_rtx_runtimes_are_unavailable_not_failed():
    import torch.cuda

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    reasons = {r.id: r.check(None) for r in all_runtimes() if r.id.startswith("trtrtx-")}
    assert len(reasons) == 4
    for reason in reasons.values():
        assert reason and ("no CUDA GPU visible" in reason or "cuda-python" in reason), reason


def test_the_build_plan_follows_what_the_library_offers():
    ns = types.SimpleNamespace
    strongly = ns(NetworkDefinitionCreationFlag=ns(STRONGLY_TYPED=5), BuilderFlag=type("F", (), {"TF32": 1}))
    assert trt_build.plan(strongly, "fp16") == ("fp16", True, (), ("TF32",))
    weak = ns(NetworkDefinitionCreationFlag=ns(), BuilderFlag=type("F", (), {"TF32": 1, "FP16": 2}))
    assert trt_build.plan(weak, "fp16") == ("fp32", False, ("FP16",), ("TF32",))
    assert trt_build.plan(weak, "fp32") == ("fp32", False, (), ("TF32",))
    bare = ns(NetworkDefinitionCreationFlag=ns(), BuilderFlag=type("F", (), {}))
    with pytest.raises(RuntimeUnavailable):
        trt_build.plan(bare, "fp16")
    with pytest.raises(ValueError):
        trt_build.plan(strongly, "int8")


def test_library_refusals_become_reasons():
    assert (
        trt_build._reason("Error Code 1: Cuda Runtime (In ScopedCudaStream at /_src/x.cpp:25 (cudaError 35))")
        == "Error Code 1: Cuda Runtime"
    )
    name = trt_runner.engine_file_name("trtrtx", "fp16", "1.7.1.116", "NVIDIA H200 <x>", "ab" * 32)
    assert name == "model-abababababab-trtrtx1.7.1.116-nvidia-h200--x-fp16.engine"


# -- execution against a recording fake of the library and cuda-python --------------------------------------


class FakeCudart:
    class cudaMemcpyKind:
        cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost = "H2D", "D2H"

    class cudaStreamCaptureMode:
        cudaStreamCaptureModeGlobal = "global"

    def __init__(self):
        self.device, self.host, self.calls, self.capturing, self.freed = {}, {}, [], None, []
        self.next_ptr = 0x1000

    def _ptr(self):
        self.next_ptr += 0x1000
        return self.next_ptr

    def cudaGetDeviceCount(self):
        return 0, 1

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

    def _free(kind):
        def free(self, obj):
            self.freed.append(kind)
            return (0,)

        return free

    cudaFree, cudaFreeHost = _free("device"), _free("host")
    cudaStreamDestroy, cudaGraphDestroy, cudaGraphExecDestroy = _free("stream"), _free("graph"), _free("graph_exec")


def make_fake_trt(name, version, cudart, log, reject: str | None = None):
    trt = types.ModuleType(name)
    trt.__version__ = version

    class ILogger:
        ERROR, INTERNAL_ERROR, WARNING = 1, 0, 2

        def __init__(self):
            pass

    trt.ILogger = ILogger
    trt.NetworkDefinitionCreationFlag = types.SimpleNamespace(STRONGLY_TYPED=5)
    trt.BuilderFlag = type("BuilderFlag", (), {"TF32": "TF32"})
    trt.MemoryPoolType = types.SimpleNamespace(WORKSPACE="WORKSPACE")
    trt.DataType = types.SimpleNamespace(UINT8="u8", FLOAT="f32")
    trt.TensorIOMode = types.SimpleNamespace(INPUT="in", OUTPUT="out")

    def tensor(n, dt, shape):
        return types.SimpleNamespace(name=n, dtype=types.SimpleNamespace(name=dt), shape=shape)

    trt.DataType = types.SimpleNamespace(UINT8=tensor("", "uint8", ()).dtype, FLOAT=tensor("", "float", ()).dtype)

    class Network:
        num_inputs = num_outputs = 1

        def get_input(self, i):
            return types.SimpleNamespace(name="observation", dtype=trt.DataType.UINT8, shape=(-1, 4, 84, 84))

        def get_output(self, i):
            return types.SimpleNamespace(name="q_values", dtype=trt.DataType.FLOAT, shape=(-1, 4))

    class Config:
        def __init__(self):
            self.flags = {"TF32"}

        def set_memory_pool_limit(self, pool, n):
            log.append(("pool", pool, n))

        def set_flag(self, f):
            self.flags.add(f)
            log.append(("set_flag", f))

        def clear_flag(self, f):
            self.flags.discard(f)
            log.append(("clear_flag", f))

        def get_flag(self, f):
            return f in self.flags

        def add_optimization_profile(self, p):
            log.append(("profile",))

    class Builder:
        def __init__(self, logger):
            pass

        def create_network(self, flags):
            log.append(("create_network", flags))
            return Network()

        def create_builder_config(self):
            return Config()

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
            return True

        def set_input_shape(self, name, shape):
            self.shape = shape
            return True

        def execute_async_v3(self, stream):
            n = self.shape[0]
            src, dst = self.addresses["observation"], self.addresses["q_values"]

            def compute():  # "Q-values": per sample, the mean pixel of each of the 4 frames
                x = np.frombuffer(bytes(cudart.device[src][: n * 4 * 84 * 84]), np.uint8).reshape(n, 4, -1)
                cudart.device[dst][: n * 16] = x.mean(axis=2).astype(np.float32).tobytes()

            if cudart.capturing is not None:
                cudart.capturing.append(("kernel", compute))
            else:
                compute()
            log.append(("execute_async_v3", stream))
            return True

    class Engine:
        num_io_tensors = 2

        def get_tensor_name(self, i):
            return ["q_values", "observation"][i]  # outputs first: the runner must not assume the order

        def get_tensor_mode(self, name):
            return trt.TensorIOMode.INPUT if name == "observation" else trt.TensorIOMode.OUTPUT

        def get_tensor_dtype(self, name):
            return trt.DataType.UINT8 if name == "observation" else trt.DataType.FLOAT

        def get_tensor_shape(self, name):
            return (-1, 4)

        def create_execution_context(self):
            return Context()

    class Runtime:
        def __init__(self, logger):
            self.logger = logger

        def deserialize_cuda_engine(self, data):
            log.append(("deserialize", bytes(data)))
            if reject:
                self.logger.log(ILogger.ERROR, reject)
                return None
            return Engine()

    trt.Builder, trt.OnnxParser, trt.Runtime = Builder, Parser, Runtime
    return trt


def _fake(monkeypatch, flavour, version, reject=None):
    cudart, log = FakeCudart(), []
    module = trt_build.FLAVOURS[flavour].module
    monkeypatch.setitem(sys.modules, module, make_fake_trt(module, version, cudart, log, reject))
    monkeypatch.setattr(trt_runner, "_cudart", lambda: cudart)
    return cudart, log


def _info(flavour, precision, graph=False):
    return next(r for r in all_runtimes() if r.id == f"{flavour}-{precision}{'-graph' if graph else ''}")


def _getters(tmp_path):
    onnx_paths = {p: tmp_path / f"{p}.onnx" for p in ("fp32", "fp16")}
    for p, path in onnx_paths.items():
        path.write_bytes(p.encode())
    return {p: (lambda path=path: (path, 0.5)) for p, path in onnx_paths.items()}


@pytest.mark.parametrize(
    "flavour,precision,graph",
    [("trt", "fp32", False), ("trt", "fp16", True), ("trtrtx", "fp16", False), ("trtrtx", "fp32", True)],
)
def test_runner_plumbing_against_a_recording_fake(tmp_path, monkeypatch, flavour, precision, graph):
    cudart, log = _fake(monkeypatch, flavour, "11.0.0" if flavour == "trt" else "1.7.1.116")
    runner = trt_runner.TensorRTRunner(
        _info(flavour, precision, graph), flavour, _getters(tmp_path), tmp_path / "engines", "cd" * 32, 0, graph
    )
    with runner:
        states = np.random.default_rng(0).integers(0, 256, size=(3, 4, 84, 84), dtype=np.uint8)
        for i in range(3):
            q = runner.infer(states[i : i + 1])
            np.testing.assert_allclose(q, states[i : i + 1].reshape(1, 4, -1).mean(axis=2), rtol=1e-6)
        if not graph:
            np.testing.assert_allclose(runner.infer(states), states.reshape(3, 4, -1).mean(axis=2), rtol=1e-6)
        described = runner.describe()
    assert ("parse", precision.encode()) in log  # the FP16 engine from the FP16 ONNX
    assert ("create_network", 1 << 5) in log and ("clear_flag", "TF32") in log
    assert ("shape", "observation", (1, 4, 84, 84), (1, 4, 84, 84), (512, 4, 84, 84)) in log
    assert runner.artifact_bytes == len(b"ENGINE") and runner.artifact_path.read_bytes() == b"ENGINE"
    assert (cudart.calls.count("graph launch") == 3) == graph
    assert described["numerics"] == {"tf32": "off", "switches": {"BuilderFlag.TF32": "cleared"}}
    assert described["libraries"] == {trt_build.FLAVOURS[flavour].module: runner.version}
    # every CUDA object freed, the graph's before the stream's
    expected = (["graph_exec", "graph"] if graph else []) + ["stream"] + ["device", "device", "host", "host"]
    assert cudart.freed == expected


def test_a_gpu_the_library_does_not_serve_is_unavailable_in_its_own_words(tmp_path, monkeypatch):
    said = (
        "IRuntime::deserializeCudaEngine: Error Code 1: The engine cannot run on this GPU, which has compute "
        "capability 9.0. Supported compute capabilities: 8.0 8.6 8.9 12.0 12.1 >12.0"
    )
    _, log = _fake(monkeypatch, "trtrtx", "1.7.1.116", reject=said)
    runner = trt_runner.TensorRTRunner(_info("trtrtx", "fp32"), "trtrtx", _getters(tmp_path), tmp_path / "e", "cd" * 32)
    with pytest.raises(RuntimeUnavailable, match="compute capability 9.0. Supported compute capabilities: 8.0"):
        runner.prepare()
    assert runner.artifact_bytes == len(b"ENGINE") and runner.prepare_seconds > 0  # the build is recorded
    assert runner.describe()["details"]["onnx"] == "fp32"
    runner.close()


def test_a_play_worker_runs_the_parents_engine_without_building_its_own(tmp_path, monkeypatch):
    """Parallel play: a builder times tactics, so a second build could be another engine; workers reuse it."""
    _, log = _fake(monkeypatch, "trt", "10.13.0")
    getters = _getters(tmp_path)
    with trt_runner.TensorRTRunner(_info("trt", "fp32"), "trt", getters, tmp_path / "engines", "cd" * 32) as parent:
        args = parent.worker_args()
    assert args == {"engine_path": str(parent.artifact_path)}
    parent.artifact_path.write_bytes(b"THE ENGINE")  # what the worker must load, byte for byte
    log.clear()
    worker = trt_runner.TensorRTRunner(_info("trt", "fp32"), "trt", getters, tmp_path / "elsewhere", "cd" * 32)
    worker.reuse(args)
    with worker:
        assert worker.infer(np.zeros((1, 4, 84, 84), np.uint8)).shape == (1, 4)
    assert not any(e[0] in ("parse", "create_network") for e in log)
    assert ("deserialize", b"THE ENGINE") in log
    assert not (tmp_path / "elsewhere").exists()


def test_the_tensorrt_rtx_ep_plugin_says_why_it_cannot_run(monkeypatch):
    """ONNX Runtime's TensorRT-RTX EP plugin: not installed (CI), or installed and reporting no device (the H200):
    either way one line with the reason, and the library's versions when it loaded."""
    import sys
    import types

    import onnxruntime as ort

    from collect.runners import ort_plugin_ep

    monkeypatch.setitem(sys.modules, ort_plugin_ep.PACKAGE, None)  # import fails, as without the package
    monkeypatch.setattr(ort_plugin_ep, "_registered", {})
    reason = ort_plugin_ep.OrtPluginEpRunner.unavailable_reason()
    assert "not installed" in reason and "pip install onnxruntime-ep-nv-tensorrt-rtx" in reason

    fake = types.SimpleNamespace(
        __version__="0.5.0",
        get_ep_name=lambda: "NvTensorRTRTXExecutionProvider",
        get_library_path=lambda: "/nowhere/libonnxruntime_providers_nv_tensorrt_rtx.so",
    )
    monkeypatch.setitem(sys.modules, ort_plugin_ep.PACKAGE, fake)
    monkeypatch.setattr(ort, "register_execution_provider_library", lambda name, path: None, raising=False)
    monkeypatch.setattr(ort, "get_ep_devices", lambda: [], raising=False)
    reason = ort_plugin_ep.OrtPluginEpRunner.unavailable_reason()
    assert reason.startswith(
        f"the TensorRT-RTX EP ({ort_plugin_ep.PACKAGE} 0.5.0, loaded into onnxruntime "
        f"{ort.__version__}) reports no device"
    )
    assert "8.0, 8.6, 8.9 and 12.x" in reason


def test_onnx_runtimes_tensorrt_ep_without_its_libraries_says_why_and_prints_nothing(tmp_path, monkeypatch, capsys):
    """onnxruntime-gpu without TensorRT's libraries (the H200): ONNX Runtime prints an "EP Error" block and falls
    back to the CUDA EP. The runtime is unavailable with ONNX Runtime's own words as the reason, and the block does
    not reach the terminal (it buried collect's progress lines). The session is a stand-in that behaves as
    onnxruntime 1.31.1 did there: no GPU here."""
    import onnxruntime as ort

    from collect.artifacts import Artifacts
    from collect.model_input import load_model

    class FallingBack:  # what ONNX Runtime's Python layer prints, word for word, before it retries without TensorRT
        def __init__(self, path, options, providers):
            print("*************** EP Error ***************")
            print(
                "EP Error /onnxruntime_src/onnxruntime/python/onnxruntime_pybind_state.cc:729 void "
                "onnxruntime::python::RegisterTensorRTPluginsAsCustomOps(PySessionOptions&, const "
                "onnxruntime::ProviderOptions&) Please install TensorRT libraries as mentioned in the GPU "
                "requirements page, make sure they're in the PATH or LD_LIBRARY_PATH, and that your GPU is "
                "supported.\n when using [('TensorrtExecutionProvider', {'device_id': '0'})]"
            )
            print("Falling back to ['CUDAExecutionProvider', 'CPUExecutionProvider'] and retrying.")
            print("****************************************")

        def get_providers(self):
            return ["CUDAExecutionProvider", "CPUExecutionProvider"]

    monkeypatch.setattr(ort, "InferenceSession", FallingBack)
    monkeypatch.setattr(
        ort,
        "get_available_providers",
        lambda: ["TensorrtExecutionProvider", "CUDAExecutionProvider", "CPUExecutionProvider"],
    )
    model = load_model(paths.AGENT_WEIGHTS)
    spec = next(s for s in all_runtimes() if s.id == "ort-trt-fp32")
    runner = spec.make(model, Artifacts(tmp_path, model.onnx_source()), 0)
    with pytest.raises(RuntimeUnavailable) as e:
        runner.prepare()
    assert str(e.value) == (
        "TensorrtExecutionProvider did not load (Please install TensorRT libraries as mentioned in the GPU "
        "requirements page, make sure they're in the PATH or LD_LIBRARY_PATH, and that your GPU is supported; "
        "session providers: CUDAExecutionProvider, CPUExecutionProvider)"
    )
    assert "EP Error" not in capsys.readouterr().out
