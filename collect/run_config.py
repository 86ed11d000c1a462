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

import tomllib
from pathlib import Path

from rtreport.errors import UserError

from . import tasks

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


def normalization(path, base: Path | None = None):
    """(mean, var, clip, epsilon) of observations from Stable-Baselines3's saved ``VecNormalize`` (a pickle: load
    only files you trust), kept in the run as numbers."""
    import pickle

    import numpy as np

    path = Path(path) if base is None or Path(path).is_absolute() else base / path
    try:
        with open(path, "rb") as f:
            saved = pickle.load(f)
        rms, clip, eps = saved.obs_rms, float(saved.clip_obs), float(saved.epsilon)
        mean, var = np.asarray(rms.mean, np.float64).ravel(), np.asarray(rms.var, np.float64).ravel()
    except FileNotFoundError:
        raise UserError(f"observation normalisation not found: {path}") from None
    except Exception as e:
        raise UserError(
            f"{path} is not a saved VecNormalize of Stable-Baselines3 ({type(e).__name__}: {str(e)[:160]})"
        ) from None
    return tuple(float(x) for x in mean), tuple(float(x) for x in var), clip, eps


# errors of the environment's id, not of a configuration's values: said without the file's name where --env gave it
ID_ERRORS = ("--env", "unknown or unusable environment", "needs a package that is not installed")


def task_for(env_id: str | None, config: dict, base: Path | None = None, source: Path | None = None) -> tasks.Task:
    """The task of ``--env`` (or the configuration's [env] id; both must agree), with the configuration's settings.
    ``source``: the configuration's file, which an error of one of its values names."""
    try:
        return _task_for(env_id, config, base)
    except UserError as e:
        text = str(e)
        if source is None or not config or text.startswith(str(source)) or (env_id and text.startswith(ID_ERRORS)):
            raise
        raise UserError(f"{source}: {text}") from None


def _task_for(env_id: str | None, config: dict, base: Path | None) -> tasks.Task:
    env = config.get("env", {})
    if env_id is not None and not env_id.strip():
        raise UserError("--env is empty: give an environment id (ALE/Breakout-v5, CartPole-v1, …)")
    if env_id and env.get("id") and env["id"] != env_id:
        raise UserError(f"--env {env_id} and the run configuration's [env] id {env['id']} differ")
    steps = env.get("max_episode_steps")
    if steps is not None and (not isinstance(steps, int) or steps < 1):
        raise UserError(f"max_episode_steps must be a positive whole number, not {steps!r}")
    kwargs = env.get("kwargs", {})
    if not isinstance(kwargs, dict):
        raise UserError("[env] kwargs must be a table of keyword arguments")
    norm = env.get("normalize_observations")
    task = tasks.for_env(
        env_id or env.get("id"), kwargs, steps, _wrappers(env), normalization(norm, base) if norm else None
    )
    policy = config.get("policy", {})
    epsilon = policy.get("epsilon")
    if epsilon is not None and not (isinstance(epsilon, (int, float)) and 0 <= epsilon <= 1):
        raise UserError(f"[policy] epsilon must be a number from 0 to 1, not {epsilon!r}")
    if "outputs" in policy or epsilon is not None:
        task = task.with_outputs(policy.get("outputs", task.outputs), epsilon)
    return task
