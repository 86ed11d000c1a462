"""Write faults: the errors that mean "this file or folder cannot be written" (a full disk, a quota, a read-only
file system, no permission), told apart from a runtime's own failure, whatever the phase."""

from __future__ import annotations

import errno
import os
import re

# The faults that mean "this file or folder cannot be written", whatever the phase: not a runtime's failure.
WRITE_ERRNOS = {
    errno.ENOSPC: "no space left on the device",
    errno.EDQUOT: "the disk quota is exceeded",
    errno.EROFS: "the file system is read-only",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
}


class CannotWrite(BaseException):
    """The run's file (or a folder it needs) cannot be written: no space, a quota, a read-only file system, no
    permission. A BaseException, like a stop signal, so that no runtime's failure handler records it as that
    runtime's fault: it ends the run, and what is already committed stays in the partial file."""

    def __init__(self, path, why: str):
        super().__init__(f"cannot write {path}: {why}")
        self.path, self.why = path, why


def write_problem(e: BaseException) -> str | None:
    """``"no space left on the device (ENOSPC)"`` and the like if ``e`` is a write fault (an OSError, or DuckDB's
    I/O error that carries the system's message); else None."""
    if isinstance(e, CannotWrite):
        return e.why
    if isinstance(e, OSError) and e.errno in WRITE_ERRNOS:
        return f"{WRITE_ERRNOS[e.errno]} ({errno.errorcode[e.errno]})"
    text = str(e)
    for number, why in WRITE_ERRNOS.items():
        if os.strerror(number) in text:
            return f"{why} ({errno.errorcode[number]})"
    return None


def as_cannot_write(e: BaseException, path) -> CannotWrite | None:
    """``e`` as a ``CannotWrite`` naming the file it was writing (DuckDB names it; else ``path``), or None."""
    why = write_problem(e)
    if why is None:
        return None
    found = re.search(r'(?:write|create|open|sync|truncate) file "([^"]+)"', str(e))
    return CannotWrite(getattr(e, "filename", None) or (found.group(1) if found else path), why)
