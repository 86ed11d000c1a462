"""The runner interface, after Polygraphy's: public methods do the shared checks and bookkeeping and call the
``*_impl`` methods that each runtime overrides. What a plugin author implements (docs/architecture.md):

Required
    ``prepare_impl()``  build what the runtime needs (session, engine, graph); ``prepare()`` times it. Set
                        ``artifact_path`` / ``artifact_bytes`` when it writes a model or an engine.
    ``infer_impl(batch)``  a host array of the task's observations in (``observation``: Breakout's uint8
                        (N, 4, 84, 84) unless the run's task says otherwise), float32 outputs (N, num_actions)
                        on the host out (Q-values or action logits).
Expected
    ``describe_impl()``  what ran, as the run file's runtime row has it: ``libraries`` (versions), ``numerics``
                        (the TF32 state, one of ``TF32_STATES``, and the switches that set it), ``details``.
    ``close_impl()``    free what ``prepare_impl`` made.
Optional: overlapping play (several games in flight in one process, ``collect.play.engine``)
    ``open_slots(n)``, ``submit(slot, batch)``, ``ready(slot)``, ``fetch(slot)``, ``close_slots(reason)``: by
    default each slot decides in turn through ``infer``, so every runner plays; override all five to overlap.
Optional: play in other processes
    ``worker_args()`` / ``reuse(args)`` (hand a prepared artifact, e.g. an engine, to the copies in play processes),
    ``for_play()`` (a copy that schedules its threads for play; latency is measured on the runner itself).

``info`` is the runtime's registry entry (``registry.Runtime``); a runtime that cannot run on this machine raises
``RuntimeUnavailable`` with the reason (shown in the report).
"""

from __future__ import annotations

import time

import numpy as np

from ..task import BREAKOUT_OBSERVATION, Observation

TF32_STATES = ("off", "on", "not-applicable", "by-types", "default")


class RuntimeUnavailable(Exception):
    """This machine cannot run the runtime; the message says why (shown in the report)."""


