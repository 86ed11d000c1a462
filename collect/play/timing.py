"""Where a look's time goes, measured in the real protocol: every play process keeps running totals
(calls, seconds) of what it does, and the main process stores each process's totals at the end of every look in
the ``play_time`` table, so a look's share is the difference between two looks' totals.

Components of a play process: ``emulator step`` and ``emulator reset`` (the ALE and the observation), each
runtime's ``submit`` (the host's work to issue a decision), ``ready`` (asking, without waiting, whether it is
done) and ``fetch`` (mostly waiting for the GPU), ``waiting for a task`` (an idle slot: nothing queued), ``sending
results``; and ``wall`` and ``cpu`` (the process's own time since it began to play). The main process adds
``storing episodes`` (the database writes) and ``waiting for results``. What is left of a play process's wall
time is the engine's own Python (the ε draws, argmax, tallies). ``benchmarks/look_profile.py`` reads it back.
"""

from __future__ import annotations

import time

_clock = time.perf_counter


class Timings:
    def __init__(self):
        self.totals: dict = {}
        self.wall0, self.cpu0 = _clock(), time.process_time()

    def add(self, name: str, seconds: float, calls: int = 1) -> None:
        entry = self.totals.get(name)
        if entry is None:
            self.totals[name] = [calls, seconds]
        else:
            entry[0] += calls
            entry[1] += seconds

    def timed(self, name: str, f):
        def call(*a, **k):
            t = _clock()
            try:
                return f(*a, **k)
            finally:
                self.add(name, _clock() - t)

        return call

    def watch_envs(self, envs) -> None:
        """Time each emulator's ``step`` and ``reset`` (the envs are play's own, made for it)."""
        for env in envs:
            env.step, env.reset = self.timed("emulator step", env.step), self.timed("emulator reset", env.reset)

    def snapshot(self) -> dict:
        """{component: (calls, seconds)}, with this process's wall and CPU seconds since it began."""
        out = {name: (calls, seconds) for name, (calls, seconds) in self.totals.items()}
        out["wall"] = (1, _clock() - self.wall0)
        out["cpu"] = (1, time.process_time() - self.cpu0)
        return out


class TimedRunner:
    """A prepared runner whose ``submit``/``ready``/``fetch`` add to ``timings`` (the engine's loop uses it; the
    slots are opened on the runner itself)."""

    __slots__ = ("_runner", "_timings", "_names")

    def __init__(self, runner, rid: str, timings: Timings):
        self._runner, self._timings = runner, timings
        self._names = (f"{rid} submit", f"{rid} ready", f"{rid} fetch")

    def submit(self, slot, batch):
        t = _clock()
        try:
            return self._runner.submit(slot, batch)
        finally:
            self._timings.add(self._names[0], _clock() - t)

    def ready(self, slot):
        t = _clock()
        try:
            return self._runner.ready(slot)
        finally:
            self._timings.add(self._names[1], _clock() - t)

    def fetch(self, slot):
        t = _clock()
        try:
            return self._runner.fetch(slot)
        finally:
            self._timings.add(self._names[2], _clock() - t)

    def __getattr__(self, name):
        return getattr(self._runner, name)


def timed_runners(runners: dict, timings: Timings | None) -> dict:
    if timings is None:
        return runners
    return {rid: r if isinstance(r, str) else TimedRunner(r, rid, timings) for rid, r in runners.items()}


def look_rows(run_id: str, session: int, look: int, per_process: dict) -> list[tuple]:
    """``play_time`` rows: (run_id, session, look, process, component, calls, seconds); ``per_process``:
    {process number: ``Timings.snapshot()``} (0: the main process)."""
    return [
        (run_id, session, look, int(p), name, int(calls), float(seconds))
        for p, snap in sorted(per_process.items())
        for name, (calls, seconds) in sorted(snap.items())
    ]
