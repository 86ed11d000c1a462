"""The game protocol: one definition of Breakout for training, fixed states and play.

Everything that decides what the agent sees and how an episode unfolds lives here, so that
training (ale-py's C++ ``AtariVectorEnv``), the fixed-state harvest and evaluation
(gymnasium's single ``AtariEnv`` + wrappers) cannot drift apart. ``tests/test_protocol.py``
proves the two pipelines give pixel-identical observations on a fixed seed and action sequence.

Protocol (ALE v5 conventions, Machado et al. 2018):
  * frameskip 4, sticky actions with probability 0.25, the minimal 4-action set
    (NOOP, FIRE, RIGHT, LEFT);
  * observation: 84x84 grayscale, max over the last two of the four skipped frames,
    resized with OpenCV INTER_AREA; a stack of the last 4 such frames, zero-padded at reset;
  * no no-op starts, no FIRE on reset (the agent must learn to serve);
  * an episode is the whole game (all lives) and is truncated at 108,000 frames;
  * score is the raw, unclipped game score.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

GAME = "breakout"
GYM_ID = "ALE/Breakout-v5"
FRAMESKIP = 4
STICKY_ACTION_PROBABILITY = 0.25
FRAME_STACK = 4
SCREEN_SIZE = 84
MAX_EPISODE_FRAMES = 108_000
NUM_ACTIONS = 4
ACTION_MEANINGS = ("NOOP", "FIRE", "RIGHT", "LEFT")
OBSERVATION_SHAPE = (FRAME_STACK, SCREEN_SIZE, SCREEN_SIZE)

# The evaluation policy's exploration: greedy on Q-values, except with probability EPSILON a
# uniformly random action. Without it a greedy agent that never presses FIRE after losing a
# life would wait until the 108,000-frame cap.
EVAL_EPSILON = 0.01


def protocol_settings() -> dict:
    """Every protocol setting, as stored with each run and model card."""
    return {
        "game": GAME,
        "gym_id": GYM_ID,
        "frameskip": FRAMESKIP,
        "sticky_action_probability": STICKY_ACTION_PROBABILITY,
        "frame_stack": FRAME_STACK,
        "screen_size": SCREEN_SIZE,
        "max_pool_last_two_frames": True,
        "frame_stack_padding": "zero",
        "noop_max": 0,
        "fire_on_reset": False,
        "terminal_on_life_loss": False,
        "max_episode_frames": MAX_EPISODE_FRAMES,
        "reward": "raw (unclipped) game score",
        "num_actions": NUM_ACTIONS,
        "action_meanings": list(ACTION_MEANINGS),
        "eval_epsilon": EVAL_EPSILON,
        "eval_policy": "epsilon-greedy; per-episode numpy PCG64 generator seeded with the episode seed; "
        "one uniform draw and one action draw at every step",
    }


def ale_seed(episode_seed: int) -> int:
    """The seed gymnasium's AtariEnv hands to the emulator for ``reset(seed=episode_seed)``.

    ``AtariEnv.seed_game`` derives it through a SeedSequence and stores it as a signed 32-bit
    integer. ale-py's vector env takes the emulator seed directly, so training envs are seeded
    with this value to be on the same footing as evaluation.
    """
    _, seed = np.random.SeedSequence(episode_seed).generate_state(n_words=2)
    return int(np.array(seed, dtype=np.uint32).view(np.int32))


def quiet_emulator() -> None:
    """No ALE/Stella banner on stderr: the emulator logs errors only."""
    import ale_py

    ale_py.ALEInterface.setLoggerMode(ale_py.LoggerMode.Error)


def make_eval_env(max_episode_frames: int = MAX_EPISODE_FRAMES):
    """The single-game environment of the protocol (gymnasium + ale-py): the fixed states' harvest uses it, and play
    uses ``direct_env.DirectEvalEnv``, the same ALE calls without gymnasium's layers. ``max_episode_frames`` other
    than the protocol's only in tests."""
    import ale_py
    import gymnasium as gym
    from gymnasium.wrappers import AtariPreprocessing, FrameStackObservation

    quiet_emulator()
    gym.register_envs(ale_py)
    env = gym.make(
        GYM_ID,
        frameskip=1,  # AtariPreprocessing skips, so that it can max-pool the last two frames
        repeat_action_probability=STICKY_ACTION_PROBABILITY,
        full_action_space=False,
        max_num_frames_per_episode=max_episode_frames,
    )
    env = AtariPreprocessing(
        env,
        noop_max=0,
        frame_skip=FRAMESKIP,
        screen_size=SCREEN_SIZE,
        terminal_on_life_loss=False,
        grayscale_obs=True,
        scale_obs=False,
    )
    return FrameStackObservation(env, FRAME_STACK, padding_type="zero")


def make_train_vector_env(num_envs: int, num_threads: int = 0):
    """ale-py's C++ vector env, with every default that differs from evaluation overridden.

    Its defaults are sticky 0.0, reward clipping on, FIRE on reset, noop_max 30 and an
    ``episodic_life`` that restarts the whole game on a life loss; all are set here to the
    evaluation protocol. Life losses are read from ``info["lives"]`` by the trainer instead.
    Autoreset is same-step: a finished game's slot already holds the next game's first frame.
    """
    from ale_py.vector_env import AtariVectorEnv

    quiet_emulator()
    return AtariVectorEnv(
        GAME,
        num_envs,
        num_threads=num_threads,
        max_num_frames_per_episode=MAX_EPISODE_FRAMES,
        repeat_action_probability=STICKY_ACTION_PROBABILITY,
        full_action_space=False,
        autoreset_mode="SameStep",
        img_height=SCREEN_SIZE,
        img_width=SCREEN_SIZE,
        grayscale=True,
        stack_num=FRAME_STACK,
        frameskip=FRAMESKIP,
        maxpool=True,
        noop_max=0,
        episodic_life=False,
        life_loss_info=False,
        reward_clipping=False,
        use_fire_reset=False,
    )


