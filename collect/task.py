"""What an agent is judged on (``Task``): the environment, what the model sees (``Observation``), what it outputs,
and how a decision is made from those outputs. ``tasks`` makes one from ``--env`` or from a stored run's protocol;
this module is the value itself, which every part of collect that plays, checks or measures reads.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace

import numpy as np

from rtreport.errors import UserError

from .agent import protocol as atari
from .agent.sb3_atari import game_name as _atari_name

OUTPUTS = ("q-values", "logits", "actions")


@dataclass(frozen=True)
class Observation:
    """What the model takes for one decision: an array of ``shape`` and ``dtype`` (a batch adds a first axis)."""

    shape: tuple
    dtype: str  # a numpy dtype name: "uint8" (Atari frames) or "float32"

    def noise(self, n: int, seed: int = 0) -> np.ndarray:
        """``n`` seeded states of this shape and dtype (each of batch 1): the play engine's self-check inputs."""
        rng = np.random.default_rng(seed)
        if self.dtype == "uint8":
            return rng.integers(0, 256, (n, 1, *self.shape), dtype=np.uint8)
        return rng.standard_normal((n, 1, *self.shape)).astype(self.dtype)

    def describe(self) -> str:
        return f"{self.dtype} (N, {', '.join(map(str, self.shape))})"


BREAKOUT_OBSERVATION = Observation(atari.OBSERVATION_SHAPE, "uint8")


