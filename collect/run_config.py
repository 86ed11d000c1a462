"""The run configuration file (``rtreport collect --config FILE``, TOML): what the task is when a flag is not
enough — the environment's keyword arguments and time limit, and how the policy's outputs make a decision.

```toml
[env]
id = "CartPole-v1"            # or give --env
max_episode_steps = 500       # the environment's own limit when left out
kwargs = { sutton_barto_reward = false }

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

KNOWN = {"env": {"id", "max_episode_steps", "kwargs"}, "policy": {"outputs", "epsilon"}}


def read(path: Path | None) -> dict:
    if path is None:
        return {}
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise UserError(f"run configuration not found: {path}") from None
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


def task_for(env_id: str | None, config: dict) -> tasks.Task:
    """The task of ``--env`` (or the configuration's [env] id; both must agree), with the configuration's settings."""
    env = config.get("env", {})
    if env_id and env.get("id") and env["id"] != env_id:
        raise UserError(f"--env {env_id} and the run configuration's [env] id {env['id']} differ")
    steps = env.get("max_episode_steps")
    if steps is not None and (not isinstance(steps, int) or steps < 1):
        raise UserError(f"max_episode_steps must be a positive whole number, not {steps!r}")
    kwargs = env.get("kwargs", {})
    if not isinstance(kwargs, dict):
        raise UserError("[env] kwargs must be a table of keyword arguments")
    task = tasks.for_env(env_id or env.get("id"), kwargs, steps)
    policy = config.get("policy", {})
    epsilon = policy.get("epsilon")
    if epsilon is not None and not (isinstance(epsilon, (int, float)) and 0 <= epsilon <= 1):
        raise UserError(f"[policy] epsilon must be a number from 0 to 1, not {epsilon!r}")
    if "outputs" in policy or epsilon is not None:
        task = task.with_outputs(policy.get("outputs", task.outputs), epsilon)
    return task
