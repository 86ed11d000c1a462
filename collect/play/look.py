"""One look of the play test, pipelined seed by seed (``PlayPhase.run`` plays the looks in turn)."""

from __future__ import annotations

import contextlib
import heapq
import itertools
import time

from ..progress import ClosablePhase
from .worker import Task


class Look:
    """One look's games, pipelined seed by seed: on each seed the reference plays with every active candidate
    shadowing it (the whole game); then, in the candidates' order, each candidate still without an episode on that
    seed plays its own, shadowed by the later candidates that still lack one (until their first different action).
    A seed's next game starts as soon as its previous one ends, while the reference plays the look's other seeds,
    so no game waits for a whole phase to end; a seed's own games go before new reference games. On the first
    ``check_seeds`` seeds every candidate plays its own game anyway and nobody shadows it, so those games all start
    with the look. What each game is given depends only on the games before it on the same seed, so the file holds
    exactly what playing the phases one after another (reference, then each candidate in turn) gives."""

    def __init__(self, phase, k: int, active: list[str]):
        self.phase, self.k, self.active = phase, k, active
        d, store, ref = phase.design, phase.store, phase.reference
        self.seeds = d.at(k)
        self.check = set(d.seeds[: d.check_seeds])
        self.have = {rid: set(phase._episodes(rid)) for rid in dict.fromkeys([ref, *active])}
        self.traces = {
            s: a
            for s, a in store.con.execute(
                "SELECT seed, actions FROM episodes WHERE run_id = ? AND runtime_id = ?", [store.run_id, ref]
            ).fetchall()
        }
        # heap of (priority, order, task): a seed's own games (0) before new reference games (1)
        self.pending: list = []
        self.order = itertools.count()
        self.progress: dict = {}  # runtime id -> [ClosablePhase, tick, done, total]

    def _task(self, driver: str, shadows: tuple, seed: int, until_first_flip: bool = False) -> Task:
        """A game to play; on a check seed every runtime computes its own decisions (no twin stands in)."""
        return Task(
            driver,
            shadows,
            seed,
            self.phase.design.step_cap,
            until_first_flip,
            () if seed in self.check else self.twins,
        )

    @property
    def twins(self) -> tuple:
        """The pairs that stand in this look: none with a failed runtime or twin, and none standing in for the
        reference while the twin is itself a candidate under test (it would be compared with its own actions)."""
        failed, ref = self.phase.failed, self.phase.reference
        return tuple(
            (rid, twin)
            for rid, twin in self.phase.twins
            if rid not in failed and twin not in failed and not (rid == ref and twin in self.active)
        )

    def _push(self, task: Task | None, priority: int) -> None:
        if task is not None:
            heapq.heappush(self.pending, (priority, next(self.order), task))

    def _own_after(self, seed: int, position: int) -> Task | None:
        """The next candidate after ``active[position]`` that has no episode on ``seed``: its own game, shadowed by
        the later candidates that have none either (the first ``check_seeds`` seeds excepted)."""
        for j in range(position + 1, len(self.active)):
            c = self.active[j]
            if c in self.phase.failed or seed in self.have[c]:
                continue
            later = tuple(
                d
                for d in self.active[j + 1 :]
                if d not in self.phase.failed and seed not in self.have[d] and seed not in self.check
            )
            return self._task(c, later, seed, until_first_flip=True)
        return None

    def play(self, carried: dict) -> dict:
        """Play the look. ``carried``: {reference task: (result, fault), or None while in flight} of this look's
        seeds, started in the previous look's tail before it was known which candidates this look still has;
        their tallies of candidates no longer active are dropped, so the file holds what waiting would give.
        Returns the same for the next look: once this look has no game left to start and a slot would stand
        idle, the reference starts the next look's new seeds, every active candidate shadowing it."""
        phase, ref, players = self.phase, self.phase.reference, self.phase.players
        shadowed = phase._shadowed()
        reference_games, done_early, mine = 0, [], 0
        carried_for = {task.seed: task for task in carried}
        for s in self.seeds:
            if s in self.check:  # no candidate shadows another here, so their own games wait for nothing
                for c in self.active:
                    if s not in self.have[c]:
                        self._push(self._task(c, (), s, until_first_flip=True), 0)
            owed = tuple(c for c in self.active if (c, s) not in shadowed)
            if s not in self.have[ref] or owed:
                reference_games += 1
                task = carried_for.get(s)
                if task is None:
                    self._push(self._task(ref, owed, s), 1)
                elif carried[task] is None:
                    mine += 1  # in flight: it comes back among this look's results
                else:
                    done_early.append((task, *carried[task]))
            elif s not in self.check:
                self._push(self._own_after(s, -1), 0)
        ahead = self._ahead(shadowed)
        started_ahead: set = set()
        finished_ahead: dict = {}
        capacity = players.in_flight + (players.workers if players.workers > 1 else 0)
        with contextlib.ExitStack() as stack:
            self._open_progress(stack, reference_games)
            for task, result, fault in done_early:
                if not self._ended(task, result, fault):
                    return self._unfinished("the reference failed")
            while self.pending or mine:
                while self.pending and players.outstanding < capacity:
                    task = heapq.heappop(self.pending)[2]
                    players.put(task, task)
                    mine += 1
                while not self.pending and ahead and players.outstanding < capacity:
                    task = ahead.pop(0)
                    players.put(task, task)
                    started_ahead.add(task)
                task, result, fault = players.next_result()
                if task in started_ahead:
                    started_ahead.discard(task)
                    finished_ahead[task] = (result, fault)
                    continue
                mine -= 1
                t = time.perf_counter()
                ended = self._ended(task, result, fault)
                players.main.add("storing episodes", time.perf_counter() - t)
                if not ended:
                    return self._unfinished("the reference failed")
            self._unfinished("the look ended without them")  # none, unless a count above is wrong: then said
        return {**dict.fromkeys(started_ahead), **finished_ahead}

    def _unfinished(self, why: str) -> dict:
        """Progress lines of runtimes whose episodes the look did not all get end saying so, not "n/n"."""
        for closable, _, done, total in self.progress.values():
            if done < total:
                closable.close(RuntimeError(f"{total - done} of {total} episodes not played: {why}"))
        return {}

    def _ahead(self, shadowed: set) -> list:
        """The reference games the next look plays if any candidate is still undecided after this one: its new seeds,
        which neither the reference nor any candidate has played (none after the last look). Should this look
        decide every candidate, they are dropped unstored (``PlayPhase.run``)."""
        d, ref = self.phase.design, self.phase.reference
        if self.k + 1 >= len(d.looks) or not self.active:
            return []
        nobody = {s for _, s in shadowed}
        return [
            self._task(ref, tuple(self.active), s)
            for s in d.at(self.k + 1)[len(self.seeds) :]
            if s not in self.have[ref] and s not in nobody
        ]

    def _ended(self, task: Task, result, fault) -> bool:
        """A game of this look ended: stored, and its seed's next game pushed (a check seed's own games all started
        with the look). False: the reference failed."""
        if task.driver == self.phase.reference:
            if not self._reference_game(task, result, fault):
                self.phase.players.abandon()
                return False
            position = -1
        else:
            self._own_game(task, result, fault)
            position = self.active.index(task.driver)
        if task.seed not in self.check:
            self._push(self._own_after(task.seed, position), 0)
        return True

    def _reference_game(self, task: Task, result, fault) -> bool:
        phase, ref = self.phase, self.phase.reference
        if fault:
            phase._fail(fault.runtime_id, fault.message)
            return False
        episode, seconds, tallies, margins, twins = result
        if task.seed in self.traces and list(self.traces[task.seed]) != list(episode.actions):
            phase._fail(
                ref,
                f"replaying seed {task.seed} to catch up shadows gave another episode than the stored "
                "one: its play is not deterministic",
            )
            return False
        # a game started ahead was shadowed by the previous look's candidates: only this look's count
        tallies = {rid: t for rid, t in tallies.items() if rid in self.active and rid not in phase.failed}
        for rid, t in tallies.items():
            if t.error:
                phase._fail(rid, t.error)
                self._stop_progress(rid, t.error)
        establish = [
            rid
            for rid, t in tallies.items()
            if not t.error
            and t.first_flip is None
            and t.decisions == episode.steps
            and task.seed not in self.check
            and task.seed not in self.have[rid]
        ]
        phase.store.add_episode(
            ref,
            episode,
            phase.design.step_cap,
            seconds,
            tallies,
            margins,
            flips=True,
            establish=establish,
            twins=_kept(twins, ref, tallies),
        )
        self._got(ref, task.seed)
        for rid in establish:
            self._got(rid, task.seed)
        return True

    def _own_game(self, task: Task, result, fault) -> None:
        phase, c = self.phase, task.driver
        if c in phase.failed:
            return
        if fault:
            phase._fail(fault.runtime_id, fault.message)
            self._stop_progress(c, fault.message)
            return
        episode, seconds, tallies, margins, twins = result
        tallies = {rid: t for rid, t in tallies.items() if rid not in phase.failed}
        establish = [
            rid for rid, t in tallies.items() if not t.error and t.first_flip is None and t.decisions == episode.steps
        ]
        phase.store.add_episode(
            c,
            episode,
            phase.design.step_cap,
            seconds,
            tallies,
            margins,
            establish=establish,
            twins=_kept(twins, c, tallies),
        )
        for rid in (c, *establish):
            self._got(rid, task.seed)

    # -- progress: one line per runtime, episodes done (played or established) of those the look owes ----------
    def _open_progress(self, stack, reference_games: int) -> None:
        phase, k = self.phase, self.k
        ref = phase.reference
        owed = {ref: reference_games}
        for c in self.active:
            owed[c] = sum(s not in self.have[c] for s in self.seeds)
        for rid, total in owed.items():
            if not total:
                continue
            label = (
                f"play look {k + 1}: {ref}" + (f" + {len(self.active)} shadowing" if self.active else "")
                if rid == ref
                else f"play look {k + 1}: {rid}, own games or taken by the reuse rule"
            )
            closable = ClosablePhase(phase.ui.phase(label, total, phase.players.in_flight))
            self.progress[rid] = [closable, stack.enter_context(closable), 0, total]

    def _got(self, rid: str, seed: int) -> None:
        new = rid == self.phase.reference or seed not in self.have[rid]
        self.have.setdefault(rid, set()).add(seed)
        p = self.progress.get(rid)
        if p is None or not new:
            return
        p[1](1)
        p[2] += 1
        if p[2] >= p[3]:
            p[0].close()

    def _stop_progress(self, rid: str, why: str) -> None:
        p = self.progress.get(rid)
        if p is not None:
            p[0].close(RuntimeError(why))


def _kept(twins: dict, driver: str, tallies: dict) -> dict:
    """The twin counts of the game's driver and of the shadows whose tallies are stored."""
    return {rid: c for rid, c in twins.items() if rid == driver or rid in tallies}
