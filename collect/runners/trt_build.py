"""The TensorRT-family build path, shared by native TensorRT (10, 11) and TensorRT for RTX.

Everything here needs the library but no GPU, so it runs for real on a CPU machine with ``tensorrt-rtx``
installed (tests/test_tensorrt.py does): parse the ONNX, check the network against the model contract
(one input of the task's observation, e.g. Breakout's uint8 (N, 4, 84, 84) or a float32 (N, d) vector, and one
float32 (N, outputs) output), an optimisation profile for batch 1 up to
the sweep's largest batch, precision and TF32 by what the installed library offers — checked by name, never
by version guesses — and serialize. Loading an engine (``load_engine``) needs the GPU; its refusal is turned
into a reason: an unsupported GPU is "unavailable", an engine from another version is rebuilt.
"""

from __future__ import annotations

import importlib
import time
from dataclasses import dataclass, field

from ..measure import MAX_BATCH
from ..task import BREAKOUT_OBSERVATION, Observation
from .base import RuntimeUnavailable

WORKSPACE_BYTES = 1 << 30


@dataclass(frozen=True)
class Flavour:
    key: str  # runtime id prefix and library key in the runtime row
    module: str  # what to import
    name: str  # as the pages name it
    install: str  # how to get it


FLAVOURS = {
    "trt": Flavour(
        "trt",
        "tensorrt",
        "TensorRT",
        "pip install tensorrt (its libraries come from NVIDIA's package index, pypi.nvidia.com)",
    ),
    "trtrtx": Flavour(
        "trtrtx",
        "tensorrt_rtx",
        "TensorRT-RTX",
        "pip install tensorrt-rtx (from PyPI; runs on compute capability 8.0, 8.6, 8.9 and 12.x)",
    ),
}


class ContractError(ValueError):
    """The ONNX does not fit the model contract (one line, shown to the user)."""


class VersionMismatch(RuntimeError):
    """A serialized engine made by another version of the library: rebuild it."""


def import_library(flavour: Flavour):
    try:
        return importlib.import_module(flavour.module)
    except ImportError as e:
        raise RuntimeUnavailable(
            f"the {flavour.module} Python package is not installed ({e}); {flavour.install}"
        ) from None


def make_logger(trt):
    """A TensorRT logger that keeps the library's errors, so a refusal can be reported in its own words."""

    class Log(trt.ILogger):
        def __init__(self):
            trt.ILogger.__init__(self)
            self.errors: list[str] = []

        def log(self, severity, msg):
            if severity in (trt.ILogger.ERROR, trt.ILogger.INTERNAL_ERROR):
                self.errors.append(str(msg))

    return Log()


@dataclass
class BuildResult:
    engine: bytes
    seconds: float
    onnx: str  # "fp32" or "fp16": the ONNX the engine was parsed from
    numerics: dict  # the runtime row's numerics: TF32 state and the switches that set it
    typing: str  # "strongly typed" or "weakly typed (BuilderFlag.FP16)"
    io: dict = field(default_factory=dict)  # the network's input and output as checked


def plan(trt, precision: str) -> tuple[str, bool, tuple, tuple]:
    """(which ONNX, strongly typed?, flags to set, flags to clear), from what this library has."""
    if precision not in ("fp32", "fp16"):
        raise ValueError(f"unknown precision {precision!r}")
    strongly = hasattr(trt.NetworkDefinitionCreationFlag, "STRONGLY_TYPED")
    flags = dir(trt.BuilderFlag)
    clear = ("TF32",) if "TF32" in flags else ()
    if strongly:  # the ONNX's types decide: the FP16 engine comes from the FP16 ONNX, as for every runtime
        return precision, True, (), clear
    if precision == "fp16":
        if "FP16" not in flags:
            raise RuntimeUnavailable("this TensorRT has neither strongly typed networks nor BuilderFlag.FP16")
        return "fp32", False, ("FP16",), clear
    return "fp32", False, (), clear


def data_type(trt, observation: Observation):
    """The TensorRT data type of the observation's dtype (uint8 frames, float32 vectors)."""
    return {"uint8": trt.DataType.UINT8, "float32": trt.DataType.FLOAT}[observation.dtype]


def check_network(trt, network, num_actions: int, observation: Observation = BREAKOUT_OBSERVATION) -> dict:
    """The parsed network against the model contract (one input of ``observation``'s dtype and shape, one float32
    output of ``num_actions`` values: Q-values, logits or the continuous action's dimensions); ContractError (one
    line) if it does not fit."""
    if network.num_inputs != 1 or network.num_outputs != 1:
        raise ContractError(f"expected one input and one output, found {network.num_inputs} and {network.num_outputs}")
    x, y = network.get_input(0), network.get_output(0)
    in_shape, out_shape = tuple(x.shape), tuple(y.shape)
    if (
        x.dtype != data_type(trt, observation)
        or len(in_shape) != 1 + len(observation.shape)
        or in_shape[1:] != tuple(observation.shape)
    ):
        raise ContractError(f"input {x.name} must be {observation.describe()}; it is {x.dtype.name.lower()} {in_shape}")
    if y.dtype != trt.DataType.FLOAT or len(out_shape) != 2 or out_shape[1] != num_actions:
        raise ContractError(
            f"output {y.name} must be float32 (N, {num_actions}); it is {y.dtype.name.lower()} {out_shape}"
        )
    return {"input": x.name, "output": y.name, "input_shape": list(in_shape), "output_shape": list(out_shape)}


