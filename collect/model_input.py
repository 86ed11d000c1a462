"""The model under test: the shipped agent, or a user's PyTorch checkpoint, TorchScript module, ONNX file or
Stable-Baselines3 ``.zip``, checked against the run's task (``tasks.Task``).

Validation happens here, before any runtime starts, so bad input is one clear line that says which shape was
expected.
"""

from __future__ import annotations

import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import torch

from rtreport.errors import UserError

from .agent.network import QNetwork, export_onnx, export_policy_onnx, sha256_file
from .checkpoint import keys_found, unwrap_state_dict
from .fixed_batch import REEXPORT, takes_a_batch
from .model_kind import is_cut_zip, named_otherwise, onnx_output_shape
from .task import BREAKOUT, Task


@dataclass
class ModelSource:
    path: Path
    format: str  # "pytorch" (rtreport's Q-network), "torchscript", "sb3" or "onnx"
    sha256: str
    num_actions: int
    state_dict: dict | None = None
    task: Task = BREAKOUT
    export: dict = field(default_factory=dict)  # how rtreport made the module and the ONNX it measures, if it did
    # The one batch size the model takes, where its input fixes it (an ONNX export without a dynamic batch axis, a
    # module traced at batch 1); None: any. Every runtime then measures at that batch only (``Runner.fixed_batch``).
    fixed_batch: int | None = None

    def torch_model(self):
        """A fresh module on the CPU in eval mode, with ``num_actions`` (each runtime makes its own copy)."""
        if self.format == "pytorch":
            model = QNetwork(self.num_actions)
            model.load_state_dict(self.state_dict)
            return model.eval()
        if self.format == "torchscript":
            return PolicyNet(torch.jit.load(str(self.path), map_location="cpu"), self.num_actions).eval()
        if self.format == "sb3":
            from .sb3_model import load_sb3

            return PolicyNet(load_sb3(self.path).module, self.num_actions).eval()
        raise TypeError(f"a {self.format} model has no PyTorch module")

    def onnx_source(self):
        """What ``Artifacts`` needs: the user's ONNX file, or a function exporting the PyTorch module once."""
        if self.format == "onnx":
            return self.path
        if self.format == "pytorch":
            return lambda out: export_onnx(self.torch_model(), out)
        return lambda out: export_policy_onnx(self.torch_model(), self.task.observation, out)


class PolicyNet(torch.nn.Module):
    """A user's module as the PyTorch runtimes take it: its input cast to the weights' dtype (so that a
    half-precision copy takes the task's float32 observations), and ``num_actions``."""

    def __init__(self, inner, num_actions: int):
        super().__init__()
        self.inner, self.num_actions = inner, num_actions

    def forward(self, observation):
        weight = next(self.inner.parameters(), None)
        x = observation.to(weight.dtype) if weight is not None and observation.is_floating_point() else observation
        return self.inner(x)


def load_model(path: Path, task: Task | None = None) -> ModelSource:
    """The model at ``path``, checked against ``task`` (default: Breakout). A Stable-Baselines3 policy of
    action logits makes its task greedy on logits."""
    path, task = Path(path), task or BREAKOUT
    if not path.exists():
        raise UserError(f"model file not found: {path}")
    if path.is_dir():  # an RL Zoo or Hugging Face folder: its model file
        from .model_folder import model_file

        path = model_file(path)
    suffix = path.suffix.lower()
    if suffix == ".onnx":
        source = _load_onnx(path, task)
    elif suffix == ".zip" and not (_zip_is_whole(path) and _is_torch_archive(path)):  # a damaged one: SB3's
        source = _load_sb3(path, task)
    elif _is_torchscript(path):
        source = _load_torchscript(path, task)
    else:
        if is_cut_zip(path):  # a TorchScript module or a torch.save file cut short: its zip directory is gone
            again = SAVE_HINT if task.family == "atari" else "save it again with torch.jit.save"
            raise UserError(
                f"{path} is damaged or truncated: a zip archive whose end is missing (torch.jit.save and "
                f"torch.save write zip archives); copy it again from where it was saved, or {again}"
            )
        really = named_otherwise(path)
        if really:  # the format is taken from the name: say which name the file needs
            raise UserError(
                f"{path} is {really[0]}, named {suffix or 'without a suffix'}: rename it to end in {really[1]}"
            )
        if task.family != "atari":
            head = _head(path)
            if not head or _is_text(head):
                raise UserError(
                    f"{path} is {'empty (0 bytes)' if not head else 'a text file'}, not a model: give a TorchScript "
                    f"module (torch.jit.save), an ONNX file or a Stable-Baselines3 .zip"
                )
            raise UserError(
                f"{path}: for {task.name}, give a TorchScript module (torch.jit.save), an ONNX file or a "
                f"Stable-Baselines3 .zip; a state dict fits only rtreport's Atari Q-network"
            )
        source = _load_torch(path)
    source.task = source.task if source.format == "sb3" else task
    if source.num_actions != task.num_actions:
        if task.is_breakout:
            raise UserError(
                f"{path}: the model has {source.num_actions} actions, but Breakout's minimal action set has "
                f"{task.num_actions}"
            )
        raise UserError(
            f"{path}: the model has {source.num_actions} outputs, but {task.name} has {task.num_actions} "
            f"{'action dimension' if task.continuous else 'action'}{'s' * (task.num_actions != 1)} "
            f"(expected outputs (N, {task.num_actions}))"
        )
    return source


