"""Play: the group-sequential play test's looks (``phase``, ``look``: the reference with every candidate
shadowing it, own games only where a candidate can differ, the reuse rule), the processes that play the games
(``pool``, ``worker``), the engine that keeps many games in flight in each (``engine``), the CUDA-graph twins that
compute their runtimes' decisions (``twins``) and where their time goes (``timing``)."""

from .phase import Design, PlayPhase
from .pool import Players
from .worker import Task, auto_slots, auto_workers

__all__ = ["Design", "PlayPhase", "Players", "Task", "auto_slots", "auto_workers"]