class Runner:
    fixed_batch: int | None = None  # a runner captured for one batch size (CUDA graphs) serves only that one
    overlap: str | None = None  # after ``open_slots``: whether its slots' decisions overlap, and why (None: in turn)
    slot_design = "overlapped"  # how its slots overlap, in words (the engine's ``overlap`` line says it)
    # What one decision's input is: the collector sets the run's task's before ``prepare`` (``registry.make``).
    observation: Observation = BREAKOUT_OBSERVATION

    def __init__(self, info):
        self.info = info
        self.prepare_seconds: float | None = None
        self.artifact_path = None
        self.artifact_bytes: int | None = None
        self._prepared = False

    # -- public interface -------------------------------------------------------------------
    def prepare(self) -> None:
        start = time.perf_counter()
        self.prepare_impl()
        self.prepare_seconds = (self.prepare_seconds or 0.0) + time.perf_counter() - start
        self._prepared = True

    def infer(self, batch: np.ndarray) -> np.ndarray:
        """(N, *observation.shape) host array of the observation's dtype -> float32 (N, A) host array."""
        assert self._prepared, "prepare() first"
        assert batch.dtype == self.observation.dtype and batch.shape[1:] == self.observation.shape, (
            batch.dtype,
            batch.shape,
        )
        assert self.fixed_batch is None or batch.shape[0] == self.fixed_batch, "captured for another batch size"
        return self.infer_impl(batch)

    def describe(self) -> dict:
        """{"libraries": {name: version}, "numerics": {"tf32": one of TF32_STATES, "switches": {...}},
        "details": {...}} (``describe_impl`` returns the same three keys, each optional)."""
        d = self.describe_impl()
        numerics = dict(d.get("numerics") or {})
        assert numerics.get("tf32", "not-applicable") in TF32_STATES, numerics
        return {
            "libraries": dict(d.get("libraries") or {}),
            "numerics": numerics,
            "details": dict(d.get("details") or {}),
        }

    def close(self) -> None:
        self.close_impl()

    # -- concurrent play (collect.engine) ----------------------------------------------------------
    def submit(self, slot: int, batch: np.ndarray) -> None:
        """Start the decision for game slot ``slot`` on a (1, 4, 84, 84) state; ``fetch(slot)`` returns its Q-values
        (A,). A runner that can overlap the slots' decisions (one CUDA graph and stream per slot) overrides both;
        by default the decision is made here and now, so every runner plays in the concurrent engine, and makes
        the same decision there as in ``infer`` either way."""
        pending = self.__dict__.setdefault("_pending", {})
        try:
            pending[slot] = self.infer(batch)[0]
        except Exception as e:  # raised by fetch, where the engine expects a runtime's failure
            pending[slot] = e

    def ready(self, slot: int) -> bool:
        """Whether ``fetch(slot)`` would return without waiting (the engine then takes that slot first)."""
        return True

    def fetch(self, slot: int) -> np.ndarray:
        result = self._pending.pop(slot)
        if isinstance(result, BaseException):
            raise result
        return result

    def open_slots(self, n: int) -> bool:
        """Before the engine plays in ``n`` slots: a runner that can overlap its slots' decisions makes its per-slot
        resources (once) and returns True; the engine then trusts them only after its self-check
        (``engine.open_slots``), and calls ``close_slots`` if the check fails. By default: nothing to overlap."""
        return False

    def close_slots(self, reason: str) -> None:
        """Stop overlapping (each slot decides in turn, through ``infer``), and say why in ``overlap``."""

    def worker_args(self) -> dict:
        """What a copy of this prepared runner in another process needs to be the same runtime
        (e.g. the TensorRT engine already built, rather than a fresh build that may pick other tactics)."""
        return {}

    def reuse(self, worker_args: dict) -> None:
        """Before ``prepare()``: take what ``worker_args()`` of the original runner gave."""

    def for_play(self) -> "Runner":
        """The runner that decides in play: by default this one. A runner may return a copy that computes the
        same numbers but schedules its threads so that it does not slow the runtimes it alternates with
        (shadow evaluation runs several runtimes on every step); latency is always measured on this one."""
        return self

    def __enter__(self):
        self.prepare()
        return self

    def __exit__(self, *exc):
        self.close()

    # -- per runtime ------------------------------------------------------------------------
    def prepare_impl(self) -> None:
        raise NotImplementedError

    def infer_impl(self, batch: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def describe_impl(self) -> dict:
        return {}

    def close_impl(self) -> None:
        pass


def torch_dtype(observation: Observation):
    import torch

    return getattr(torch, observation.dtype)


class CudaSlots:
    """What the runners that overlap their game slots on a CUDA GPU share (PyTorch, ONNX Runtime's CUDA EP):
    per slot a pinned host input and output and an event recorded after the output's copy. A runner using it
    makes its slots with ``_new_slot`` in ``open_slots``, issues each decision on a stream in ``submit`` and
    records ``done``; ``fetch`` and ``close_slots`` are here. Before ``Runner`` in the bases."""

    def _new_slot(self, num_actions: int) -> dict:
        import torch

        return {
            "done": torch.cuda.Event(),
            "host_in": torch.zeros((1, *self.observation.shape), dtype=torch_dtype(self.observation)).pin_memory(),
            "host_out": torch.zeros((1, num_actions), dtype=torch.float32).pin_memory(),
        }

    def _open(self) -> dict | None:
        """The slots when overlapping, else None (each slot then decides through ``infer``)."""
        return self.__dict__.get("_slots") or None

    def ready(self, slot: int) -> bool:
        slots = self._open()
        return super().ready(slot) if slots is None else slots[slot]["done"].query()

    def fetch(self, slot: int) -> np.ndarray:
        slots = self._open()
        if slots is None:
            return super().fetch(slot)
        s = slots[slot]
        s["done"].synchronize()
        return s["host_out"].numpy()[0].copy()

    def close_slots(self, reason: str) -> None:
        self._slots = None
        self.overlap = f"off: {reason}; each game slot decides in turn"