def _zip_is_whole(path: Path) -> bool:
    from .sb3_model import zip_is_whole

    return zip_is_whole(path)


def _is_torch_archive(path: Path) -> bool:
    """torch.save's and torch.jit.save's zip archives hold a ``data.pkl``; a Stable-Baselines3 save does not."""
    try:
        with zipfile.ZipFile(path) as z:
            return any(n.endswith("data.pkl") for n in z.namelist())
    except (zipfile.BadZipFile, OSError):
        return False


def _is_torchscript(path: Path) -> bool:
    try:
        with zipfile.ZipFile(path) as z:
            return any(n.endswith("constants.pkl") or "/code/" in n for n in z.namelist())
    except (zipfile.BadZipFile, OSError):
        return False


def _load_torchscript(path: Path, task: Task) -> ModelSource:
    try:
        module = torch.jit.load(str(path), map_location="cpu").eval()
    except Exception as e:
        raise UserError(
            f"{path}: PyTorch cannot load it as TorchScript ({type(e).__name__}: {_first_line(e)})"
        ) from None
    outputs = _run_module(path, module, task)
    fixed = None if takes_a_batch(module, task) else 1
    return ModelSource(
        path, "torchscript", sha256_file(path), outputs, export={"from": "TorchScript"}, fixed_batch=fixed
    )


def _run_module(path: Path, module, task: Task) -> int:
    """The module's action count, from one decision on a zero observation of the task's shape."""
    example = torch.zeros((1, *task.observation.shape), dtype=getattr(torch, task.observation.dtype))
    try:
        with torch.inference_mode():
            out = module(example)
    except Exception as e:
        raise UserError(
            f"{path}: the model does not take {task.name}'s observations, {task.observation.describe()} "
            f"({_last_line(e)[:200]})"
        ) from None
    if not isinstance(out, torch.Tensor) or out.dim() != 2 or out.shape[0] != 1:
        shape = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
        raise UserError(f"{path}: expected outputs (N, {task.num_actions}) for {task.name}; the model returns {shape}")
    return int(out.shape[1])


def _load_sb3(path: Path, task: Task) -> ModelSource:
    from .sb3_model import load_sb3

    policy = load_sb3(path)
    if (policy.action_kind == "continuous") != task.continuous:
        raise UserError(
            f"{path}: a {policy.algorithm} policy with {policy.action_kind} actions, but {task.name}'s actions are "
            f"{task.action_kind}"
        )
    if tuple(policy.observation_shape) != tuple(task.observation.shape):
        raise UserError(
            f"{path}: the policy takes observations of shape {tuple(policy.observation_shape)}, but {task.name} "
            f"gives {tuple(task.observation.shape)}"
        )
    kind = policy.outputs  # "q-values", "logits" or "actions"
    if task.family == "atari" and task.atari_preprocessing == "rtreport":
        if task.epsilon not in (0.0, BREAKOUT.epsilon):  # the user's own ε (a run configuration's) is not dropped
            raise UserError(
                f"{path}: a Stable-Baselines3 agent on an ALE game plays as SB3 evaluates it, greedy (ε 0); "
                f"an evaluation epsilon of {task.epsilon:g} cannot be honoured: leave [policy] epsilon out"
            )
        task = task.sb3_preprocessing()  # an SB3 agent on an ALE game plays as SB3 evaluates it: greedy, ε 0
    if kind != "q-values" and task.epsilon > 0:
        raise UserError(
            f"{path}: a {policy.algorithm} policy decides greedily on its "
            f"{'actions' if kind == 'actions' else 'logits'}; an evaluation epsilon ({task.epsilon:g}) is for "
            "Q-values: leave [policy] epsilon out"
        )
    export = {**policy.export, "onnx": "exported by rtreport from the policy's PyTorch module (torch.onnx.export)"}
    return ModelSource(path, "sb3", sha256_file(path), policy.num_actions, task=task.with_outputs(kind), export=export)


SAVE_HINT = "save the weights with torch.save(model.state_dict(), 'model.pt')"


