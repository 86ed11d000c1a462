"""A user's Stable-Baselines3 model (the ``.zip`` that ``model.save()`` writes) as a plain PyTorch module and ONNX.

SB3 hides the network behind ``model.predict()``, which mixes the network with numpy pre- and post-processing. To
measure a runtime against the PyTorch FP32 reference, both sides need the same graph: so the policy's deterministic
decision is rebuilt here as one ``torch.nn.Module`` from the policy's own sub-modules, and that module is what gets
exported to ONNX. Its outputs are what ``predict(obs, deterministic=True)`` computes before its final numpy step:

* DQN (and QR-DQN): the Q-values; ``predict`` takes their argmax.
* PPO, A2C, TRPO, MaskablePPO with a Discrete action space: the action logits; ``predict`` takes their argmax.
* PPO, A2C, TRPO with a Box action space: the Gaussian's mean, unclipped; ``predict`` clips it to the bounds (with
  ``squash_output`` the mean goes through tanh and is rescaled to the bounds, as ``predict`` does).
* SAC, TD3, DDPG (and TQC, CrossQ): the actor's deterministic action in [-1, 1], rescaled to the action space's bounds
  inside the module, as ``predict`` does; the caller may clip, which changes nothing here.

What stays outside: VecNormalize's statistics live in a separate file (``vec_normalize.pkl``), so observations must
already be normalized the way the training environment did; the same goes for wrappers such as frame stacking.
Image observations are taken in the model's own layout (channels first after VecTransposeImage), as uint8.

Loading unpickles what the file holds (SB3's format is cloudpickle): only load files you trust.
"""

from __future__ import annotations

import json
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from torch import nn

from rtreport.errors import UserError

from .sb3_networks import SUPPORTED, decision_module

ONNX_OUTPUT = "outputs"  # the name of a Stable-Baselines3 policy's exported output
WEIGHTS_INSIDE = "policy.pth"  # where SB3 keeps the policy's state dict inside its zip

# Algorithm -> (module, class, how its deterministic decision is computed).
_ALGORITHMS = {
    "DQN": ("stable_baselines3", "DQN", "q-net"),
    "PPO": ("stable_baselines3", "PPO", "actor-critic"),
    "A2C": ("stable_baselines3", "A2C", "actor-critic"),
    "SAC": ("stable_baselines3", "SAC", "squashed-actor"),
    "TD3": ("stable_baselines3", "TD3", "deterministic-actor"),
    "DDPG": ("stable_baselines3", "DDPG", "deterministic-actor"),
    "QRDQN": ("sb3_contrib", "QRDQN", "quantile-net"),
    "TQC": ("sb3_contrib", "TQC", "squashed-actor"),
    "CrossQ": ("sb3_contrib", "CrossQ", "squashed-actor"),
    "TRPO": ("sb3_contrib", "TRPO", "actor-critic"),
    "MaskablePPO": ("sb3_contrib", "MaskablePPO", "actor-critic"),
}
# The policy class's module, as SB3 writes it readably into ``data``, names the algorithm or a short list of them.
_BY_POLICY_MODULE = {
    "stable_baselines3.dqn.policies": ("DQN",),
    "stable_baselines3.sac.policies": ("SAC",),
    "stable_baselines3.td3.policies": ("TD3", "DDPG"),
    "stable_baselines3.common.policies": ("PPO", "A2C", "TRPO"),
    "sb3_contrib.qrdqn.policies": ("QRDQN",),
    "sb3_contrib.tqc.policies": ("TQC",),
    "sb3_contrib.crossq.policies": ("CrossQ",),
    "sb3_contrib.common.maskable.policies": ("MaskablePPO",),
}
_REFUSED_POLICY_MODULES = {
    "sb3_contrib.common.recurrent.policies": "RecurrentPPO (its LSTM state is not a function of the observation alone)",
    "sb3_contrib.ars.policies": "ARS",
}
# Replaced at load time: schedules are pickled functions that may not unpickle on another Python, and the replay
# buffer would be allocated at its training size; neither takes part in a decision.
_CUSTOM_OBJECTS = {
    "learning_rate": 0.0,
    "lr_schedule": lambda _: 0.0,
    "clip_range": lambda _: 0.0,
    "buffer_size": 1,
}


