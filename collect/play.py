"""The play phase: the reference plays the pre-registered seeds with every candidate shadowing it; a candidate
plays its own episode only where it can differ; looks of the group-sequential design stop a candidate once the
play test has decided it.

What is owed is always derived from the run's file, so an interrupted run continues where it stopped
(``collect --resume``) and a runtime added later catches up on the seeds already played.

The reuse rule: a runtime that takes the driver's greedy action at every step of the driver's episode on seed s
plays that very episode (same seed → same emulator and ε draws → same observations → same actions). Such an
episode is stored with ``source`` = the driver, not replayed; the first ``check_seeds`` seeds are replayed by
every candidate anyway, a standing check of the rule.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rtreport import sequential

from .play_pool import Players, Task


@dataclass(frozen=True)
class Design:
    seeds: tuple          # the pre-registered list, in order
    looks: tuple          # seeds played at each look, increasing
    check_seeds: int      # the first seeds every candidate really replays
    step_cap: int | None
    margin_fraction: float

    def at(self, look: int) -> list[int]:
        return list(self.seeds[: self.looks[look]])


class PlayPhase:
    def __init__(self, store, design: Design, reference: str, candidates: list[str], players: Players, ui,
                 mark_failed, where):
        self.store, self.design, self.reference = store, design, reference
        self.candidates = list(candidates)
        self.players, self.ui, self.mark_failed, self.where = players, ui, mark_failed, where
        self.failed: set[str] = set()

    # -- what the file holds ---------------------------------------------------------------------------
    def _episodes(self, rid: str) -> dict:
        return {s: (score, source) for s, score, source in self.store.con.execute(
            "SELECT seed, score, source FROM episodes WHERE run_id = ? AND runtime_id = ?",
            [self.store.run_id, rid]).fetchall()}

    def _shadowed(self) -> set:
        return set(self.store.con.execute("SELECT runtime_id, seed FROM shadow WHERE run_id = ? AND driver = ?",
                                          [self.store.run_id, self.reference]).fetchall())

    def decided(self, rid: str, reference_scores: dict) -> tuple[int, str] | None:
        """(look, outcome) at the first look where the play test decided ``rid``, from the stored episodes."""
        mine = self._episodes(rid)
        for k, n in enumerate(self.design.looks):
            seeds = self.design.at(k)
            if not all(s in mine and s in reference_scores for s in seeds):
                return None
            d = [mine[s][0] - reference_scores[s] for s in seeds]
            margin = self.design.margin_fraction * float(np.mean([reference_scores[s] for s in seeds]))
            _, low, high = sequential.repeated_ci(d, k, self.design.looks)
            result = sequential.outcome(low, high, margin)
            if result != "undecided":
                return k, result
        return None

    def active(self) -> list[str]:
        reference_scores = {s: v[0] for s, v in self._episodes(self.reference).items()}
        return [c for c in self.candidates if c not in self.failed and self.decided(c, reference_scores) is None]

    # -- playing ---------------------------------------------------------------------------------------
    def run(self) -> None:
        for k in range(len(self.design.looks)):
            active = self.active()
            # the reference plays the first look even alone (its own scores); later looks only for candidates
            if (not active and k > 0) or self.reference in self.failed:
                return
            self.where(f"play, look {k + 1} of {len(self.design.looks)}")
            self._reference_with_shadows(k, active)
            for c in active:
                if c not in self.failed:
                    self._own_play(k, c, active)

    def _reference_with_shadows(self, k: int, active: list[str]) -> None:
        seeds = self.design.at(k)
        played = self._episodes(self.reference)
        shadowed = self._shadowed()
        tasks = []
        for s in seeds:
            owed = tuple(c for c in active if (c, s) not in shadowed)
            if s not in played or owed:
                tasks.append(Task(self.reference, owed, s, self.design.step_cap))
        if not tasks:
            return
        check = set(self.design.seeds[: self.design.check_seeds])
        stored_traces = {s: a for s, a in self.store.con.execute(
            "SELECT seed, actions FROM episodes WHERE run_id = ? AND runtime_id = ?",
            [self.store.run_id, self.reference]).fetchall()}
        have = {rid: set(self._episodes(rid)) for rid in active}
        label = f"play look {k + 1}: {self.reference}" + (f" + {len(active)} shadowing" if active else "")
        with self.ui.phase(label, len(tasks), self.players.in_flight) as tick:
            for task, result, fault in self.players.run(tasks):
                if fault:
                    self._fail(fault.runtime_id, fault.message)
                    return
                episode, seconds, tallies, margins = result
                if task.seed in stored_traces and list(stored_traces[task.seed]) != list(episode.actions):
                    self._fail(self.reference, f"replaying seed {task.seed} to catch up shadows gave another "
                                               "episode than the stored one: its play is not deterministic")
                    return
                for rid, t in tallies.items():
                    if t.error:
                        self._fail(rid, t.error)
                establish = [rid for rid, t in tallies.items() if not t.error and t.first_flip is None
                             and t.decisions == episode.steps and task.seed not in check
                             and task.seed not in have[rid]]
                self.store.add_episode(self.reference, episode, self.design.step_cap, seconds, tallies, margins,
                                       flips=True, establish=establish)
                tick(1)

    def _own_play(self, k: int, c: str, active: list[str]) -> None:
        """``c`` plays the seeds it has no episode for; later candidates that also lack one shadow it, and take
        its episode where they match it at every step."""
        seeds = [s for s in self.design.at(k) if s not in self._episodes(c)]
        if not seeds:
            return
        later = [d for d in active[active.index(c) + 1:] if d not in self.failed]
        check = set(self.design.seeds[: self.design.check_seeds])
        lacking = {d: set(self._episodes(d)) for d in later}
        tasks = [Task(c, tuple(d for d in later if s not in lacking[d] and s not in check), s, self.design.step_cap,
                      until_first_flip=True) for s in seeds]
        with self.ui.phase(f"play look {k + 1}: {c} on {len(seeds)} seeds where it can differ", len(tasks),
                           self.players.in_flight) as tick:
            for task, result, fault in self.players.run(tasks):
                if fault:
                    self._fail(fault.runtime_id, fault.message)
                    return
                episode, seconds, tallies, margins = result
                establish = [rid for rid, t in tallies.items() if not t.error and t.first_flip is None
                             and t.decisions == episode.steps]
                self.store.add_episode(c, episode, self.design.step_cap, seconds, tallies, margins,
                                       establish=establish)
                tick(1)

    def _fail(self, rid: str, reason: str) -> None:
        self.failed.add(rid)
        self.mark_failed(rid, f"play: {reason}")
