"""Example agents of other tasks, each made in minutes on a CPU by ``rtreport agent example NAME``: the
judgement that rtreport makes of the shipped Breakout agent, made of a Stable-Baselines3 policy on a discrete
classic-control task and on a MuJoCo task with continuous actions, and of a small untrained Q-network on another
ALE game (agreement and equivalence need no skill). They and their runs are in data/examples/, made by the
commands in docs/own-agent.md.

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
    algorithm: str  # a Stable-Baselines3 class, or "untrained" (a small TorchScript Q-network, seeded)
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
    "pong-small": Example(
        "ALE/Pong-v5",
        "untrained",
        0,
        {},
        "a small untrained convolutional Q-network (TorchScript) for ALE/Pong-v5's 6 actions, under the Atari protocol",
    ),
}


def _small_network(num_actions: int):
    import torch
    from torch import nn

    class Small(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = nn.Sequential(
                nn.Conv2d(4, 8, 8, stride=4),
                nn.ReLU(),
                nn.Conv2d(8, 16, 4, stride=2),
                nn.ReLU(),
                nn.Flatten(),
                nn.Linear(16 * 9 * 9, num_actions),
            )

        def forward(self, x):
            # in the weights' own dtype, so that a half-precision copy takes the same uint8 frames
            return self.net(x.to(self.net[0].weight.dtype) / 255.0)

    return torch.jit.script(Small().eval())  # scripted, not traced: its input cast follows the weights' dtype


def train(name: str, out: Path, seed: int = 0, say=print) -> Path:
    """Train example ``name`` and save its ``.zip`` as ``out`` (a folder: ``<out>/<name>.zip``)."""
    if name not in EXAMPLES:
        raise UserError(f"unknown example {name!r}; one of {', '.join(EXAMPLES)}")
    import stable_baselines3
    import torch

    example = EXAMPLES[name]
    out = Path(out)
    suffix = ".pt" if example.algorithm == "untrained" else ".zip"
    path = out / f"{name}{suffix}" if out.suffix != suffix else out
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(1)  # small networks: one thread is faster, and the same on every core count
    if example.algorithm == "untrained":
        torch.manual_seed(seed)
        torch.jit.save(_small_network(6), str(path))
        say(f"made {example.about}: {path}")
        return path
    algorithm = getattr(stable_baselines3, example.algorithm)
    start = time.perf_counter()
    model = algorithm("MlpPolicy", example.env_id, seed=seed, device="cpu", verbose=0, **example.kwargs)
    model.learn(example.timesteps)
    model.save(path)
    say(f"trained in {time.perf_counter() - start:.0f} s ({example.timesteps:,} steps): {example.about}; saved {path}")
    return path
