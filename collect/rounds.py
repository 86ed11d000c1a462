"""Latency rounds: round r measures every runtime once (the reference too), in an order shuffled with a seed of
its own, each runtime with its own warm-up; the host's and GPU's conditions are kept with it.

The protocol's rounds are spread over the whole collect (``plan``): some before play, some after each look of
the play test (taken while no game is in flight), the rest after play, so drift during the run shows as spread
between rounds instead of hiding in one stretch of it. ``collect --repeat`` takes further rounds the same way
(``measure_round``).
"""

from __future__ import annotations

import json
import random
import time
from contextlib import nullcontext

from rtreport import host_load

from . import measure
from .conditions import Host, first_readings, flags, gpu_conditions
from .store import now

ROUND_ORDER_SEED = 20261130  # runtime order of round r: a permutation seeded with this + r


def plan(rounds: int, looks: int, between: bool = True) -> list[int]:
    """The slot of each of the protocol's rounds, in round order: 0 before play, k after look k (1 … looks - 1),
    ``looks`` after play. The two ends come first, so that any two rounds span the play; then the looks.
    ``between`` False: the two ends only (play through an MPS daemon, ``ends_only_reason``)."""
    order = ([0, looks, *range(1, looks)] if between else [0, looks]) if looks > 0 else [0]
    counts = [0] * (looks + 1)
    for i in range(rounds):
        counts[order[i % len(order)]] += 1
    return [slot for slot in range(looks + 1) for _ in range(counts[slot])]


def ends_only_reason(play_mps: bool) -> str | None:
    """Why the protocol's rounds are not taken between looks, or None when they are. Through MPS, the play
    processes' work runs in the MPS server's context, and between looks that server and its 16 idle clients are
    alive while the main process, a plain CUDA client, measures: its context then shares the GPU with the
    server's by time-slicing. On the H200 (docs/measurements.md section 9) runtimes that launch every kernel from the
    host were 1.2–2.8× slower in the rounds between looks than before play, graph runtimes within ±25 %: such
    rounds measure another machine state, so they are taken before play and after it, when no daemon runs."""
    if play_mps:
        return (
            "play shares the GPU through an MPS daemon, whose context time-slices with the measuring process "
            "between looks: rounds are taken before play and after it"
        )
    return None


def phase_name(slot: int, looks: int) -> str:
    return "before-play" if slot == 0 else "after-play" if slot >= looks else f"look-{slot}"


def order_of(runtime_ids, r: int) -> list[str]:
    order = sorted(runtime_ids)
    random.Random(ROUND_ORDER_SEED + r).shuffle(order)
    return order


def stored_conditions(con, run_id: str) -> list[dict]:
    """Every round's conditions in the file, earliest first."""
    return [
        json.loads(c)
        for (c,) in con.execute(
            "SELECT conditions FROM rounds WHERE run_id = ? AND conditions IS NOT NULL "
            "ORDER BY started_at, round, position",
            [run_id],
        ).fetchall()
    ]


RETAKES = 2  # a round under load from other processes is measured again up to this many times
RETAKE_PAUSE_S = 5.0  # seconds to wait before measuring it again, for the other processes' load to pass


def attempts_progress(ui, label: str, samples: int, retakes: int):
    """Each attempt of a round as a phase of its own: its samples counted from 0, a retake named as one."""

    def progress(attempt: int):
        again = f" again ({attempt} of {retakes}): other processes loaded the CPU" if attempt else ""
        return ui.phase(label + again, samples)

    return progress


def measure_round(
    store,
    rid: str,
    runner,
    r: int,
    position: int,
    states,
    warmup: int,
    samples: int,
    host: Host,
    cuda_index: int,
    phase: str,
    repeat: int,
    progress=None,
    retakes: int = RETAKES,
    pause: float = RETAKE_PAUSE_S,
) -> None:
    """One runtime's round: samples, when, where in the round's order, and the host's and GPU's state. An attempt
    while other processes used more than ``rtreport.host_load.FOREIGN_LIMIT`` of the CPU is kept in ``retaken``
    and measured again, up to ``retakes`` times; the last attempt counts, flagged if it too ran loaded, and its
    conditions say how many attempts came before it (``retakes``). ``progress(attempt)``: a context that yields
    the attempt's tick (each attempt counts its own samples, a retake says why it is measured again)."""
    gpu = runner.info.device == "cuda"
    earlier = store.con.execute(  # attempts a stopped session already kept of this round: numbered after them
        "SELECT count(*) FROM retaken WHERE run_id = ? AND runtime_id = ? AND round = ?", [store.run_id, rid, r]
    ).fetchone()[0]
    for attempt in range(retakes + 1):
        started = now()
        before = gpu_conditions(cuda_index) if gpu else None
        reading = host.start()
        with progress(attempt) if progress else nullcontext(None) as tick:
            seconds = measure.decision_latency(runner, states, warmup, samples, tick)
        conditions = {**host.finish(reading), "phase": phase, "repeat": repeat}
        after = gpu_conditions(cuda_index) if gpu else None
        if before or after:
            conditions.update(before=before, after=after)
        if earlier + attempt:
            conditions["retakes"] = earlier + attempt
        reasons = flags(conditions, first_readings([*stored_conditions(store.con, store.run_id), conditions]))
        if reasons:
            conditions["flagged"] = reasons
        if not host_load.loaded(conditions) or attempt == retakes:
            break
        store.add_retaken(rid, r, earlier + attempt, started, seconds, conditions)
        time.sleep(pause)
    store.add_round(rid, r, position, started, seconds, conditions)


