"""The measurement loops, each over one prepared runner; no I/O, no statistics."""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from .agent.protocol import play_episode

BATCH_SIZES = (1, 8, 32, 128, 512)   # the batch sweep
MAX_BATCH = max(BATCH_SIZES)         # runtimes that fix shapes ahead (TensorRT profiles) cover 1..MAX_BATCH


def decision_latency(runner, states: np.ndarray, warmup: int, samples: int, tick=None) -> list[float]:
    """Seconds per closed-loop decision at batch 1: uint8 state on the host in, action index on the host out.

    States cycle through ``states`` (one contiguous (1, 4, 84, 84) view each, made before timing).
    """
    views = [states[i:i + 1] for i in range(len(states))]
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


def batch_latency(runner, states: np.ndarray, batch_size: int, iterations: int, budget_seconds: float,
                  warmup: int = 3) -> list[float]:
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
    return np.stack([runner.infer(states[i:i + 1])[0] for i in range(len(states))]).astype(np.float32)


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
    flips: list = field(default_factory=list)   # (step, driver action, action, driver margin, own margin)
    complete: bool = True                       # False: stopped looking at the first flip
    error: str | None = None                    # the runtime failed while shadowing


def _top_two_margin(q) -> float:
    top = np.partition(q, -2)[-2:]
    return float(top[1] - top[0])


def play_shadowed(driver, shadows: dict, seed: int, max_steps: int | None, env=None, until_first_flip: bool = False):
    """One episode played by ``driver`` while every runner in ``shadows`` ({runtime id: runner}) is shown the
    same observation at every step (batch 1, the deployed decision path) and its greedy action is compared
    with the driver's greedy action (before the ε draw).

    ``until_first_flip``: a shadow stops at its first different action (enough to know whether it would
    have played this very episode). Returns (Episode, seconds, {runtime id: Shadow}, decisions per margin bin).
    """
    from rtreport.stats import MARGIN_BINS, margin_bin

    tallies = {rid: Shadow(complete=not until_first_flip) for rid in shadows}
    margin_counts = np.zeros(len(MARGIN_BINS) - 1, dtype=np.int64)
    step = [0]

    def q_function(obs):
        x = obs[None]
        q = driver.infer(x)[0]
        action, margin = int(np.argmax(q)), _top_two_margin(q)
        margin_counts[margin_bin(margin)] += 1
        for rid, runner in shadows.items():
            t = tallies[rid]
            if t.error or (until_first_flip and t.first_flip is not None):
                continue
            try:
                own = runner.infer(x)[0]
            except Exception as e:  # this shadow failed; the episode goes on
                t.error = f"{type(e).__name__}: {e}"
                continue
            t.decisions += 1
            mine = int(np.argmax(own))
            if mine == action:
                t.same += 1
            else:
                t.first_flip = step[0] if t.first_flip is None else t.first_flip
                t.flips.append((step[0], action, mine, margin, _top_two_margin(own)))
        step[0] += 1
        return q

    start = time.perf_counter()
    episode = play_episode(q_function, seed, env=env, max_steps=max_steps)
    return episode, time.perf_counter() - start, tallies, margin_counts.tolist()