def build(
    trt,
    onnx_paths: dict,
    precision: str,
    num_actions: int,
    max_batch: int = MAX_BATCH,
    observation: Observation = BREAKOUT_OBSERVATION,
) -> BuildResult:
    """Parse, check, configure and serialize one engine. ``onnx_paths``: {"fp32": path, "fp16": path};
    ``observation``: one decision's input (the task's)."""
    which, strongly, set_flags, clear_flags = plan(trt, precision)
    log = make_logger(trt)
    start = time.perf_counter()
    builder = trt.Builder(log)
    flags = 1 << int(trt.NetworkDefinitionCreationFlag.STRONGLY_TYPED) if strongly else 0
    network = builder.create_network(flags)
    parser = trt.OnnxParser(network, log)
    path = onnx_paths[which]
    with open(path, "rb") as f:
        if not parser.parse(f.read()):
            errors = "; ".join(str(parser.get_error(i)) for i in range(parser.num_errors))
            raise ContractError(f"{trt.__name__} cannot parse {path}: {errors}")
    io = check_network(trt, network, num_actions, observation)
    config = builder.create_builder_config()
    if hasattr(trt, "MemoryPoolType"):
        config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, WORKSPACE_BYTES)
    for name in set_flags:
        config.set_flag(getattr(trt.BuilderFlag, name))
    for name in clear_flags:
        config.clear_flag(getattr(trt.BuilderFlag, name))
    profile = builder.create_optimization_profile()
    one = (1, *observation.shape)
    profile.set_shape(io["input"], one, one, (max_batch, *observation.shape))
    config.add_optimization_profile(profile)
    serialized = builder.build_serialized_network(network, config)
    if serialized is None:
        raise RuntimeError(f"{trt.__name__}'s builder made no engine: {'; '.join(log.errors) or 'no error logged'}")
    tf32_cleared = "TF32" in clear_flags and not config.get_flag(trt.BuilderFlag.TF32)
    numerics = (
        {"tf32": "off", "switches": {"BuilderFlag.TF32": "cleared"}}
        if tf32_cleared
        else {"tf32": "by-types" if strongly else "default"}
    )
    return BuildResult(
        bytes(serialized),
        time.perf_counter() - start,
        which,
        numerics,
        "strongly typed" if strongly else "weakly typed (BuilderFlag.FP16)" if set_flags else "weakly typed",
        io,
    )


def load_engine(trt, data: bytes):
    """(runtime, engine); raises RuntimeUnavailable when this GPU cannot run engines of this library (in the
    library's own words), VersionMismatch for an engine of another version, RuntimeError otherwise."""
    log = make_logger(trt)
    runtime = trt.Runtime(log)
    engine = runtime.deserialize_cuda_engine(data)
    if engine is not None:
        return runtime, engine
    said = " ".join(log.errors) or "deserialize_cuda_engine returned no engine"
    if "compute capability" in said.lower() or "cannot run on this gpu" in said.lower():
        raise RuntimeUnavailable(f"{trt.__name__} {trt.__version__}: {_reason(said)}")
    if "version" in said.lower() and ("serializ" in said.lower() or "plan" in said.lower()):
        raise VersionMismatch(_reason(said))
    raise RuntimeError(f"{trt.__name__} could not load the engine: {_reason(said)}")


def io_tensors(trt, engine, num_actions: int, observation: Observation = BREAKOUT_OBSERVATION) -> tuple[str, str]:
    """(input name, output name) by tensor mode, with their dtypes checked (NVIDIA: never assume the order)."""
    names = [engine.get_tensor_name(i) for i in range(engine.num_io_tensors)]
    inputs = [n for n in names if engine.get_tensor_mode(n) == trt.TensorIOMode.INPUT]
    outputs = [n for n in names if engine.get_tensor_mode(n) == trt.TensorIOMode.OUTPUT]
    if len(inputs) != 1 or len(outputs) != 1:
        raise ContractError(f"the engine has {len(inputs)} inputs and {len(outputs)} outputs; expected one of each")
    if engine.get_tensor_dtype(inputs[0]) != data_type(trt, observation):
        raise ContractError(
            f"engine input {inputs[0]} is {engine.get_tensor_dtype(inputs[0])}, not {observation.dtype}"
        )
    if engine.get_tensor_dtype(outputs[0]) != trt.DataType.FLOAT:
        raise ContractError(f"engine output {outputs[0]} is {engine.get_tensor_dtype(outputs[0])}, not float32")
    if int(engine.get_tensor_shape(outputs[0])[-1]) != num_actions:
        raise ContractError(
            f"engine output {outputs[0]} has shape {tuple(engine.get_tensor_shape(outputs[0]))}, not (N, {num_actions})"
        )
    return inputs[0], outputs[0]


def _reason(text: str) -> str:
    """The library's message without its source-location noise, on one line."""
    import re

    text = re.sub(r"\s*\(In [^()]*(?:\([^()]*\)[^()]*)*\)", "", text)  # "(In f at x.cpp:25 (cudaError 35))"
    text = re.sub(r"\[[^\]]*\.cpp::[^\]]*\]\s*", "", text)
    return " ".join(text.split())[:400]
