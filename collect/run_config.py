"""The run configuration file (``rtreport collect --config FILE``, TOML): what the task is when a flag is not
enough — the environment's keyword arguments and time limit, and how the policy's outputs make a decision.

```toml
[env]
id = "CartPole-v1"            # or give --env
max_episode_steps = 500       # the environment's own limit when left out
kwargs = { sutton_barto_reward = false }
normalize_observations = "vec_normalize.pkl"   # Stable-Baselines3's VecNormalize statistics, as training used them
wrappers = [{ name = "FlattenObservation" }]    # gymnasium.wrappers classes, in order, with their kwargs

[policy]
outputs = "q-values"          # or "logits" (greedy); a Stable-Baselines3 .zip says it itself
epsilon = 0.0                 # Q-values: the evaluation ε (the Atari protocol's 0.01 when left out there)
```
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import replace
from pathlib import Path

from rtreport.errors import UserError

from . import tasks
from .gym_env import frame_stacked

KNOWN = {
    "env": {"id", "max_episode_steps", "kwargs", "wrappers", "normalize_observations"},
    "policy": {"outputs", "epsilon"},
}


def read(path: Path | None) -> dict:
    if path is None:
        return {}
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise UserError(f"run configuration not found: {path}") from None
    except IsADirectoryError:
        raise UserError(f"--config {path} is a folder; give the run configuration's TOML file") from None
    except OSError as e:
        raise UserError(f"cannot read the run configuration {path}: {e.strerror or type(e).__name__}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise UserError(f"{path} is not a TOML run configuration: {e}") from None
    for section, value in data.items():
        if section not in KNOWN or not isinstance(value, dict):
            raise UserError(f"{path}: unknown section [{section}]; known: [env], [policy]")
        unknown = set(value) - KNOWN[section]
        if unknown:
            raise UserError(
                f"{path}: unknown key(s) {', '.join(sorted(unknown))} in [{section}]; known: "
                f"{', '.join(sorted(KNOWN[section]))}"
            )
    return data


def _wrappers(env: dict) -> list:
    wrappers = env.get("wrappers", [])
    if not isinstance(wrappers, list) or not all(
        isinstance(w, dict) and isinstance(w.get("name"), str) for w in wrappers
    ):
        raise UserError('[env] wrappers must be a list of tables, each with a name: [{ name = "FlattenObservation" }]')
    for w in wrappers:
        if set(w) - {"name", "kwargs"} or not isinstance(w.get("kwargs", {}), dict):
            raise UserError(f"[env] wrapper {w['name']}: give only name and kwargs (a table)")
    return [(w["name"], w.get("kwargs", {})) for w in wrappers]


def _normalization(env: dict, base: Path | None, found, normalize):
    """The VecNormalize the run plays behind, and what the run file says of it: ``--normalize``, the run
    configuration's ``normalize_observations``, or the one found beside the model or in its folder."""
    from . import vec_normalize

    given = env.get("normalize_observations")
    if normalize is not None and given:
        raise UserError(
            "the VecNormalize is given twice, by --normalize and by the run configuration's [env] "
            "normalize_observations: give it once"
        )
    if normalize is not None:
        saved, source = vec_normalize.read(normalize), "--normalize"
    elif given:
        path = Path(given) if base is None or Path(given).is_absolute() else base / given
        saved, source = vec_normalize.read(path), "run configuration"
    elif found is not None and found.normalize is not None:
        saved, source = vec_normalize.read(found.normalize), found.source
    else:
        if found is not None and found.trained_normalized:
            raise UserError(
                f"{found.trained_normalized} says the model was trained on normalised observations, but no "
                f"vecnormalize.pkl is in {found.folder}: give it by --normalize FILE"
            )
        return None, {"applied": False, "reason": "none found"}
    return saved, saved.record(source)


# errors of the environment's id, not of a configuration's values: said without the file's name where --env gave it
ID_ERRORS = ("--env", "unknown or unusable environment", "needs a package that is not installed")


def task_for(
    env_id: str | None,
    config: dict,
    base: Path | None = None,
    source: Path | None = None,
    found=None,
    normalize: Path | None = None,
) -> tasks.Task:
    """The task of ``--env`` (or the configuration's [env] id, or the model folder's; all must agree), with the
    configuration's settings and the training's preprocessing. ``source``: the configuration's file, which an error
    of one of its values names; ``found``: what the model's folder says (``model_folder.Found``); ``normalize``:
    ``--normalize FILE``."""
    try:
        return _task_for(env_id, config, base, found, normalize)
    except UserError as e:
        text = str(e)
        if source is None or not config or text.startswith(str(source)) or (env_id and text.startswith(ID_ERRORS)):
            raise
        raise UserError(f"{source}: {text}") from None


def _task_for(env_id: str | None, config: dict, base: Path | None, found=None, normalize=None) -> tasks.Task:
    env = config.get("env", {})
    if env_id is not None and not env_id.strip():
        raise UserError("--env is empty: give an environment id (ALE/Breakout-v5, CartPole-v1, …)")
    if found is not None and found.env_id:
        if env.get("id") and env["id"] != found.env_id:
            raise UserError(
                f"the run configuration's [env] id {env['id']}, but {found.folder}'s {found.env_id_from} says the "
                f"model was trained on {found.env_id}"
            )
        env_id = env_id or found.env_id
    if env_id and env.get("id") and env["id"] != env_id:
        raise UserError(f"--env {env_id} and the run configuration's [env] id {env['id']} differ")
    steps = env.get("max_episode_steps")
    if steps is not None and (not isinstance(steps, int) or steps < 1):
        raise UserError(f"max_episode_steps must be a positive whole number, not {steps!r}")
    kwargs = env.get("kwargs", {})
    if not isinstance(kwargs, dict):
        raise UserError("[env] kwargs must be a table of keyword arguments")
    if found is not None:
        for key, value in found.env_kwargs.items():
            if key in kwargs and kwargs[key] != value:
                raise UserError(
                    f"[env] kwargs {key} = {kwargs[key]!r}, but {found.folder} says the model was trained with "
                    f"{key} = {value!r}"
                )
        kwargs = {**found.env_kwargs, **kwargs}
    saved, said = _normalization(env, base, found, normalize)
    wrappers = [*(found.wrappers if found is not None else ()), *_wrappers(env)]
    task = tasks.for_env(env_id or env.get("id"), kwargs, steps, wrappers, saved.stats if saved else None)
    if found is not None and found.frame_stack:
        task = frame_stacked(task, found.frame_stack)
    if task.family == "gymnasium" and (found is not None or saved is not None):
        folder = {"model_folder": found.record()} if found is not None and found.layout != "file" else {}
        task = replace(task, preprocessing=json.dumps({"normalization": said, **folder}, sort_keys=True))
    policy = config.get("policy", {})
    epsilon = policy.get("epsilon")
    if epsilon is not None and not (isinstance(epsilon, (int, float)) and 0 <= epsilon <= 1):
        raise UserError(f"[policy] epsilon must be a number from 0 to 1, not {epsilon!r}")
    if "outputs" in policy or epsilon is not None:
        task = task.with_outputs(policy.get("outputs", task.outputs), epsilon)
    return task
