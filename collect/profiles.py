"""The protocol's profiles: how much ``rtreport collect`` measures (the full protocol, and the quick smoke run).
A run stores its profile in ``settings``; ``--resume`` and ``--repeat`` read it back (``collect.resume``)."""

from __future__ import annotations

from dataclasses import dataclass

from .measure import BATCH_SIZES


@dataclass(frozen=True)
class Profile:
    name: str
    num_states: int | None = None  # None: all 60 fixed states
    looks: tuple = (100, 300, 600, 900, 1200)  # play test: seeds of the pre-registered list at each look
    check_seeds: int = 5  # the first seeds every candidate really replays (the reuse rule's check)
    episode_step_cap: int | None = None  # None: whole games (the protocol's 108,000-frame cap only)
    rounds: int = 10  # latency rounds per runtime, spread over the run (rounds.plan)
    latency_warmup: int = 200  # per round
    latency_samples: int = 2000  # per round
    batch_sizes: tuple = BATCH_SIZES
    batch_iterations: int = 100
    batch_budget_seconds: float = 3.0
    repeats: int = 2  # after the run: repeats, each in a fresh process (collect.after_run)
    repeat_rounds: int = 3  # latency rounds of each of those repeats
    repeat_pause_s: float = 30.0  # seconds between the run's end and each repeat
    retakes: int = 2  # a round under other processes' load is measured again up to this often
    retake_pause_s: float = 5.0  # seconds to wait before measuring it again


FULL = Profile("full")
QUICK = Profile(
    "quick",
    num_states=8,
    looks=(2,),
    check_seeds=1,
    episode_step_cap=150,
    rounds=3,
    latency_warmup=20,
    latency_samples=300,
    batch_sizes=(1, 8, 32),
    batch_iterations=10,
    batch_budget_seconds=0.5,
    repeat_rounds=1,
    repeat_pause_s=0.0,
    retakes=1,
    retake_pause_s=1.0,
)
PROFILES = {p.name: p for p in (FULL, QUICK)}
