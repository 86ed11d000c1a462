"""How a task's decision is made from the model's outputs, and how two runtimes' decisions are compared.

* ``Discrete``: greedy on the outputs (Q-values or logits), ε-greedy with the task's evaluation ε; two runtimes
  agree when they pick the same action (``agent.protocol.EpisodePolicy``).
* ``Continuous``: the outputs are the action, clipped to the action space's bounds (no exploration). Two runtimes
  agree when the difference of their actions (``rtreport.action_difference``) is at most the tolerance fixed in the
  gates file before measuring; they play the very same game only when their actions are equal, bit for bit (the
  reuse rule's test).
"""

from __future__ import annotations

import numpy as np

from rtreport import action_difference

from .agent.protocol import EpisodePolicy


class Discrete:
    continuous = False

    def __init__(self, num_actions: int, epsilon: float):
        self.num_actions, self.epsilon = num_actions, epsilon

    def policy(self, seed: int) -> EpisodePolicy:
        return EpisodePolicy(seed, self.epsilon, self.num_actions)

    def greedy(self, outputs) -> int:
        return int(np.argmax(outputs))


class Clipped:
    """One episode's continuous policy: the model's action within the bounds."""

    def __init__(self, low: np.ndarray, high: np.ndarray):
        self.low, self.high = low, high

    def act(self, outputs) -> np.ndarray:
        return np.clip(np.asarray(outputs, np.float32), self.low, self.high)


class Continuous:
    continuous = True

    def __init__(self, low, high, tolerance: float):
        self.low, self.high = np.asarray(low, np.float32), np.asarray(high, np.float32)
        self.tolerance = tolerance

    def policy(self, seed: int) -> Clipped:
        return Clipped(self.low, self.high)

    def greedy(self, outputs) -> np.ndarray:
        return np.clip(np.asarray(outputs, np.float32), self.low, self.high)

    def difference(self, a, b) -> float:
        return action_difference.difference(a, b, self.low, self.high)