@dataclass(frozen=True)
class Sb3Policy:
    module: nn.Module  # eval mode, float32, on CPU; forward(obs) -> outputs
    algorithm: str
    outputs: str  # "q-values" or "logits" (argmax is the action) or "actions" (env units, not yet clipped)
    observation_shape: tuple
    observation_dtype: str  # "uint8" where the observation space is uint8 (images, RAM), else "float32"
    action_kind: str  # "discrete" or "continuous"
    num_actions: int  # discrete: n; continuous: the action's dimensions
    action_low: tuple | None
    action_high: tuple | None
    export: dict  # provenance: what was loaded and what the module computes

    def decide(self, outputs: np.ndarray) -> np.ndarray:
        """The actions ``predict(obs, deterministic=True)`` returns, from a batch of this module's outputs."""
        outputs = np.asarray(outputs)
        if self.action_kind == "discrete":
            return outputs.argmax(axis=1)
        return np.clip(outputs, np.asarray(self.action_low, np.float32), np.asarray(self.action_high, np.float32))


def load_sb3(path) -> Sb3Policy:
    """Read an SB3 save, load it on the CPU with its own algorithm class, and rebuild its deterministic decision.

    Every failure (a missing file, not a zip, not an SB3 save, an algorithm or space this module cannot rebuild,
    SB3 itself failing to load it) is a ``UserError`` with one line saying what is wrong.
    """
    path = Path(path)
    data = _read_data(path)
    algorithm = _identify(path, data)
    _check_spaces_before_loading(path, data)
    model = _load_with(path, algorithm)
    policy = model.policy
    observation_space, action_space = policy.observation_space, policy.action_space
    _check_spaces(path, observation_space, action_space)

    from gymnasium import spaces

    discrete = isinstance(action_space, spaces.Discrete)
    kind = _ALGORITHMS[algorithm][2]
    module, outputs, note = decision_module(policy, kind, discrete, path)
    module = module.float().eval().cpu()
    module.requires_grad_(False)

    import stable_baselines3

    return Sb3Policy(
        module=module,
        algorithm=algorithm,
        outputs=outputs,
        observation_shape=tuple(int(d) for d in observation_space.shape),
        observation_dtype="uint8" if observation_space.dtype == np.uint8 else "float32",
        action_kind="discrete" if discrete else "continuous",
        num_actions=int(action_space.n) if discrete else int(action_space.shape[0]),
        action_low=None if discrete else tuple(float(v) for v in action_space.low),
        action_high=None if discrete else tuple(float(v) for v in action_space.high),
        export={
            "from": "stable-baselines3",
            "sb3_version": stable_baselines3.__version__,
            "saved_with_sb3": _saved_version(path),
            "algorithm": algorithm,
            "policy_class": f"{type(policy).__module__}.{type(policy).__qualname__}",
            "path_inside": WEIGHTS_INSIDE,
            "outputs": outputs,
            "note": note,
        },
    )


def export_onnx(policy: Sb3Policy, out_path) -> None:
    """Export the decision module with the observation's own dtype as input and a dynamic batch axis (the export
    every user's module gets, ``agent.network.export_policy_onnx``)."""
    from .agent.network import export_policy_onnx
    from .task import Observation

    observation = Observation(tuple(policy.observation_shape), policy.observation_dtype)
    export_policy_onnx(policy.module, observation, out_path, output_name=ONNX_OUTPUT)


COPY_AGAIN = "copy it again from where it was saved, or save it again with model.save()"


def zip_is_whole(path: Path) -> bool:
    """Whether the file ends with a zip's end-of-central-directory record (a truncated zip does not, even where a
    zip inside it, such as SB3's policy.pth, still holds one of its own)."""
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            f.seek(max(0, f.tell() - 65557))
            tail = f.read()
    except OSError:
        return False
    at = tail.rfind(b"PK\x05\x06")
    if at < 0 or at + 22 > len(tail):
        return False
    return at + 22 + int.from_bytes(tail[at + 20 : at + 22], "little") == len(tail)