@dataclass(frozen=True)
class Task:
    env_id: str  # "ALE/Breakout-v5", "CartPole-v1", ...
    family: str  # "atari" | "gymnasium"
    observation: Observation
    num_actions: int
    action_meanings: tuple
    outputs: str = "q-values"  # "q-values" (ε-greedy) | "logits" (greedy)
    epsilon: float = atari.EVAL_EPSILON
    max_episode_steps: int | None = None  # gymnasium: the environment's time limit (None: its own)
    env_kwargs: tuple = ()  # ((name, value), ...) handed to gymnasium.make
    action_kind: str = "discrete"  # "discrete" | "continuous" (num_actions: the action's dimensions)
    action_low: tuple = ()  # continuous: the Box's bounds
    action_high: tuple = ()
    action_tolerance: float = 0.0  # continuous: agreement within this fraction of each dimension's range
    wrappers: tuple = ()  # ((gymnasium.wrappers name, JSON of its kwargs), ...) applied in order after make
    # the training's observation normalisation (VecNormalize's statistics): ((mean...), (var...), clip, epsilon)
    normalization: tuple | None = None
    preprocessing: str = ""  # JSON: what the training's preprocessing was, found where (run_config)
    frame_stack: int = 0  # VecFrameStack's n (gym_env.frame_stacked)
    # atari: "rtreport" (agent.protocol) or "sb3" (agent.sb3_atari)
    atari_preprocessing: str = "rtreport"
    details: dict = field(default_factory=dict, compare=False, hash=False)  # versions and the like, for the file

    @property
    def is_breakout(self) -> bool:
        return self.family == "atari" and self.env_id == atari.GYM_ID

    @property
    def game(self) -> str | None:
        return atari_game(self.env_id) if self.family == "atari" else None

    @property
    def name(self) -> str:
        """The environment's name as the report shows it ("Breakout", "CartPole-v1")."""
        if self.family == "atari":
            return _atari_name(self.env_id)
        return self.env_id

    @property
    def continuous(self) -> bool:
        return self.action_kind == "continuous"

    def decisions(self):
        """How this task decides from the model's outputs and compares two runtimes' decisions."""
        from .decisions import Continuous, Discrete

        if self.continuous:
            return Continuous(self.action_low, self.action_high, self.action_tolerance)
        return Discrete(self.num_actions, self.epsilon)

    def with_outputs(self, outputs: str, epsilon: float | None = None) -> "Task":
        if outputs not in OUTPUTS:
            raise UserError(f"unknown model outputs {outputs!r}; one of {', '.join(OUTPUTS)}")
        if (outputs == "actions") != self.continuous:
            raise UserError(
                f"{self.name} has {self.action_kind} actions: the model's outputs must be "
                + ("its actions" if self.continuous else "Q-values or logits")
            )
        if epsilon and outputs != "q-values":
            raise UserError(
                f"an evaluation epsilon ({epsilon}) is for a policy of Q-values; this one's decisions are greedy on "
                + ("its actions" if outputs == "actions" else "its logits")
                + ": leave [policy] epsilon out"
            )
        if epsilon and self.atari_preprocessing == "sb3":
            raise UserError(
                f"{self.env_id} plays as Stable-Baselines3 evaluates it, greedy (ε 0): an evaluation epsilon of "
                f"{epsilon:g} cannot be honoured; leave [policy] epsilon out"
            )
        eps = self.epsilon if epsilon is None else float(epsilon)
        return replace(self, outputs=outputs, epsilon=0.0 if outputs == "logits" else eps)

    # -- playing ------------------------------------------------------------------------------------------
    def make_env(self):
        """The environment play uses: ``reset(seed=)``, ``step(action)``, ``action_space.n``, ``close()``."""
        if self.family == "atari" and self.atari_preprocessing == "sb3":
            from .agent.sb3_atari import Sb3AtariEnv

            return Sb3AtariEnv(self.env_id)
        if self.family == "atari":
            from .agent.direct_env import DirectEvalEnv

            return DirectEvalEnv(game=self.game)
        from .gym_env import GymTaskEnv

        return GymTaskEnv(self)

    def protocol(self) -> dict:
        """Every setting of the task, as the run's ``protocol`` column stores it."""
        if self.family == "atari":
            settings = atari.protocol_settings()
            settings.update(
                game=self.game,
                gym_id=self.env_id,
                num_actions=self.num_actions,
                action_meanings=list(self.action_meanings),
                eval_epsilon=self.epsilon,
            )
            if not self.is_breakout or self.outputs != "q-values":
                settings.update(family="atari", outputs=self.outputs)
            if self.atari_preprocessing == "sb3":
                from .agent.sb3_atari import protocol_keys

                settings.update(protocol_keys(self.env_id, "FIRE" in self.action_meanings))
            return settings
        return {
            "family": "gymnasium",
            "gym_id": self.env_id,
            "env_kwargs": dict(self.env_kwargs),
            "wrappers": [{"name": n, "kwargs": json.loads(k)} for n, k in self.wrappers],
            **(
                {
                    "observation_normalization": {
                        "mean": list(self.normalization[0]),
                        "var": list(self.normalization[1]),
                        "clip": self.normalization[2],
                        "epsilon": self.normalization[3],
                    }
                }
                if self.normalization
                else {}
            ),
            **({"preprocessing": json.loads(self.preprocessing)} if self.preprocessing else {}),
            **({"frame_stack": self.frame_stack} if self.frame_stack else {}),
            "observation_shape": list(self.observation.shape),
            "observation_dtype": self.observation.dtype,
            "num_actions": self.num_actions,
            "action_meanings": list(self.action_meanings),
            "max_episode_steps": self.max_episode_steps,
            "reward": "the environment's reward, summed over the episode",
            "outputs": self.outputs,
            "eval_epsilon": self.epsilon,
            "eval_policy": self._policy_words(),
            "action_kind": self.action_kind,
            **(
                {
                    "action_low": list(self.action_low),
                    "action_high": list(self.action_high),
                    "action_tolerance": self.action_tolerance,
                }
                if self.continuous
                else {}
            ),
            **self.details,
        }

    def sb3_preprocessing(self) -> "Task":
        """This game as SB3 evaluates it."""
        return replace(self, atari_preprocessing="sb3", epsilon=0.0)

    def _policy_words(self) -> str:
        if self.continuous:
            return "the model's action, clipped to the action space's bounds (deterministic, no exploration)"
        greedy = "epsilon-greedy on Q-values" if self.outputs == "q-values" else "greedy on the action logits"
        return (
            greedy + "; per-episode numpy PCG64 generator seeded with the episode seed; one uniform draw and one "
            "action draw at every step"
        )


def atari_game(env_id: str) -> str:
    """ "ALE/Pong-v5" -> "pong" (ale-py's ROM name)."""
    name = _atari_name(env_id)
    return "".join("_" + c.lower() if c.isupper() and i else c.lower() for i, c in enumerate(name))


BREAKOUT = Task(atari.GYM_ID, "atari", BREAKOUT_OBSERVATION, atari.NUM_ACTIONS, atari.ACTION_MEANINGS)
