"""Stopping a run cleanly: Ctrl-C (SIGINT), SIGTERM (a scheduler's timeout, ``kill``) and SIGHUP (the
terminal closed) all become one exception, ``Interrupted``, raised in the main thread, but never in the
middle of a write to the run's file: inside ``protected()`` the signal is held until the write is done.
"""

from __future__ import annotations

import signal
from contextlib import contextmanager

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Interrupted(KeyboardInterrupt):
    """The run was asked to stop by a signal (a KeyboardInterrupt, so Ctrl-C handling covers it)."""

    def __init__(self, signal_name: str = "SIGINT"):
        super().__init__(signal_name)
        self.signal_name = signal_name
        self.exit_code = 128 + getattr(signal, signal_name, signal.SIGINT)


_state = {"depth": 0, "pending": None}


def _handler(signum, frame):
    name = signal.Signals(signum).name
    if _state["depth"]:
        _state["pending"] = _state["pending"] or name
        return
    raise Interrupted(name)


def hold() -> None:
    """Start a write that must complete; a stop signal arriving meanwhile waits for ``release``."""
    _state["depth"] += 1


def release() -> None:
    """End the write; raise the stop signal that arrived during it, if any."""
    _state["depth"] -= 1
    if not _state["depth"] and _state["pending"]:
        name, _state["pending"] = _state["pending"], None
        raise Interrupted(name)


@contextmanager
def protected():
    """``with protected(): ...``: ``hold`` and ``release`` around a block."""
    hold()
    try:
        yield
    finally:
        release()


@contextmanager
def stop_signals_raise():
    """While inside, SIGINT, SIGTERM and SIGHUP raise ``Interrupted`` (outside any ``protected`` write)."""
    previous = {s: signal.getsignal(s) for s in STOP_SIGNALS}
    for s in STOP_SIGNALS:
        signal.signal(s, _handler)
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
        _state["pending"], _state["depth"] = None, 0


def ignore_stop_signals() -> None:
    """In play worker processes: the main process decides when to stop and stops them itself."""
    for s in STOP_SIGNALS:
        signal.signal(s, signal.SIG_IGN)
