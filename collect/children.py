"""Child processes end with the collect that started them: the repeats' fresh processes (``after_run.py``) and the
play processes (``play/pool.py``). On Linux each asks the kernel for a signal when its parent dies
(``prctl(PR_SET_PDEATHSIG)``), so that a collect killed outright (SIGKILL, the OOM killer) leaves no process
measuring on, holding the run file's lock or loading the machine, and a ``collect --resume`` right after is
accepted. The kernel sends it when the *thread* that started the child ends: children are started from the main
thread. A parent that died before the request was made is caught by comparing ``os.getppid()`` with the parent
the child expects. Elsewhere (not Linux) nothing is asked: play processes still end once idle, when they see their
parent gone (``play/worker.py``)."""

from __future__ import annotations

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1


def _prctl():
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


def end_with_parent(sig: int, parent: int) -> bool:
    """In the child: receive ``sig`` when the parent (process ``parent``) dies; if it is gone already, ``sig`` now.
    Returns whether the kernel took the request."""
    prctl = _prctl()
    taken = bool(prctl) and prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0
    if os.getppid() != parent:
        os.kill(os.getpid(), sig)
    return taken


def preexec(sig: int = signal.SIGTERM):
    """A ``preexec_fn`` for ``subprocess.Popen`` (called in the parent's main thread): the child gets ``sig`` when
    this process dies. The libc function is looked up here, before the fork, so that the child only calls it."""
    parent, prctl = os.getpid(), _prctl()

    def child() -> None:
        if prctl is not None:
            prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
        if os.getppid() != parent:
            os.kill(os.getpid(), sig)

    return child