def _torch_archive_is_whole(data: bytes) -> bool:
    """torch.save's zip (a policy.pth) read whole from memory: its end record there and every entry's checksum."""
    import io

    if not data.startswith(b"PK\x03\x04"):
        return data.startswith(b"\x80")  # a legacy pickle: torch reads it or says why
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            return z.testzip() is None
    except (zipfile.BadZipFile, OSError, EOFError, RuntimeError, zlib.error):
        return False


def _read_data(path: Path) -> dict:
    """SB3's ``data`` entry: the algorithm's attributes as JSON, the classes and spaces with readable fields."""
    if not path.exists():
        raise UserError(f"model file not found: {path}")
    if path.is_dir():
        raise UserError(f"model path is a folder, not a file: {path}")
    if not zip_is_whole(path):
        with open(path, "rb") as f:
            zip_head = f.read(4) == b"PK\x03\x04"
        if zip_head:  # a zip's start without its end: cut short in a copy or a download
            raise UserError(f"{path} is damaged: a truncated zip file (its end is missing); {COPY_AGAIN}")
        raise UserError(f"{path}: not a Stable-Baselines3 save: not a zip file (SB3's model.save() writes a .zip)")
    try:
        with zipfile.ZipFile(path) as z:
            names = set(z.namelist())
            if "data" not in names:
                raise UserError(f"{path}: not a Stable-Baselines3 save: the zip has no 'data' entry")
            if WEIGHTS_INSIDE not in names:
                raise UserError(f"{path}: not a complete Stable-Baselines3 save: the zip has no '{WEIGHTS_INSIDE}'")
            bad = z.testzip()  # every entry's checksum
            if bad is not None:
                raise UserError(f"{path} is damaged: its entry {bad!r} fails its checksum; {COPY_AGAIN}")
            weights = z.read(WEIGHTS_INSIDE)
            raw = z.read("data")
    except (zipfile.BadZipFile, OSError, EOFError, RuntimeError, zlib.error) as e:
        raise UserError(f"{path} is damaged: {_one_line(e)}; {COPY_AGAIN}") from e
    if not _torch_archive_is_whole(weights):
        raise UserError(f"{path} is damaged: its {WEIGHTS_INSIDE} is not a whole PyTorch archive; {COPY_AGAIN}")
    try:
        data = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise UserError(f"{path}: not a Stable-Baselines3 save: its 'data' entry is not JSON ({_one_line(e)})") from e
    if not isinstance(data, dict) or "policy_class" not in data or "observation_space" not in data:
        raise UserError(f"{path}: not a Stable-Baselines3 save: its 'data' entry names no policy class or spaces")
    return data


def _identify(path: Path, data: dict) -> str:
    """The algorithm, from the policy class's module, and where several algorithms share one policy class, from the
    attributes only one of them saves (PPO's clip_range, TRPO's cg_max_steps, DDPG's policy_delay of 1)."""
    policy_class = data["policy_class"]
    module = policy_class.get("__module__") if isinstance(policy_class, dict) else None
    if module in _REFUSED_POLICY_MODULES:
        raise UserError(f"{path}: a {_REFUSED_POLICY_MODULES[module]} model is not supported; {SUPPORTED}")
    candidates = _BY_POLICY_MODULE.get(module)
    if candidates is None:
        candidates = _by_attributes(data)
    if candidates is None:
        raise UserError(f"{path}: cannot tell which algorithm saved it (policy class from {module!r}); {SUPPORTED}")
    if len(candidates) == 1:
        return candidates[0]
    if "TD3" in candidates:
        ddpg = data.get("policy_delay") == 1 and data.get("target_noise_clip") == 0.0
        return "DDPG" if ddpg else "TD3"
    if "clip_range" in data:
        return "PPO"
    if "cg_max_steps" in data:
        return "TRPO"
    return "A2C"


