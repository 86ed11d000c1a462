"""The task an agent is judged on: the environment, what the model sees, what it outputs, and how a decision is
made from those outputs. A run stores its task as the run's ``protocol`` (``Task.protocol``), and every part of
collect that plays, checks or measures reads it from the run's model (``ModelSource.task``), so a repeat, a
resumed run and every play process play the task the run began with.

Two families:

* ``atari``: every ALE game (``ALE/<Game>-v5``) under the one Atari protocol of ``agent.protocol`` (Machado et
  al. 2018: frameskip 4, sticky actions 0.25, the game's minimal action set, 84x84 grayscale, a stack of 4,
  the whole game, raw score, ε = 0.01 at evaluation). Breakout, the default, is this family's first game; its
  protocol settings are exactly those stored by every earlier run.
* ``gymnasium``: any registered Gymnasium environment with a flat ``Box`` observation and a ``Discrete`` or 1-D
  ``Box`` action space (classic control, Box2D, MuJoCo tasks through the ``mujoco`` package), made with
  ``gymnasium.make`` and its own time limit; the observation is handed to the model as float32.

A discrete decision is greedy on the model's outputs: Q-values (ε-greedy with the task's evaluation ε, whose two
random draws are made at every step from a generator seeded by the episode's seed, so two runtimes on one seed meet
the same random events) or action logits (the same draws with ε = 0: greedy). A continuous decision is the model's
action clipped to the bounds (``decisions.Continuous``), compared within the gates file's tolerance.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import replace

import numpy as np

from rtreport.errors import UserError

from .agent import protocol as atari
from .agent.sb3_atari import is_atari_id
from .gym_env import make
from .task import BREAKOUT, BREAKOUT_OBSERVATION, Observation, Task, atari_game


def from_protocol(protocol: dict | str | None) -> Task:
    """The task a stored run played (its ``protocol``, as stored or parsed; files from before tasks: Breakout)."""
    p = json.loads(protocol) if isinstance(protocol, str) else protocol or {}
    family = p.get("family", "atari")
    if family == "atari":
        env_id = p.get("gym_id", atari.GYM_ID)
        task = BREAKOUT if env_id == atari.GYM_ID else atari_task(env_id)
        if (p.get("atari") or {}).get("preprocessing") == "stable-baselines3":
            task = task.sb3_preprocessing()
        return task.with_outputs(p.get("outputs", "q-values"), p.get("eval_epsilon", atari.EVAL_EPSILON))
    n = p.get("observation_normalization")
    task = gymnasium_task(
        p["gym_id"],
        dict(p.get("env_kwargs") or {}),
        p.get("max_episode_steps"),
        p.get("action_tolerance"),
        [(w["name"], w.get("kwargs") or {}) for w in p.get("wrappers") or []],
        (tuple(n["mean"]), tuple(n["var"]), n["clip"], n["epsilon"]) if n else None,
    )
    if p.get("preprocessing"):
        task = replace(task, preprocessing=json.dumps(p["preprocessing"], sort_keys=True))
    if p.get("frame_stack"):
        from .gym_env import frame_stacked

        task = frame_stacked(task, p["frame_stack"])
    return task.with_outputs(p.get("outputs", "q-values"), p.get("eval_epsilon", 0.0))


def for_env(
    env_id: str | None,
    env_kwargs: dict | None = None,
    max_episode_steps: int | None = None,
    wrappers=(),
    normalization=None,
) -> Task:
    """The task for ``--env``: Breakout when none is given, an ALE game for ``ALE/...``, else Gymnasium's."""
    atari_env = is_atari_id(env_id)
    if atari_env and (env_kwargs or max_episode_steps or wrappers or normalization):
        raise UserError(
            "the Atari protocol fixes its settings: env_kwargs, max_episode_steps, wrappers and "
            "normalize_observations are not taken"
        )
    if env_id is not None and not env_id.strip():
        raise UserError("--env is empty: give an environment id (ALE/Breakout-v5, CartPole-v1, …)")
    if env_id is None or env_id == atari.GYM_ID:
        return BREAKOUT
    if atari_env:
        return atari_task(env_id)
    return gymnasium_task(env_id, env_kwargs or {}, max_episode_steps, None, wrappers, normalization)


