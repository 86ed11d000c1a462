"""A model as its user has it: a ``.zip`` (or other model file) alone or with its VecNormalize beside it, an RL
Baselines3 Zoo experiment folder, or a Hugging Face SB3 model folder; what each says of the environment and of the
training's preprocessing (``--model FILE or DIR``, ``--normalize FILE``).

* **RL Zoo** (``logs/<algo>/<Env>_<n>/``, as ``rl_zoo3.train`` saves it): ``<Env>.zip`` (the last model; else
  ``best_model.zip``), and ``<Env>/`` with ``config.yml`` (the hyperparameters: ``normalize``, ``frame_stack``,
  ``env_wrapper``, ``vec_env_wrapper``), ``args.yml`` (the command line: ``env``, ``env_kwargs``) and, when training
  normalised, ``vecnormalize.pkl``. Both YAML files are ``yaml.dump`` of an ``OrderedDict`` (a list of pairs
  under ``!!python/object/apply:collections.OrderedDict``); they are read with a safe loader that builds no
  Python object (``_yaml``).
* **Hugging Face** (a model repository of ``rl_zoo3.push_to_hub`` or ``huggingface_sb3``): ``<algo>-<Env>.zip``,
  ``vec_normalize.pkl``, ``config.yml`` / ``args.yml`` / ``env_kwargs.yml`` (the Zoo's) and ``README.md``, whose
  model card names the environment in its metadata.

The environment comes from the folder where ``--env`` is not given; a folder that names another one than ``--env`` is
refused. A Zoo ``frame_stack`` of a 1-D observation is played as ``VecFrameStack`` stacks it (after the normalisation,
zeros before the episode's first observation); a Zoo setting rtreport cannot reproduce exactly (a wrapper outside
``gymnasium.wrappers``, a VecEnv wrapper, a frame stack of another observation) is refused by name: the agent is never
measured without it.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

from rtreport.errors import UserError

from . import vec_normalize

NOT_MODELS = ("train_eval_metrics.zip", "replay_buffer.zip")


@dataclass(frozen=True)
class Found:
    model: Path  # the model file to load
    layout: str  # "file", "rl-zoo" or "hugging-face"
    folder: Path
    env_id: str | None = None
    env_id_from: str | None = None  # the file that named the environment (a folder: by its name; a .zip: by its)
    env_kwargs: dict = field(default_factory=dict)
    normalize: Path | None = None  # the VecNormalize found there
    trained_normalized: str | None = None  # the setting that says training normalised the observations
    wrappers: tuple = ()  # ((gymnasium.wrappers name, kwargs), ...)
    frame_stack: int = 0  # the Zoo's frame_stack (VecFrameStack after VecNormalize)

    @property
    def source(self) -> str:
        return {"file": "beside the model", "rl-zoo": "rl-zoo folder", "hugging-face": "hugging-face folder"}[
            self.layout
        ]

    def record(self) -> dict:
        return {
            "layout": self.layout,
            "folder": str(self.folder),
            "model_file": self.model.name,
            "env_id_from": self.env_id_from,
            "env_kwargs": dict(self.env_kwargs),
            "frame_stack": self.frame_stack,
            "env_wrappers": [{"name": n, "kwargs": dict(k)} for n, k in self.wrappers],
        }


def model_file(path: Path) -> Path:
    """The model file a folder holds (the folder's layout decides); a file is itself."""
    path = Path(path)
    return find(path).model if path.is_dir() else path


def find(model_path: Path, env_id: str | None = None) -> Found:
    """What ``--model`` is: its model file, and what its folder says (refused where the folder is unclear)."""
    path = Path(model_path)
    folder = path if path.is_dir() else path.parent
    chosen = None if path.is_dir() else path
    try:
        zoo = [d for d in sorted(folder.iterdir()) if d.is_dir() and _zoo_settings(d, chosen)]
    except OSError as e:
        raise UserError(f"cannot read the model's folder {folder}: {e.strerror or type(e).__name__}") from None
    if zoo:
        if len(zoo) > 1:
            names = [d.name for d in zoo]
            match = [d for d in zoo if chosen is not None and chosen.stem == d.name]
            if not match:
                raise UserError(
                    f"{folder} holds the settings of several RL Zoo runs ({', '.join(names)}): give the model file"
                )
            zoo = match
        found = _zoo(folder, zoo[0], chosen)
    elif _is_hub(folder) and (chosen is None or chosen.suffix == ".zip"):
        found = _hub(folder, chosen, env_id)
    elif chosen is None:
        found = _plain_folder(folder)
    else:
        found = Found(chosen, "file", folder, normalize=vec_normalize.beside(folder))
    if env_id and found.env_id and env_id != found.env_id:
        raise UserError(
            f"--env {env_id}, but {found.folder}'s {found.env_id_from} says the model was trained on {found.env_id}"
        )
    return found


def _has(folder: Path, *names) -> bool:
    return any((folder / n).is_file() for n in names)


def _zoo_settings(d: Path, chosen: Path | None) -> bool:
    """A Zoo run's settings folder (``_save_config`` writes both files), and the given model is that run's."""
    if not ((d / "config.yml").is_file() and (d / "args.yml").is_file()):
        return False
    return chosen is None or chosen.stem == d.name or re.fullmatch(r"best_model|rl_model_\d+_steps", chosen.stem)


def _is_hub(folder: Path) -> bool:
    return _has(folder, "env_kwargs.yml", "config.yml", "args.yml") or _card_env(folder)[0] is not None


def _zoo(folder: Path, settings: Path, chosen: Path | None) -> Found:
    model = chosen
    if model is None:
        for name in (f"{settings.name}.zip", "best_model.zip"):
            if (folder / name).is_file():
                model = folder / name
                break
        else:
            raise UserError(f"the RL Zoo folder {folder} holds neither {settings.name}.zip nor best_model.zip")
    args = _yaml(settings / "args.yml")
    config = _yaml(settings / "config.yml")
    env_id = args.get("env") if isinstance(args.get("env"), str) else None
    env_from = f"{settings.name}/args.yml" if env_id else f"{settings.name}/"
    kwargs = args.get("env_kwargs") or {}
    if not isinstance(kwargs, dict):
        raise UserError(f"{settings / 'args.yml'}: env_kwargs is not a mapping of keyword arguments")
    return Found(
        model,
        "rl-zoo",
        folder,
        env_id or settings.name,
        env_from,
        dict(kwargs),
        vec_normalize.beside(settings) or vec_normalize.beside(folder),
        *_settings(settings / "config.yml", config),
    )


def _hub(folder: Path, chosen: Path | None, given_env: str | None) -> Found:
    model = chosen
    if model is None:
        zips = [p for p in sorted(folder.glob("*.zip")) if p.name not in NOT_MODELS]
        if given_env and len(zips) > 1:
            zips = [p for p in zips if p.stem.endswith("-" + given_env.replace("/", "-"))] or zips
        if len(zips) != 1:
            what = ", ".join(p.name for p in zips) if zips else "no .zip"
            raise UserError(f"{folder}: expected one model .zip in this Hugging Face folder, found {what}")
        model = zips[0]
    args = _yaml(folder / "args.yml")
    env_id, env_from = (args["env"], "args.yml") if isinstance(args.get("env"), str) else _card_env(folder)
    if env_id is None:
        env_id, env_from = _name_env(model)
    if env_id is None and given_env is None:
        raise UserError(f"{folder}: cannot tell which environment {model.name} plays: give --env")
    kwargs = _yaml(folder / "env_kwargs.yml", whole=True)
    kwargs = kwargs if kwargs is not None else (args.get("env_kwargs") or {})
    if not isinstance(kwargs, dict):
        raise UserError(f"{folder / 'env_kwargs.yml'}: not a mapping of keyword arguments")
    return Found(
        model,
        "hugging-face",
        folder,
        env_id,
        env_from,
        dict(kwargs),
        vec_normalize.beside(folder),
        *_settings(folder / "config.yml", _yaml(folder / "config.yml")),
    )


def _plain_folder(folder: Path) -> Found:
    zips = [p for p in sorted(folder.glob("*.zip")) if p.name not in NOT_MODELS]
    if len(zips) != 1:
        raise UserError(
            f"model path is a folder: {folder} is neither an RL Zoo experiment folder nor a Hugging Face model "
            f"folder, and holds {len(zips)} .zip files: give the model file"
        )
    return Found(zips[0], "file", folder, normalize=vec_normalize.beside(folder))


def _card_env(folder: Path):
    """The environment a Hugging Face model card names in its metadata (``model-index`` … ``dataset``)."""
    readme = folder / "README.md"
    if not readme.is_file():
        return None, None
    text = readme.read_text(encoding="utf-8", errors="replace")
    head = re.match(r"\A---\s*\n(.*?)\n---\s*\n", text, re.S)
    if not head:
        return None, None
    try:
        import yaml

        meta = yaml.safe_load(head.group(1)) or {}
        dataset = meta["model-index"][0]["results"][0]["dataset"]
        name = dataset.get("type") or dataset.get("name")
    except Exception:
        return None, None
    return (str(name), "README.md") if name else (None, None)


def _name_env(model: Path):
    """``ppo-CartPole-v1.zip`` -> CartPole-v1 (a registered id; ``ALE-Pong-v5`` -> ``ALE/Pong-v5``)."""
    import gymnasium as gym

    parts = model.stem.split("-", 1)
    if len(parts) == 2:
        name = parts[1]
        for candidate in (name, name.replace("-", "/", 1)):
            if candidate in gym.registry:
                return candidate, model.name
    return None, None


def _settings(path: Path, config: dict) -> tuple:
    """(trained_normalized, wrappers, frame_stack) from a Zoo ``config.yml``; what cannot be reproduced exactly is
    refused (a frame stack by ``gym_env.frame_stacked``, where the task is known)."""
    normalize = config.get("normalize")
    said = None
    if normalize and _normalizes_obs(normalize):
        said = f"{path}: normalize: {str(normalize).lower() if isinstance(normalize, bool) else normalize}"
    if config.get("vec_env_wrapper"):
        raise UserError(
            f"{path}: vec_env_wrapper {_name(config['vec_env_wrapper'])} cannot be reproduced by rtreport; the agent "
            "is not measured without it"
        )
    stack = config.get("frame_stack") or 0
    if not isinstance(stack, int) or isinstance(stack, bool) or stack < 0:
        raise UserError(f"{path}: frame_stack must be a whole number, not {stack!r}")
    return said, tuple(_wrappers(path, config.get("env_wrapper"))), stack


def _normalizes_obs(value) -> bool:
    """The Zoo's ``normalize``: true, a dict, or a string such as ``"dict(norm_obs=False, norm_reward=True)"``."""
    if isinstance(value, dict):
        return bool(value.get("norm_obs", True))
    if isinstance(value, str):
        try:
            tree = ast.parse(value.strip(), mode="eval").body
            if isinstance(tree, ast.Call) and getattr(tree.func, "id", None) == "dict":
                given = {k.arg: ast.literal_eval(k.value) for k in tree.keywords}
            else:
                given = ast.literal_eval(tree)
            return bool(given.get("norm_obs", True))
        except (SyntaxError, ValueError, AttributeError):
            return True
    return bool(value)


def _wrappers(path: Path, value):
    """The Zoo's ``env_wrapper`` (a name, or a list of names or {name: kwargs}) as gymnasium.wrappers entries."""
    import gymnasium as gym

    if not value:
        return []
    items = value if isinstance(value, list) else [value]
    out = []
    for item in items:
        name, kwargs = next(iter(item.items())) if isinstance(item, dict) and len(item) == 1 else (item, {})
        module, _, cls = str(name).rpartition(".")
        if not (module.startswith("gymnasium.wrappers") and isinstance(getattr(gym.wrappers, cls, None), type)):
            raise UserError(
                f"{path}: env_wrapper {name} cannot be reproduced exactly by rtreport (it applies classes of "
                "gymnasium.wrappers); the agent is not measured without it"
            )
        out.append((cls, dict(kwargs or {})))
    return out


def _name(value) -> str:
    return str(next(iter(value)) if isinstance(value, dict) else value)


def _yaml(path: Path, whole: bool = False):
    """A Zoo YAML file read safely: ``OrderedDict`` as a dict, a ``str`` subclass (``EnvironmentName``) as its
    string, a tuple as a tuple, any other Python object as a string naming it (never built)."""
    if not path.is_file():
        return None if whole else {}
    try:
        import yaml
    except ImportError:
        raise UserError(f"reading {path} needs PyYAML: pip install pyyaml") from None

    class Loader(yaml.SafeLoader):
        pass

    def python(loader, suffix, node):
        if isinstance(node, yaml.SequenceNode):
            value = loader.construct_sequence(node, deep=True)
        elif isinstance(node, yaml.MappingNode):
            value = loader.construct_mapping(node, deep=True)
        else:
            value = loader.construct_scalar(node)
        args = value.get("args", []) if isinstance(value, dict) else value if isinstance(value, list) else []
        if suffix.endswith("collections.OrderedDict"):
            return dict(args[0]) if args else {}
        if suffix == "tuple":
            return tuple(value)
        if len(args) == 1 and isinstance(args[0], str):
            return args[0]
        return f"<{suffix}>"

    Loader.add_multi_constructor("tag:yaml.org,2002:python/", python)
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=Loader)  # noqa: S506 (a SafeLoader subclass)
    except (yaml.YAMLError, UnicodeDecodeError, ValueError, TypeError) as e:
        raise UserError(f"{path} is not a readable YAML file: {' '.join(str(e).split())[:200]}") from None
    if whole:
        return data
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise UserError(f"{path}: expected a mapping of settings, found a {type(data).__name__}")
    return data
