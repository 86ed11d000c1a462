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


from rtreport import play_margin, sequential

from .look import Look
from .pool import Players


@dataclass(frozen=True)
class Design:
    seeds: tuple  # the pre-registered list, in order
    looks: tuple  # seeds played at each look, increasing
    check_seeds: int  # the first seeds every candidate really replays
    step_cap: int | None
    margin_fraction: float
    margin_rule: str = play_margin.DEFAULT_RULE  # ``rtreport.play_margin``

    def at(self, look: int) -> list[int]:
        return list(self.seeds[: self.looks[look]])


class PlayPhase:
    def __init__(
        self,
        store,
        design: Design,
        reference: str,
        candidates: list[str],
        players: Players,
        ui,
        mark_failed,
        where,
        between=None,
    ):
        """``between``: latency rounds owed after a look (``rounds.Rounds``), taken before the next look starts."""
        self.store, self.design, self.reference, self.between = store, design, reference, between
        self.twins: tuple = ()  # ((runtime id, its twin), ...) for every game but the check seeds' (``twins``)
        self.candidates = list(candidates)
        self.players, self.ui, self.mark_failed, self.where = players, ui, mark_failed, where
        self.failed: set[str] = set()
        self.before_look = None  # called with the look's seeds before it plays (the margin's random games)

    # -- what the file holds ---------------------------------------------------------------------------
    def _episodes(self, rid: str) -> dict:
        return {
            s: (score, source)
            for s, score, source in self.store.con.execute(
                "SELECT seed, score, source FROM episodes WHERE run_id = ? AND runtime_id = ?", [self.store.run_id, rid]
            ).fetchall()
        }

    def _shadowed(self) -> set:
        return set(
            self.store.con.execute(
                "SELECT runtime_id, seed FROM shadow WHERE run_id = ? AND driver = ?",
                [self.store.run_id, self.reference],
            ).fetchall()
        )

    def decided(self, rid: str, reference_scores: dict) -> tuple[int, str] | None:
        """(look, outcome) at the first look where the play test decided ``rid``, from the stored episodes."""
        mine = self._episodes(rid)
        for k, n in enumerate(self.design.looks):
            seeds = self.design.at(k)
            if not all(s in mine and s in reference_scores for s in seeds):
                return None
            d = [mine[s][0] - reference_scores[s] for s in seeds]
            margin = self.margin([reference_scores[s] for s in seeds], seeds)
            if margin is None:
                continue
            _, low, high = sequential.repeated_ci(d, k, self.design.looks)
            result = sequential.outcome(low, high, margin)
            if result != "undecided":
                return k, result
        return None

    def margin(self, reference_scores: list, seeds: list) -> float | None:
        random = None
        if self.design.margin_rule == "gain-over-random":
            stored = dict(
                self.store.con.execute(
                    "SELECT seed, score FROM baseline_episodes WHERE run_id = ? AND policy = 'uniform-random'",
                    [self.store.run_id],
                ).fetchall()
            )
            random = [stored[s] for s in seeds] if all(s in stored for s in seeds) else None
        return play_margin.margin(self.design.margin_rule, self.design.margin_fraction, reference_scores, random)

    def active(self) -> list[str]:
        reference_scores = {s: v[0] for s, v in self._episodes(self.reference).items()}
        return [c for c in self.candidates if c not in self.failed and self.decided(c, reference_scores) is None]

    # -- playing ---------------------------------------------------------------------------------------
    def run(self) -> None:
        carried: dict = {}  # the next look's reference games started in this look's tail
        for k in range(len(self.design.looks)):
            active = self.active()
            if k and active and self.between is not None and self.between.due(k):  # no game in flight while they run
                carried = self.between.between(k, self.players, carried)
                self.failed |= self.between.failed
                active = [c for c in active if c not in self.failed]
            # the reference plays the first look even alone (its own scores); later looks only for candidates
            if (not active and k > 0) or self.reference in self.failed:
                if any(v is None for v in carried.values()):
                    self.players.abandon()  # games started ahead that no look needs
                return
            self.where(f"play, look {k + 1} of {len(self.design.looks)}")
            if self.before_look is not None:
                self.before_look(self.design.at(k))
            carried = Look(self, k, active).play(carried)
            self.store.add_play_time(k, self.players.timings())

    def _fail(self, rid: str, reason: str) -> None:
        self.failed.add(rid)
        self.mark_failed(rid, f"play: {reason}")
