"""The concurrent play engine: one process keeps many games in flight ("slots"), each with its own emulator, and
each slot's batch=1 decisions are issued as soon as its previous ones are in, before waiting for any other
(``Runner.submit``/``ready``/``fetch``). A
runtime that overlaps them keeps the GPU busy from one process instead of time-slicing it between many, once its
self-check has found every overlapped decision bit-identical to ``infer`` (``open_slots`` below): PyTorch CUDA,
eager and graphs (a stream per slot, and a graph per slot captured on it), and ONNX Runtime's CUDA EP (its
session's one stream, with per-slot device buffers, runs not synchronised at their end). Any other runtime (CPU,
TensorRT) decides each slot in turn, exactly as in ``infer``.

Each decision is still one state in and one action out through the deployed decision path (the same kernels), and
an episode depends only on its seed and the Q-values its runtimes return, so the engine plays exactly the
episodes that one game at a time through ``infer`` plays (tests/test_engine.py checks it on the CPU, and
benchmarks/play_throughput.py on a GPU).
"""

from __future__ import annotations

import sys
from collections import deque

import numpy as np

from .. import measure
from .timing import timed_runners
from .twins import Stand

SELF_CHECK_ROUNDS = 64


class RuntimeFault(Exception):
    """A runtime failed while playing (its id first, so the main process can record which)."""

    def __init__(self, runtime_id: str, message: str):
        super().__init__(runtime_id, message)
        self.runtime_id, self.message = runtime_id, message

    def __str__(self):
        return f"{self.runtime_id}: {self.message}"


def open_slots(runners: dict, n: int, rounds: int = SELF_CHECK_ROUNDS) -> dict:
    """Before play in ``n`` slots: every runner that can overlap makes its slots (``Runner.open_slots``), and
    together they pass the self-check or none overlaps. The check is joint, as play is: the runtimes of one process
    overlap with each other's decisions, not only with their own. Returns {runtime id: ``overlap``} of those that
    tried; a failed check is also said on stderr (it costs speed, never correctness: each slot then decides in
    turn). Idempotent: the engine calls it with every chunk of games."""
    live = {rid: r for rid, r in runners.items() if not isinstance(r, str)}
    overlapping = {}
    for rid, r in live.items():
        try:
            if r.open_slots(n):
                overlapping[rid] = r
        except Exception as e:  # it plays, one slot at a time
            r.close_slots(f"its game slots could not be made ({type(e).__name__}: {e})")
            print(f"concurrent decisions off for {rid}: {r.overlap}", file=sys.stderr, flush=True)
    if overlapping and any(r.overlap is None for r in overlapping.values()):
        try:
            differing = overlap_differences(overlapping, n, rounds)
            failed = ", ".join(f"{rid}: {k} of {n * rounds}" for rid, k in differing.items() if k)
            reason = (
                f"the self-check failed ({failed} overlapped decisions differed from one at a time)" if failed else None
            )
        except Exception as e:
            reason = f"the self-check could not run ({type(e).__name__}: {e})"
        for rid, r in overlapping.items():
            if reason:
                r.close_slots(reason)
            else:
                together = (
                    f" together with {', '.join(sorted(set(overlapping) - {rid}))}" if len(overlapping) > 1 else ""
                )
                r.overlap = (
                    f"on: {n} slots, {r.slot_design}; {n * rounds} overlapped decisions{together} "
                    "bit-identical to one at a time"
                )
        if reason:
            print(f"concurrent decisions off for {', '.join(overlapping)}: {reason}", file=sys.stderr, flush=True)
    return {rid: r.overlap for rid, r in live.items() if r.overlap is not None}


def overlap_differences(runners: dict, n: int, rounds: int = SELF_CHECK_ROUNDS) -> dict:
    """The self-check: ``rounds`` times, every slot of every runner is given a state (seeded noise frames, a
    different one per slot, rotated each round), all submitted before any is fetched, as the engine does, and each
    result is compared bit for bit with what ``infer`` returns for that state, one call at a time. Returns
    {runtime id: how many of its ``n * rounds`` overlapped decisions differed} (all 0: the overlap is exact)."""
    states = next(iter(runners.values())).observation.noise(n)
    bits = {
        rid: [np.ascontiguousarray(r.infer(x)[0], dtype=np.float32).view(np.uint32) for x in states]
        for rid, r in runners.items()
    }
    differing = dict.fromkeys(runners, 0)
    for k in range(rounds):
        for slot in range(n):
            for r in runners.values():
                r.submit(slot, states[(slot + k) % n])
        for slot in range(n):
            for rid, r in runners.items():
                got = np.ascontiguousarray(r.fetch(slot), dtype=np.float32).view(np.uint32)
                differing[rid] += not np.array_equal(got, bits[rid][(slot + k) % n])
    return differing


