"""Example agents of other tasks, each trained in minutes on a CPU by ``rtreport agent example NAME``: the
judgement that rtreport makes of the shipped Breakout agent, made of a Stable-Baselines3 policy on a discrete
classic-control task and on a MuJoCo task with continuous actions (data/examples/). Their runs in data/examples/
are made by the commands in docs/own-agent.md.

Training is seeded; the same library versions on the same machine give the same weights, other machines may not
(PyTorch's CPU kernels differ by instruction set), which changes nothing the report says about the model it was
given: every run records its model's SHA-256.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from rtreport.errors import UserError


@dataclass(frozen=True)
class Example:
    env_id: str
    algorithm: str  # a Stable-Baselines3 class
    timesteps: int
    kwargs: dict = field(default_factory=dict)
    about: str = ""


EXAMPLES = {
    "cartpole": Example(
        "CartPole-v1",
        "PPO",
        40_000,
        {"policy_kwargs": {"net_arch": [64, 64]}},
        "a PPO policy on CartPole-v1 (4 observations, 2 discrete actions); greedy on its logits",
    ),
    "inverted-pendulum": Example(
        "InvertedPendulum-v5",
        "SAC",
        20_000,
        {"policy_kwargs": {"net_arch": [64, 64]}, "learning_starts": 1_000},
        "a SAC policy on MuJoCo's InvertedPendulum-v5 (4 observations, 1 continuous action in [-3, 3])",
    ),
}


def train(name: str, out: Path, seed: int = 0, say=print) -> Path:
    """Train example ``name`` and save its ``.zip`` as ``out`` (a folder: ``<out>/<name>.zip``)."""
    if name not in EXAMPLES:
        raise UserError(f"unknown example {name!r}; one of {', '.join(EXAMPLES)}")
    import stable_baselines3
    import torch

    example = EXAMPLES[name]
    out = Path(out)
    path = out / f"{name}.zip" if out.suffix != ".zip" else out
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(1)  # small networks: one thread is faster, and the same on every core count
    algorithm = getattr(stable_baselines3, example.algorithm)
    start = time.perf_counter()
    model = algorithm("MlpPolicy", example.env_id, seed=seed, device="cpu", verbose=0, **example.kwargs)
    model.learn(example.timesteps)
    model.save(path)
    say(f"trained {example.about} for {example.timesteps:,} steps in {time.perf_counter() - start:.0f} s: {path}")
    return path