def _load_torch(path: Path) -> ModelSource:
    import pickle

    from .agent.protocol import OBSERVATION_SHAPE

    head = _head(path)
    if not head:
        raise UserError(f"{path} is empty (0 bytes), not a PyTorch checkpoint; {SAVE_HINT}")
    if not (head.startswith(b"PK\x03\x04") or head.startswith(b"\x80")):  # torch.save's zip, or a legacy pickle
        kind = "a text file" if _is_text(head) else "not a PyTorch checkpoint (neither torch.save's zip nor a pickle)"
        raise UserError(f"{path} is {kind}; rtreport needs a state dict of its Q-network: {SAVE_HINT}")
    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as e:
        found = re.search(r"Unsupported global: GLOBAL ([\w.]+)", str(e))
        what = f"a pickled {found.group(1)}" if found else "pickled Python objects"
        raise UserError(
            f"{path} holds {what} (e.g. a whole model saved with torch.save(model)), which rtreport does "
            f"not unpickle because that can run code; {SAVE_HINT}"
        ) from None
    except Exception as e:  # a torn or truncated archive, a damaged pickle
        raise UserError(
            f"{path} is damaged or truncated: PyTorch cannot read it ({type(e).__name__}"
            f"{': ' + _first_line(e)[:120] if _first_line(e) else ''}); {SAVE_HINT}"
        ) from None
    obj = unwrap_state_dict(obj)
    if not isinstance(obj, dict) or "network.0.weight" not in obj or "network.13.weight" not in obj:
        raise UserError(
            f"{path} is not a state dict of rtreport's Q-network (expected keys network.0.weight … "
            f"network.13.weight; found {keys_found(obj)})"
        )
    if obj["network.0.weight"].shape[1] != OBSERVATION_SHAPE[0]:
        raise UserError(
            f"{path}: the network takes {obj['network.0.weight'].shape[1]} stacked frames, not (N, 4, 84, 84)"
        )
    num_actions = int(obj["network.13.weight"].shape[0])
    try:
        QNetwork(num_actions).load_state_dict(obj)
    except RuntimeError as e:  # e.g. a first linear layer sized for another input resolution
        whole = " ".join(
            line.strip() for line in str(e).splitlines() if line.strip()
        )  # PyTorch's first line ends at ':'
        raise UserError(f"{path} does not fit rtreport's Q-network (input (N, 4, 84, 84)): {whole[:600]}") from None
    return ModelSource(path, "pytorch", sha256_file(path), num_actions, obj)


def _load_onnx(path: Path, task: Task) -> ModelSource:
    import onnx

    if not _head(path):
        raise UserError(f"{path} is empty (0 bytes), not an ONNX model")
    try:
        model = onnx.load(str(path))
        onnx.checker.check_model(model)
    except Exception as e:
        why = (  # protobuf's own text names its message classes; say what it means
            "its bytes do not parse as an ONNX protobuf"
            if type(e).__name__ == "DecodeError"
            else f"{type(e).__name__}: {_first_line(e)}"
        )
        raise UserError(f"cannot read {path} as an ONNX model (damaged, truncated or not ONNX): {why}") from None
    inputs = [i for i in model.graph.input if i.name not in {t.name for t in model.graph.initializer}]
    if len(inputs) != 1 or len(model.graph.output) != 1:
        raise UserError(f"{path}: expected one input and one output, found {len(inputs)} and {len(model.graph.output)}")
    tensor = inputs[0].type.tensor_type
    dims = [d.dim_value if d.HasField("dim_value") else None for d in tensor.shape.dim]
    expected = task.observation
    dtype = onnx.helper.tensor_dtype_to_np_dtype(tensor.elem_type)
    if dtype != expected.dtype or len(dims) != len(expected.shape) + 1 or tuple(dims[1:]) != expected.shape:
        shown = ["N" if d is None else d for d in dims]
        raise UserError(
            f"{path}: input must be {expected.describe()}"
            + ("" if task.is_breakout else f" for {task.name}")
            + f"; found {dtype} ({', '.join(map(str, shown))})"
        )
    if dims and dims[0] is not None and dims[0] != 1:  # batch 1 is how the agent decides: nothing measures here
        raise UserError(
            f"{path}: the input fixes the batch size at {dims[0]}, but the agent decides one observation at a "
            f"time; {REEXPORT}"
        )
    out_dims = [
        d.dim_value if d.HasField("dim_value") else None for d in model.graph.output[0].type.tensor_type.shape.dim
    ]
    shape = out_dims if out_dims and out_dims[-1] else onnx_output_shape(path, task.observation)
    if len(shape) != 2:
        shown = ", ".join("N" if i == 0 else str(d if d is not None else "?") for i, d in enumerate(shape))
        raise UserError(
            f"{path}: the output must be (N, A), one row of {task.num_actions} values per observation; the model's "
            f"is ({shown}): squeeze or reshape it before exporting"
        )
    return ModelSource(path, "onnx", sha256_file(path), int(shape[-1]), fixed_batch=dims[0] if dims else None)


def _head(path: Path, n: int = 512) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read(n)
    except OSError as e:
        raise UserError(f"cannot read {path}: {e.strerror or type(e).__name__}") from None


def _is_text(head: bytes) -> bool:
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return all(c.isprintable() or c in "\r\n\t" for c in text)


def _last_line(e: Exception) -> str:
    """What went wrong, where an error's message is a trace (TorchScript's) whose last line says it."""
    text = [line.strip() for line in str(e).strip().splitlines() if line.strip()]
    return text[-1] if text else type(e).__name__


def _first_line(e: Exception) -> str:
    text = str(e).strip().splitlines()
    return text[0][:200] if text else ""
