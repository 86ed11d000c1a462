"""Stable-Baselines3's Atari evaluation: the environment an agent trained through ``make_atari_env`` +
``VecFrameStack(n_stack=4)`` is evaluated on, for ``<Game>NoFrameskip-v4`` and ``ALE/<Game>-v5`` ids.

The chain is SB3's own: ``gymnasium.make(id)`` with the id's defaults (v4: no sticky actions; v5: sticky 0.25),
then ``stable_baselines3.common.atari_wrappers.AtariWrapper`` as SB3 and the RL Zoo evaluate (NoopResetEnv with up
to 30 no-ops, MaxAndSkipEnv skip 4 max-pooling the last two frames, FireResetEnv where the game has FIRE, WarpFrame
84x84 grey; no life loss as the end of an episode, no reward clipping). The stack is ``VecFrameStack``'s (zeros
at reset, the newest frame last) moved channels first as ``VecTransposeImage`` hands it to a CnnPolicy: uint8
``(4, 84, 84)``, the oldest frame at index 0.
"""

from __future__ import annotations

import numpy as np

from .protocol import quiet_emulator

NOOP_MAX = 30
FRAME_SKIP = 4
FRAME_STACK = 4
SCREEN_SIZE = 84


def default_sticky(env_id: str) -> float:
    """The id's own repeat_action_probability: v5 ids 0.25, v4 ids 0."""
    return 0.25 if env_id.endswith("-v5") else 0.0


def settings(env_id: str, has_fire: bool) -> dict:
    """The ``atari`` key of a run's protocol for this preprocessing."""
    return {
        "preprocessing": "stable-baselines3",
        "wrappers": ["AtariWrapper"] + (["FireResetEnv"] if has_fire else []),
        "sticky_action_probability": default_sticky(env_id),
        "noop_max": NOOP_MAX,
        "fire_on_reset": has_fire,
        "frame_skip": FRAME_SKIP,
        "max_pool_last_two_frames": True,
        "terminal_on_life_loss": False,
        "clip_reward": False,
        "epsilon": 0.0,
        "frame_stack": FRAME_STACK,
        "frame_stack_order": "VecFrameStack (last axis, newest last) then VecTransposeImage: (4, 84, 84), oldest first",
    }


def protocol_keys(env_id: str, has_fire: bool) -> dict:
    """What this preprocessing changes in an Atari run's protocol: its ``atari`` key and the settings it overrides."""
    sb3 = settings(env_id, has_fire)
    return {
        "family": "atari",
        "atari": sb3,
        "sticky_action_probability": sb3["sticky_action_probability"],
        "noop_max": sb3["noop_max"],
        "fire_on_reset": sb3["fire_on_reset"],
        "eval_policy": "greedy (deterministic); no exploration",
    }


def game_name(env_id: str) -> str:
    """ "ALE/Pong-v5" and "PongNoFrameskip-v4" -> "Pong"."""
    name = env_id.split("/", 1)[-1].rsplit("-v", 1)[0]
    return name[: -len("NoFrameskip")] if name.endswith("NoFrameskip") else name


def is_atari_id(env_id: str | None) -> bool:
    """ALE/<Game>-v5 or <Game>NoFrameskip-v4 (SB3's)."""
    return env_id is None or env_id.startswith("ALE/") or env_id.endswith("NoFrameskip-v4")


class _Actions:
    def __init__(self, n: int):
        self.n = n


class Sb3AtariEnv:
    """``reset(seed=)``, ``step(action)``, ``action_space.n``, ``close()`` over SB3's Atari chain."""

    def __init__(self, env_id: str):
        import ale_py
        import gymnasium as gym
        from stable_baselines3.common.atari_wrappers import AtariWrapper

        quiet_emulator()
        gym.register_envs(ale_py)
        self.env = AtariWrapper(
            gym.make(env_id),
            noop_max=NOOP_MAX,
            frame_skip=FRAME_SKIP,
            screen_size=SCREEN_SIZE,
            terminal_on_life_loss=False,
            clip_reward=False,
        )
        self.action_space = _Actions(int(self.env.action_space.n))
        self._stack = np.zeros((FRAME_STACK, SCREEN_SIZE, SCREEN_SIZE), dtype=np.uint8)

    def _push(self, frame) -> np.ndarray:
        self._stack[:-1] = self._stack[1:]
        self._stack[-1] = frame[..., 0]
        return self._stack.copy()

    def reset(self, *, seed: int | None = None, options=None):
        obs, info = self.env.reset(seed=seed)
        self._stack[:] = 0
        return self._push(obs), info

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(int(action))
        return self._push(obs), float(reward), terminated, truncated, info

    def close(self) -> None:
        self.env.close()