def vector_env_seeds(episode_seeds) -> np.ndarray:
    """Emulator seeds for the vector env equal to gymnasium's for the same episode seeds.

    The vector env takes only non-negative emulator seeds (a negative one makes it seed from the OS), so an
    episode seed whose derived seed is negative is refused here rather than folded into another game; training
    draws its episode seeds with ``training_episode_seeds``, which skips them.
    """
    seeds = [ale_seed(s) for s in episode_seeds]
    refused = [s for s, v in zip(episode_seeds, seeds) if v < 0]
    if refused:
        raise ValueError(
            f"episode seed(s) {refused[:5]} derive a negative emulator seed, which the vector env "
            "cannot take; use training_episode_seeds"
        )
    return np.array(seeds, dtype=np.int64)


def training_episode_seeds(first: int, n: int) -> list[int]:
    """The first ``n`` episode seeds from ``first`` on whose derived emulator seed the vector env takes, so every
    training game starts exactly as evaluation would start a game on that seed."""
    out, s = [], first
    while len(out) < n:
        if ale_seed(s) >= 0:
            out.append(s)
        s += 1
    return out


def greedy_action(q_values: np.ndarray) -> int:
    """Index of the largest Q-value; ties go to the lowest index (numpy's argmax)."""
    return int(np.argmax(q_values))


class EpisodePolicy:
    """The evaluation policy for one episode: epsilon-greedy with seed-determined draws.

    Both random draws are made at every step whatever the Q-values are, so two runtimes on the
    same seed meet the same random events and differ only where their greedy actions differ.
    """

    def __init__(self, episode_seed: int, epsilon: float = EVAL_EPSILON, num_actions: int = NUM_ACTIONS):
        self.rng = np.random.default_rng(episode_seed)
        self.epsilon = epsilon
        self.num_actions = num_actions

    def act(self, q_values: np.ndarray) -> int:
        explore = self.rng.random() < self.epsilon
        random_action = int(self.rng.integers(self.num_actions))
        return random_action if explore else greedy_action(q_values)


@dataclass
class Episode:
    seed: int
    score: float
    steps: int
    truncated: bool
    actions: list[int] = field(repr=False)


QFunction = Callable[[np.ndarray], np.ndarray]
"""Maps one uint8 observation stack (4, 84, 84) to its Q-values (num_actions,)."""


class EpisodeInPlay:
    """One game on ``seed``, advanced one decision at a time by whoever holds it: ``observation`` is what the
    agent sees now, ``step(q_values)`` makes the decision (the episode's ε-greedy draws) and advances the game,
    ``done`` says when the game is over, and ``result()`` is the finished ``Episode``. ``play_episode`` is the
    plain loop over it; the concurrent play engine (``collect.engine``) holds many at once."""

    def __init__(self, env, seed: int, epsilon: float = EVAL_EPSILON, max_steps: int | None = None, policy=None):
        """``policy``: the episode's decision from the outputs (``collect.decisions``); default: ε-greedy."""
        self.env, self.seed, self.max_steps = env, seed, max_steps
        self.observation, _ = env.reset(seed=seed)
        self.policy = policy or EpisodePolicy(seed, epsilon, env.action_space.n)
        self.score, self.actions = 0.0, []
        self.done, self.truncated = False, False

    def step(self, q_values: np.ndarray):
        assert not self.done, "the game is over"
        action = self.policy.act(q_values)
        self.actions.append(action)
        self.observation, reward, terminated, truncated, _ = self.env.step(action)
        self.score += float(reward)
        cut = self.max_steps is not None and len(self.actions) >= self.max_steps
        if terminated or truncated or cut:
            self.done, self.truncated = True, bool((truncated or cut) and not terminated)
        return action

    def result(self) -> Episode:
        assert self.done, "the game is not over"
        # a continuous action trace is not kept (the file's action traces are of action indices)
        discrete = not self.actions or isinstance(self.actions[0], int)
        return Episode(self.seed, self.score, len(self.actions), self.truncated, self.actions if discrete else None)


def play_episode(
    q_function: QFunction,
    seed: int,
    epsilon: float = EVAL_EPSILON,
    env=None,
    on_step: Callable[[np.ndarray, int], None] | None = None,
    max_steps: int | None = None,
) -> Episode:
    """Play one whole game on ``seed`` and return its raw score and action trace.

    ``on_step(observation, step)`` is called before each decision (used to harvest states).
    ``max_steps`` cuts the game short (smoke runs only); such an episode counts as truncated.
    """
    own_env = env is None
    env = env if env is not None else make_eval_env()
    try:
        game = EpisodeInPlay(env, seed, epsilon, max_steps)
        while not game.done:
            if on_step is not None:
                on_step(game.observation, len(game.actions))
            game.step(q_function(game.observation))
        return game.result()
    finally:
        if own_env:
            env.close()