def play_tasks(runners: dict, envs: list, tasks, timings=None, decisions=None):
    """Play ``tasks`` (``worker.Task``) in ``len(envs)`` slots; yields (key, result), result being (Episode,
    seconds, {runtime id: Shadow}, margin counts, {runtime id: (twin, decisions, checked, differing)} of the runtimes
    a twin stood in for (``twins``)) or the task's ``RuntimeFault``, in the order the games end.
    ``runners``: {runtime id: prepared runner, or the reason it could not be prepared (str)}. ``tasks``: a list
    (keys: positions in it), or a callable ``next_task(block)`` giving (key, task), or None when there is none
    (``block``: no game is in flight, so wait for one; None then ends the engine). Tasks may be added between the
    results (the play scheduler does: a candidate's own game follows the reference's game on the same seed).

    Each slot decides as soon as its previous decision is in: the engine takes the oldest slot whose decisions are
    all done (else waits for the oldest), advances its game and submits that slot's next decisions at once, so
    the GPU always holds every game's next decision while this process steps the emulators. ``timings``
    (``timing.Timings``): each runtime's submit/ready/fetch add to it. ``decisions``: how the task decides
    (``collect.decisions``; default: Breakout's)."""
    open_slots(runners, len(envs))
    runners = timed_runners(runners, timings)
    if callable(tasks):
        next_task = tasks
    else:
        queue = deque(enumerate(tasks))

        def next_task(block):
            return queue.popleft() if queue else None

    free = list(range(len(envs)))[::-1]
    playing: dict = {}  # slot -> _InPlay
    order: deque = deque()  # slots whose decisions are in flight, the oldest first
    while True:
        while free:  # fill the free slots
            item = next_task(not playing)
            if item is None:
                break
            key, task = item
            driver = runners.get(task.driver, "not prepared in this process")
            if isinstance(driver, str):
                yield key, RuntimeFault(task.driver, driver)
                continue
            shadows = [rid for rid in task.shadows if not isinstance(runners.get(rid, ""), str)]
            slot = free.pop()
            game = measure.ShadowedGame(
                envs[slot], task.driver, shadows, task.seed, task.step_cap, task.until_first_flip, decisions
            )
            for rid in task.shadows:
                if rid not in shadows:
                    game.tallies[rid] = measure.Shadow(error=runners.get(rid, "not prepared in this process"))
            # a twin stands in only where both it and its runtime are prepared here
            stand = Stand(
                {
                    rid: twin
                    for rid, twin in task.twins
                    if not isinstance(runners.get(rid, ""), str) and not isinstance(runners.get(twin, ""), str)
                }
            )
            playing[slot] = _InPlay(key, task, game, stand)
            playing[slot].submit(runners, slot)
            order.append(slot)
        if not playing:
            return
        slot = _next_ready(runners, playing, order)
        now = playing[slot]
        q = now.fetch(runners, slot)
        driver_q = q[now.task.driver]
        if isinstance(driver_q, BaseException):
            del playing[slot]
            free.append(slot)
            yield now.key, RuntimeFault(now.task.driver, f"{type(driver_q).__name__}: {driver_q}")
            continue
        now.game.advance(q)
        if now.game.done:
            del playing[slot]
            free.append(slot)
            yield now.key, (*now.game.result(), now.stand.rows())
        else:
            now.submit(runners, slot)
            order.append(slot)


LOOK_AHEAD = 4  # slots checked for a finished decision before waiting for the oldest


def _next_ready(runners: dict, playing: dict, order: deque) -> int:
    """The oldest of the first ``LOOK_AHEAD`` slots in flight whose decisions are all done, else the oldest;
    removed from ``order``."""
    for i in range(min(LOOK_AHEAD, len(order))):
        slot = order[i]
        if playing[slot].ready(runners, slot):
            del order[i]
            return slot
    return order.popleft()


class _InPlay:
    """One slot's game and the decisions it has in flight: ``wanted`` asks for the runtimes the game needs,
    ``submitted`` are those that compute them (a twin in its runtime's place, ``twins.Stand``)."""

    __slots__ = ("key", "task", "game", "stand", "wanted", "submitted", "refused")

    def __init__(self, key, task, game, stand: Stand):
        self.key, self.task, self.game, self.stand = key, task, game, stand
        self.wanted, self.submitted, self.refused = [], [], {}

    def submit(self, runners: dict, slot: int) -> None:
        x = self.game.observation[None]
        self.wanted, self.refused = self.game.wanted(), {}
        self.submitted = self.stand.submitted(self.wanted, self.game.step)
        for rid in self.submitted:
            try:
                runners[rid].submit(slot, x)
            except Exception as e:  # raised again where the engine expects a runtime's failure
                self.refused[rid] = e

    def ready(self, runners: dict, slot: int) -> bool:
        try:
            return all(rid in self.refused or runners[rid].ready(slot) for rid in self.submitted)
        except Exception:  # fetch will say what is wrong
            return True

    def fetch(self, runners: dict, slot: int) -> dict:
        q = {}
        for rid in self.submitted:
            if rid in self.refused:
                q[rid] = self.refused[rid]
                continue
            try:
                q[rid] = runners[rid].fetch(slot)
            except Exception as e:
                q[rid] = e
        return self.stand.resolve(self.wanted, q, self.game.step, lambda rid: _own(runners[rid], self.game.observation))


def _own(runner, observation):
    """A runtime's own decision on ``observation`` now (its twin failed in this step): its Q-values or its error."""
    try:
        return runner.infer(observation[None])[0]
    except Exception as e:
        return e


def in_task_order(results, count: int):
    """Re-order ``play_tasks``' (position, result) pairs into task order, yielding each as soon as every earlier
    task's result is in."""
    waiting, next_position = {}, 0
    for position, result in results:
        waiting[position] = result
        while next_position in waiting:
            yield next_position, waiting.pop(next_position)
            next_position += 1
    assert next_position == count and not waiting, (next_position, count, sorted(waiting))
