"""Progress of a collect run: live bars in a terminal, plain timestamped lines in a pipe or log, nothing
when quiet. Each phase of each runtime is one ``phase(description, total)`` block yielding ``tick(n)``."""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager


class Silent:
    def start(self):
        pass

    def stop(self):
        pass

    @contextmanager
    def phase(self, description: str, total: int, in_flight: int = 1):
        """``in_flight``: how many items are worked on at once (games in play): they finish in waves, so no
        time estimate is made before the first wave is in."""
        yield lambda n: None


class Bars(Silent):
    """rich's live progress bars (a terminal on stderr)."""

    def __init__(self, console):
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=console,
            transient=True,
        )

    def start(self):
        self.progress.start()

    def stop(self):
        self.progress.stop()

    @contextmanager
    def phase(self, description: str, total: int, in_flight: int = 1):
        task = self.progress.add_task(description, total=total)
        try:
            yield lambda n: self.progress.advance(task, n)
        finally:
            self.progress.remove_task(task)


class Lines(Silent):
    """One line per finished phase with the run's elapsed time; long phases also report every ``every``
    seconds how far they are, with an estimate of the time left. Between ``start`` and ``stop`` a watcher thread
    makes sure no ``every`` seconds pass without a line, even when a phase makes no progress it can count (play
    waiting for its first games, a slow prepare) or nothing is in a phase at all."""

    def __init__(self, echo, every: float = 30.0, clock=time.monotonic):
        self.echo, self.every, self.clock = echo, every, clock
        self.t0 = clock()
        self._lock = threading.Lock()
        self._active: dict[int, list] = {}  # id -> [description, done, total, phase start, last line]
        self._last = clock()  # the last line of any kind
        self._stopped: threading.Event | None = None

    def _say(self, line: str) -> None:
        with self._lock:
            self._last = self.clock()
            self.echo(line)

    def _stamp(self) -> str:
        return f"[{_duration(self.clock() - self.t0):>8}]"

    def start(self):
        self._stopped = threading.Event()
        threading.Thread(target=self._watch, args=(self._stopped,), daemon=True, name="progress-watch").start()

    def stop(self):
        if self._stopped is not None:
            self._stopped.set()
            self._stopped = None

    def _watch(self, stopped: threading.Event) -> None:
        while not stopped.wait(min(1.0, self.every / 4)):
            now = self.clock()
            quiet = [p for p in list(self._active.values()) if now - p[4] >= self.every]
            for p in quiet:
                p[4] = now
                self._say(
                    f"{self._stamp()} {p[0]}: {p[1]}/{p[2]}, still working ({_duration(now - p[3])} in this phase)"
                )
            if not self._active and now - self._last >= self.every:
                self._say(f"{self._stamp()} still working (between phases)")

    @contextmanager
    def phase(self, description: str, total: int, in_flight: int = 1):
        start = self.clock()
        state = [description, 0, total, start, start]
        key = id(state)
        self._active[key] = state

        def tick(n):
            state[1] += n
            done, now = state[1], self.clock()
            if now - state[4] >= self.every and 0 < done < total:
                state[4] = now
                if done < min(in_flight, total):
                    self._say(
                        f"{self._stamp()} {description}: {done}/{total}, the first {min(in_flight, total)} "
                        "in flight together"
                    )
                else:
                    left = (now - start) / done * (total - done)
                    self._say(f"{self._stamp()} {description}: {done}/{total}, about {_duration(left)} left")

        try:
            yield tick
        except Exception as e:  # the phase could not be done (a runtime not available here, or failing): why
            why = (str(e).strip().splitlines() or [type(e).__name__])[0]
            self._say(f"{self._stamp()} {description}: not done at {state[1]}/{total}: {why[:160]}")
            raise
        except BaseException:  # Ctrl-C, a stop signal
            self._say(f"{self._stamp()} {description}: stopped at {state[1]}/{total}")
            raise
        finally:
            self._active.pop(key, None)
        self._say(f"{self._stamp()} {description}: {total}/{total} in {_duration(self.clock() - start)}")


class ClosablePhase:
    """A progress phase (``ui.phase(...)``) that may end before the block it is entered in does: once, by ``close``
    (with the error that stopped it, if any), or else with that block."""

    def __init__(self, cm):
        self.cm, self.closed = cm, False

    def __enter__(self):
        return self.cm.__enter__()

    def close(self, error: BaseException | None = None) -> None:
        if not self.closed:
            self.closed = True
            self.cm.__exit__(type(error) if error else None, error, None)

    def __exit__(self, exc_type, exc, tb):
        if not self.closed:
            self.closed = True
            return self.cm.__exit__(exc_type, exc, tb)
        return False


def _duration(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, s = divmod(int(round(seconds)), 60)
    return f"{minutes} min {s:02d} s" if minutes < 60 else f"{minutes // 60} h {minutes % 60:02d} min"