def atari_task(env_id: str) -> Task:
    import ale_py
    from ale_py import roms

    v4 = env_id.endswith("NoFrameskip-v4")
    if not (env_id.startswith("ALE/") and env_id.endswith("-v5")) and not v4:
        raise UserError(f"{env_id}: give ALE/<Game>-v5 or <Game>NoFrameskip-v4")
    game = atari_game(env_id)
    try:
        with warnings.catch_warnings():  # ale-py warns of an unknown ROM before saying so: one line here instead
            warnings.simplefilter("ignore")
            rom = roms.get_rom_path(game)
    except Exception:
        rom = None
    if not rom:
        raise UserError(f"{env_id}: ale-py {ale_py.__version__} has no ROM named {game!r}")
    atari.quiet_emulator()
    ale = ale_py.ALEInterface()
    ale.setLoggerMode(ale_py.LoggerMode.Error)
    ale.loadROM(rom)
    actions = list(ale.getMinimalActionSet())
    meanings = tuple(str(a).split(".")[-1] for a in actions)
    task = Task(env_id, "atari", BREAKOUT_OBSERVATION, len(actions), meanings)
    return task.sb3_preprocessing() if v4 else task


def gymnasium_task(
    env_id: str,
    env_kwargs: dict,
    max_episode_steps: int | None = None,
    tolerance: float | None = None,
    wrappers=(),
    normalization=None,
) -> Task:
    """``tolerance``: a stored run's (continuous actions); a new run takes the gates file's. ``wrappers``:
    [(gymnasium.wrappers name, kwargs)]; ``normalization``: (mean, var, clip, epsilon) of the observations."""
    import gymnasium as gym

    wrappers = tuple((str(n), json.dumps(k, sort_keys=True)) for n, k in wrappers)
    env = make(env_id, env_kwargs, max_episode_steps, wrappers)
    try:
        obs, act = env.observation_space, env.action_space
        if not isinstance(obs, gym.spaces.Box):
            raise UserError(f"{env_id}: its observation space is {obs}; rtreport takes a Box observation")
        if normalization is not None and len(normalization[0]) != int(np.prod(obs.shape)):
            raise UserError(
                f"the observation normalisation has {len(normalization[0])} means, but {env_id}'s observations "
                f"have shape {obs.shape}"
            )
        if isinstance(act, gym.spaces.Box):
            task = _continuous(env, env_id, env_kwargs, max_episode_steps, tolerance)
            return replace(task, wrappers=wrappers, normalization=normalization)
        if not isinstance(act, gym.spaces.Discrete):
            raise UserError(f"{env_id}: its action space is {act}; rtreport takes a Discrete action space")
        if int(act.start) != 0:
            raise UserError(f"{env_id}: its actions start at {act.start}; rtreport takes Discrete(n) from 0")
        limit = max_episode_steps or (env.spec.max_episode_steps if env.spec else None)
        if not limit:
            raise UserError(
                f"{env_id} has no time limit of its own: give max_episode_steps in the run configuration, so that "
                f"every episode ends"
            )
        n = int(act.n)
        meanings = _meanings(env, n)
        details = {"gymnasium_version": gym.__version__, "observation_space": str(obs), "action_space": str(act)}
        return Task(
            env_id,
            "gymnasium",
            Observation(tuple(int(d) for d in obs.shape), "float32"),
            n,
            meanings,
            outputs="q-values",
            epsilon=0.0,
            max_episode_steps=int(limit),
            env_kwargs=tuple(sorted(env_kwargs.items())),
            details=details,
            wrappers=wrappers,
            normalization=normalization,
        )
    finally:
        env.close()


def _continuous(env, env_id: str, env_kwargs: dict, max_episode_steps, tolerance) -> Task:
    import gymnasium as gym

    from rtreport.gates import Gates

    obs, act = env.observation_space, env.action_space
    low, high = np.asarray(act.low, np.float64), np.asarray(act.high, np.float64)
    if len(act.shape) != 1 or not (np.isfinite(low).all() and np.isfinite(high).all()) or not (high > low).all():
        raise UserError(f"{env_id}: its action space is {act}; rtreport takes a 1-D Box with finite bounds")
    limit = max_episode_steps or (env.spec.max_episode_steps if env.spec else None)
    if not limit:
        raise UserError(f"{env_id} has no time limit of its own: give max_episode_steps in the run configuration")
    n = int(act.shape[0])
    return Task(
        env_id,
        "gymnasium",
        Observation(tuple(int(d) for d in obs.shape), "float32"),
        n,
        tuple(f"a{i}" for i in range(n)),
        outputs="actions",
        epsilon=0.0,
        max_episode_steps=int(limit),
        env_kwargs=tuple(sorted(env_kwargs.items())),
        action_kind="continuous",
        action_low=tuple(float(x) for x in low),
        action_high=tuple(float(x) for x in high),
        action_tolerance=float(Gates.load().action_tolerance if tolerance is None else tolerance),
        details={"gymnasium_version": gym.__version__, "observation_space": str(obs), "action_space": str(act)},
    )


def _meanings(env, n: int) -> tuple:
    get = getattr(env.unwrapped, "get_action_meanings", None)
    if get is not None:
        try:
            names = list(get())
            if len(names) == n:
                return tuple(str(x) for x in names)
        except Exception:
            pass
    return tuple(str(i) for i in range(n))
