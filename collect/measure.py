"""The measurement loops, each over one prepared runner; no I/O, no statistics."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from rtreport import action_difference
from rtreport.stats import MARGIN_BINS, margin_bin

from .agent.protocol import EVAL_EPSILON, EpisodeInPlay, play_episode
from .decisions import Discrete
from .finite import NonFiniteOutputs, check_decision

BATCH_SIZES = (1, 8, 32, 128, 512)  # the batch sweep
MAX_BATCH = max(BATCH_SIZES)  # runtimes that fix shapes ahead (TensorRT profiles) cover 1..MAX_BATCH


def decision_latency(runner, states: np.ndarray, warmup: int, samples: int, tick=None) -> list[float]:
    """Seconds per closed-loop decision at batch 1: uint8 state on the host in, action index on the host out.

    States cycle through ``states`` (one contiguous (1, 4, 84, 84) view each, made before timing).
    """
    views = [states[i : i + 1] for i in range(len(states))]
    for i in range(warmup):
        int(runner.infer(views[i % len(views)])[0].argmax())
    clock = time.perf_counter
    seconds = []
    for i in range(samples):
        x = views[i % len(views)]
        start = clock()
        int(runner.infer(x)[0].argmax())
        seconds.append(clock() - start)
        if tick and i % 100 == 99:
            tick(100)
    return seconds


def batch_latency(
    runner, states: np.ndarray, batch_size: int, iterations: int, budget_seconds: float, warmup: int = 3
) -> list[float]:
    """Seconds per call at ``batch_size`` (throughput = batch_size / seconds); stops early past the budget."""
    batch = np.ascontiguousarray(states[np.arange(batch_size) % len(states)])
    for _ in range(warmup):
        runner.infer(batch)
    clock = time.perf_counter
    seconds, spent = [], 0.0
    while len(seconds) < iterations and (spent < budget_seconds or len(seconds) < 3):
        start = clock()
        runner.infer(batch)
        seconds.append(clock() - start)
        spent += seconds[-1]
    return seconds


def state_q_values(runner, states: np.ndarray) -> np.ndarray:
    """Q-values of each state, one state per call (batch 1, as the game loop asks)."""
    return np.stack([runner.infer(states[i : i + 1])[0] for i in range(len(states))]).astype(np.float32)


def play(runner, seed: int, max_steps: int | None, env=None):
    """One episode of the evaluation protocol with ``runner`` deciding; returns (Episode, seconds)."""
    start = time.perf_counter()
    episode = play_episode(lambda obs: runner.infer(obs[None])[0], seed, env=env, max_steps=max_steps)
    return episode, time.perf_counter() - start


@dataclass
class Shadow:
    """What one runtime did when shown every observation of another runtime's (the driver's) episode."""

    decisions: int = 0
    same: int = 0
    first_flip: int | None = None
    flips: list = field(default_factory=list)  # (step, driver action, action, driver margin, own margin)
    complete: bool = True  # False: stopped looking at the first flip
    error: str | None = None  # the runtime failed while shadowing
    differences: list | None = None  # continuous actions: decisions per difference bin (rtreport.action_difference)


def _top_two_margin(q) -> float:
    top = np.partition(q, -2)[-2:]
    return float(top[1] - top[0])


class ShadowedGame:
    """One episode played by the runtime ``driver`` while every runtime in ``shadows`` is shown the same
    observation at every step (batch 1, the deployed decision path) and its greedy action is compared with the
    driver's greedy action (before the ε draw). Advanced one decision at a time: ``wanted()`` names the runtimes
    whose Q-values the current observation needs, ``advance({runtime id: Q-values or the exception it raised})``
    makes the decision. ``until_first_flip``: a shadow stops at its first different action (enough to know
    whether it would have played this very episode)."""

    def __init__(
        self,
        env,
        driver: str,
        shadows,
        seed: int,
        max_steps: int | None,
        until_first_flip: bool = False,
        decisions=None,
    ):
        """``decisions``: how the task decides and compares (``collect.decisions``; default: Breakout's)."""
        self.started = time.perf_counter()
        self.decisions = decisions or Discrete(env.action_space.n, EVAL_EPSILON)
        self.game = EpisodeInPlay(env, seed, max_steps=max_steps, policy=self.decisions.policy(seed))
        self.driver, self.until_first_flip = driver, until_first_flip
        self.tallies = {rid: Shadow(complete=not until_first_flip) for rid in shadows}
        if self.decisions.continuous:
            for t in self.tallies.values():
                t.differences = [0] * len(action_difference.BIN_EDGES)
        self.margin_counts = np.zeros(len(MARGIN_BINS) - 1, dtype=np.int64)

    @property
    def done(self) -> bool:
        return self.game.done

    @property
    def observation(self) -> np.ndarray:
        return self.game.observation

    @property
    def step(self) -> int:
        """The number of the decision the current observation asks for (0 first)."""
        return len(self.game.actions)

    def wanted(self) -> list:
        return [
            self.driver,
            *(
                rid
                for rid, t in self.tallies.items()
                if not t.error and not (self.until_first_flip and t.first_flip is not None)
            ),
        ]

    def advance(self, q: dict) -> None:
        """``q[driver]`` must be Q-values (a driver that failed ends the episode with its caller). Outputs that are
        not finite fail their runtime (``collect.finite``): the driver's raise here, a shadow's are its error."""
        step = len(self.game.actions)
        check_decision(q[self.driver], self.game.seed, step)
        for rid, own in q.items():
            if rid != self.driver and not isinstance(own, BaseException):
                try:
                    check_decision(own, self.game.seed, step)
                except NonFiniteOutputs as e:
                    q[rid] = e
        if self.decisions.continuous:
            return self._advance_continuous(q)
        step = len(self.game.actions)
        driver_q = q[self.driver]
        action, margin = int(np.argmax(driver_q)), _top_two_margin(driver_q)
        self.margin_counts[margin_bin(margin)] += 1
        for rid, t in self.tallies.items():
            if rid not in q:
                continue
            own = q[rid]
            if isinstance(own, BaseException):  # this shadow failed; the episode goes on
                t.error = str(own) if isinstance(own, NonFiniteOutputs) else f"{type(own).__name__}: {own}"
                continue
            t.decisions += 1
            mine = int(np.argmax(own))
            if mine == action:
                t.same += 1
            else:
                t.first_flip = step if t.first_flip is None else t.first_flip
                t.flips.append((step, action, mine, margin, _top_two_margin(own)))
        self.game.step(driver_q)

    def _advance_continuous(self, q: dict) -> None:
        """A continuous action agrees within the task's tolerance; a shadow plays the driver's very game only while
        its actions are equal, so its first unequal action is its "first flip" (the reuse rule's test)."""
        step = len(self.game.actions)
        action = self.decisions.greedy(q[self.driver])
        for rid, t in self.tallies.items():
            if rid not in q:
                continue
            own = q[rid]
            if isinstance(own, BaseException):
                t.error = str(own) if isinstance(own, NonFiniteOutputs) else f"{type(own).__name__}: {own}"
                continue
            t.decisions += 1
            d = self.decisions.difference(action, self.decisions.greedy(own))
            t.same += d <= self.decisions.tolerance
            t.differences[action_difference.bin_of(d)] += 1
            if d > 0 and t.first_flip is None:
                t.first_flip = step
        self.game.step(q[self.driver])

    def result(self):
        """(Episode, seconds, {runtime id: Shadow}, decisions per margin bin)."""
        return (self.game.result(), time.perf_counter() - self.started, self.tallies, self.margin_counts.tolist())