def next_round(con, run_id: str) -> int:
    """The first round number no row of the file has: past every round kept, and past every attempt a stopped
    session measured again for load before the round itself was stored."""
    top = con.execute(
        "SELECT max(round) FROM (SELECT round FROM rounds WHERE run_id = ? UNION ALL "
        "SELECT round FROM retaken WHERE run_id = ?)",
        [run_id, run_id],
    ).fetchone()[0]
    return 0 if top is None else top + 1


class Rounds:
    """The protocol's rounds of one collect session (``collector``: its store, runners, profile, states, progress
    and failure handling). ``take(slot)`` measures the rounds owed by then; a resumed run takes rounds of slots
    it has passed where it is."""

    def __init__(self, collector, looks: tuple, seeds: tuple, between: bool = True):
        """``between``: whether rounds are also taken between looks (``ends_only_reason``)."""
        self.c, self.looks, self.seeds, self.between_looks = collector, looks, seeds, between
        self.host = Host()
        self.failed: set = set()  # runtimes that failed in a round (play leaves them out too)

    def numbers(self) -> list[int]:
        """The protocol's round numbers: those stored (repeats' rounds aside), then new ones after every number in
        the file, up to the profile's count."""
        con, run_id = self.c.store.con, self.c.store.run_id
        stored = sorted(
            {
                r
                for r, c in con.execute("SELECT round, conditions FROM rounds WHERE run_id = ?", [run_id]).fetchall()
                if not (c and json.loads(c).get("repeat"))
            }
        )
        start = next_round(con, run_id)
        return stored + list(range(start, start + max(0, self.c.profile.rounds - len(stored))))

    def owed(self, slot: int) -> list[tuple[int, list[str]]]:
        """[(round number, runtimes still lacking it)] of the rounds planned up to ``slot``; none where the run
        has already gone past that slot (a resumed run: they are taken at the next slot it reaches)."""
        if not self._here(slot):
            return []
        done = set(
            self.c.store.con.execute(
                "SELECT runtime_id, round FROM rounds WHERE run_id = ?", [self.c.store.run_id]
            ).fetchall()
        )
        numbers = self.numbers()
        slots = plan(len(numbers), len(self.looks), self.between_looks)
        out = []
        for r, planned in zip(numbers, slots):
            lacking = [rid for rid in order_of(self.c.runners, r) if (rid, r) not in done]
            if planned <= slot and lacking:
                out.append((r, lacking))
        return out

    def _here(self, slot: int) -> bool:
        if slot >= len(self.looks):
            return True
        played = {
            s
            for (s,) in self.c.store.con.execute(
                "SELECT DISTINCT seed FROM episodes WHERE run_id = ?", [self.c.store.run_id]
            ).fetchall()
        }
        return not played - set(self.seeds[: self.looks[slot - 1]] if slot else ())

    def due(self, look: int) -> bool:
        return self.between_looks and bool(self.owed(look))

    def between(self, look: int, players, carried: dict) -> dict:
        """After ``look`` looks: wait for the games started ahead to end (kept for the next look), then take the
        rounds owed, with no game in flight. Returns ``carried`` with every game ended."""
        while players.outstanding:
            task, result, fault = players.next_result()
            carried[task] = (result, fault)
        self.take(look)
        return carried

    def take(self, slot: int) -> None:
        c, phase = self.c, phase_name(slot, len(self.looks))
        total = len(self.numbers())
        for r, lacking in self.owed(slot):
            order = order_of(c.runners, r)
            for rid in lacking:
                if rid not in c.runners:
                    continue  # failed in an earlier round
                c._at(f"latency round {r + 1}", rid)
                c._guard(rid, self._one, rid, r, order.index(rid), phase, total)
                if rid not in c.runners:
                    self.failed.add(rid)

    def _one(self, rid: str, r: int, position: int, phase: str, total: int) -> None:
        c, p = self.c, self.c.profile
        label = f"{rid}: latency round {r + 1}/{total}"
        measure_round(
            c.store,
            rid,
            c.runners[rid],
            r,
            position,
            c.states,
            p.latency_warmup,
            p.latency_samples,
            self.host,
            c.cuda_index,
            phase,
            0,
            attempts_progress(c.ui, label, p.latency_samples, p.retakes),
            p.retakes,
            p.retake_pause_s,
        )
