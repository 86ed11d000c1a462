"""A Gymnasium task's environment as rtreport plays it (``tasks.Task.make_env``): ``gymnasium.make`` with the
task's kwargs and time limit, the wrappers the run configuration names, and the observation as the model takes it
(float32, normalised with the training's frozen statistics where the run names them, then stacked as
``VecFrameStack`` stacks where the training did)."""

from __future__ import annotations

import json

import numpy as np

from rtreport.errors import UserError


def make(env_id: str, env_kwargs: dict, max_episode_steps: int | None, wrappers=()):
    import gymnasium as gym

    try:
        env = gym.make(env_id, max_episode_steps=max_episode_steps, **env_kwargs)
    except gym.error.Error as e:
        first = (str(e).strip().splitlines() or [""])[0][:300]
        own = ""
        if isinstance(e, gym.error.NameNotFound) and ":" not in env_id and "Did you mean" not in first:
            own = f" (an environment your own package registers: --env your_module:{env_id})"
        raise UserError(f"unknown or unusable environment {env_id!r}: {first}{own}") from None
    except (ImportError, ModuleNotFoundError) as e:
        raise UserError(f"{env_id} needs a package that is not installed: {e}") from None
    except TypeError as e:
        raise UserError(f"{env_id} does not take the given env_kwargs: {e}") from None
    for name, kwargs in wrappers:
        wrapper = getattr(gym.wrappers, name, None)
        if not isinstance(wrapper, type) or not issubclass(wrapper, gym.Wrapper):
            raise UserError(f"unknown wrapper {name!r}: give a class of gymnasium.wrappers (e.g. FlattenObservation)")
        try:
            env = wrapper(env, **json.loads(kwargs))
        except Exception as e:
            raise UserError(f"the wrapper {name} cannot wrap {env_id}: {type(e).__name__}: {e}") from None
    return env


def frame_stacked(task, n: int):
    """``task`` seen through SB3's ``VecFrameStack(n)`` of a 1-D observation: the last ``n`` observations (after the
    normalisation), oldest first, zeros before the episode's first (``GymTaskEnv``)."""
    from dataclasses import replace

    if n == 1 or not n:
        return task
    if not isinstance(n, int) or n < 1:
        raise UserError(f"frame_stack must be a positive whole number, not {n!r}")
    if task.family != "gymnasium" or len(task.observation.shape) != 1:
        raise UserError(
            f"frame_stack {n} (VecFrameStack) of {task.name}'s observations {task.observation.describe()} cannot "
            "be reproduced exactly by rtreport (it stacks 1-D observations); the agent is not measured without it"
        )
    stacked = type(task.observation)((task.observation.shape[0] * n,), task.observation.dtype)  # a tasks.Observation
    return replace(task, frame_stack=n, observation=stacked)


class _Actions:
    def __init__(self, n: int):
        self.n = n


class GymTaskEnv:
    """A Gymnasium task as play uses it: float32 observations (contiguous, the model's dtype), the environment's
    own reward and time limit; ``reset(seed=)`` seeds the environment for that episode alone."""

    def __init__(self, task):  # a tasks.Task
        self.task = task
        self.env = make(task.env_id, dict(task.env_kwargs), task.max_episode_steps, task.wrappers)
        self._norm = None
        self._shape = tuple(int(d) for d in self.env.observation_space.shape)  # one observation, before a stack
        self._stack = np.zeros(task.observation.shape, np.float32) if task.frame_stack else None
        if task.normalization is not None:
            mean, var, clip, eps = task.normalization
            shape = self._shape
            self._norm = (np.asarray(mean).reshape(shape), np.sqrt(np.asarray(var).reshape(shape) + eps), clip)
        self.action_space = _Actions(task.num_actions)
        self._action = (lambda a: np.asarray(a, np.float32)) if task.continuous else int

    def _obs(self, observation) -> np.ndarray:
        x = np.asarray(observation, dtype=np.float64).reshape(self._shape)
        if self._norm is not None:  # as VecNormalize.normalize_obs does
            mean, scale, clip = self._norm
            x = np.clip((x - mean) / scale, -clip, clip)
        x = np.ascontiguousarray(x, dtype=np.float32)
        if self._stack is None:
            return x
        # as VecFrameStack on a 1-D observation: shift the oldest out, the newest at the end
        n = x.shape[0]
        self._stack[:-n] = self._stack[n:].copy()
        self._stack[-n:] = x
        return self._stack.copy()

    def reset(self, *, seed: int | None = None, options=None):
        observation, info = self.env.reset(seed=seed)
        if self._stack is not None:
            self._stack[:] = 0.0
        return self._obs(observation), info

    def step(self, action: int):
        observation, reward, terminated, truncated, info = self.env.step(self._action(action))
        return self._obs(observation), float(reward), bool(terminated), bool(truncated), info

    def close(self) -> None:
        self.env.close()