def _by_attributes(data: dict) -> tuple | None:
    """For a user's own policy subclass (its module is theirs): the attributes each algorithm saves."""
    if "top_quantiles_to_drop_per_net" in data:
        return ("TQC",)
    if "target_update_interval" in data and "exploration_rate" in data:
        return ("DQN",)
    if "policy_delay" in data:
        return ("TD3", "DDPG")
    if "target_entropy" in data:
        return ("SAC",)
    if ("n_steps" in data and "vf_coef" in data) or "cg_max_steps" in data:
        return ("PPO", "A2C", "TRPO")
    return None


def _space_type(entry) -> str:
    return entry.get(":type:", "") if isinstance(entry, dict) else ""


def _check_spaces_before_loading(path: Path, data: dict) -> None:
    """Refuse unsupported spaces from their readable type, before SB3 builds the whole algorithm around them."""
    obs_type, act_type = _space_type(data.get("observation_space")), _space_type(data.get("action_space"))
    if obs_type and not obs_type.endswith(".Box'>"):
        raise UserError(f"{path}: its observation space is a {_short(obs_type)}; {SUPPORTED}")
    if act_type and not (act_type.endswith(".Box'>") or act_type.endswith(".Discrete'>")):
        raise UserError(f"{path}: its action space is a {_short(act_type)}; {SUPPORTED}")


def _check_spaces(path: Path, observation_space, action_space) -> None:
    from gymnasium import spaces

    if not isinstance(observation_space, spaces.Box):
        raise UserError(f"{path}: its observation space is a {type(observation_space).__name__}; {SUPPORTED}")
    if isinstance(action_space, spaces.Box):
        if len(action_space.shape) != 1:
            raise UserError(f"{path}: its Box action space has shape {action_space.shape}; {SUPPORTED}")
        if not (np.all(np.isfinite(action_space.low)) and np.all(np.isfinite(action_space.high))):
            raise UserError(f"{path}: its Box action space has infinite bounds; actions need finite ones")
    elif not isinstance(action_space, spaces.Discrete):
        raise UserError(f"{path}: its action space is a {type(action_space).__name__}; {SUPPORTED}")


def _load_with(path: Path, algorithm: str):
    """``Algo.load(path, device="cpu")``, its failures as one line."""
    import importlib

    package, name, _ = _ALGORITHMS[algorithm]
    try:
        cls = getattr(importlib.import_module(package), name)
    except ImportError as e:
        raise UserError(f"{path}: a {algorithm} model needs the {package.replace('_', '-')} package") from e
    try:
        return cls.load(path, device="cpu", custom_objects=dict(_CUSTOM_OBJECTS))
    except UserError:
        raise
    except Exception as e:  # SB3 raises anything from unpickling, torch.load or building the policy
        if "weights_only" in str(e):  # torch's advice to unpickle an untrusted file with weights_only=False: no
            raise UserError(
                f"{path}: its weights hold pickled Python objects beyond tensors, which rtreport does not unpickle "
                f"because that can run code; save the model again with Stable-Baselines3's model.save()"
            ) from None
        raise UserError(f"{path}: Stable-Baselines3 could not load it as {algorithm}: {_one_line(e)}") from e


def _saved_version(path: Path) -> str | None:
    """The SB3 version that wrote the file, which SB3 keeps beside ``data``."""
    try:
        with zipfile.ZipFile(path) as z:
            return z.read("_stable_baselines3_version").decode("utf-8", "replace").strip() or None
    except (KeyError, zipfile.BadZipFile, OSError):
        return None


def _short(type_repr: str) -> str:
    """ "<class 'gymnasium.spaces.dict.Dict'>" -> "Dict"."""
    return type_repr.rsplit(".", 1)[-1].rstrip("'>") or type_repr


def _one_line(e: BaseException) -> str:
    text = " ".join(str(e).split()) or type(e).__name__
    text = f"{type(e).__name__}: {text}" if not text.startswith(type(e).__name__) else text
    return text if len(text) <= 300 else text[:297] + "..."
