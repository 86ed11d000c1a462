"""The measurement loops, each over one prepared runner; no I/O, no statistics."""
from __future__ import annotations

import time

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
