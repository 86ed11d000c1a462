"""The run's DuckDB file: written under a temporary name beside ``--out`` and moved into place only when
the run ends (completed, interrupted or failed), so ``--out`` never holds a half-made file and
``--overwrite`` never removes the old one before there is a new one.

One lock per output file stops two collects from writing the same ``--out``: the second one is refused
with one line. The lock is ``flock`` on a small file beside ``--out``, released by the kernel when the
process ends however it ends, and removed by its holder (the inode check on acquiring makes that safe).
"""

from __future__ import annotations

import errno
import fcntl
import os
from pathlib import Path

from rtreport.errors import UserError

from .write_faults import as_cannot_write


class OutputFile:
    def __init__(
        self, out: Path, overwrite: bool, say=lambda line: None, resuming: Path | None = None, copy: bool = False
    ):
        """``resuming``: the file a ``--resume`` continues; if it is a partial of this very name (a process id
        used again), it is continued in place rather than removed. ``copy``: the partial file is a working copy of
        ``out`` that only a whole result replaces it with (a repeat's): ``.OUT.PID.copy``, never taken for a
        stopped run, and removed by the next collect to ``out`` if its process was killed."""
        self.out, self.say, self.resuming = Path(out), say, resuming
        self.overwrite = overwrite
        self.partial = self.out.with_name(f".{self.out.name}.{os.getpid()}.{'copy' if copy else 'partial'}")
        self.lock_path = self.out.with_name(f".{self.out.name}.lock")
        self._lock_fd: int | None = None

    # -- before the run -------------------------------------------------------------------------
    def __enter__(self) -> "OutputFile":
        out = self.out
        if out.is_dir():
            raise UserError(f"--out {out} is a folder; give a file name")
        parent = out.parent
        if not parent.is_dir():
            raise UserError(f"cannot write {out}: folder {parent} does not exist")
        if not os.access(parent, os.W_OK):
            raise UserError(f"cannot write {out}: folder {parent} is not writable")
        self._lock()
        try:
            for left in stale_copies(out):  # under the lock: no live collect of this file is using them
                left.unlink(missing_ok=True)
                if not left.name.endswith(".wal"):
                    pid = left.name[len(out.name) + 2 :].partition(".")[0]
                    self.say(f"note: removed {left}, a working file of a collect (pid {pid}) that was killed")
            if out.exists() and not self.overwrite:
                raise UserError(f"{out} already exists; pass --overwrite to replace it, or choose another --out")
            if self.resuming != self.partial:
                self.remove_partial()
        except BaseException:
            self._unlock()
            raise
        return self

    def stale_partials(self) -> list[Path]:
        """Partial files of earlier runs to this ``--out`` whose process is gone: see ``stale_partials``."""
        return [p for p in stale_partials(self.out) if p != self.partial]

    def _lock(self) -> None:
        before = _read_pid(self.lock_path)  # a lock file left by a process that was killed outright
        while True:
            try:
                fd = os.open(self.lock_path, os.O_CREAT | os.O_RDWR, 0o644)
            except OSError as e:  # a folder that takes no new file (/proc, a read-only mount as root)
                why = e.strerror or str(e)
                raise UserError(
                    f"cannot write {self.out}: folder {self.out.parent} takes no new file ({why})"
                ) from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as e:
                os.close(fd)
                if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                    holder = _read_pid(self.lock_path)
                    raise UserError(
                        f"another rtreport collect{f' (pid {holder})' if holder else ''} is writing "
                        f"{self.out}; wait for it to finish or choose another --out"
                    ) from None
                raise
            try:  # the holder before us may have removed the file after we opened it: lock the current one
                same = os.fstat(fd).st_ino == os.stat(self.lock_path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                if before and before.isdigit() and int(before) != os.getpid() and not _alive(int(before)):
                    self.say(f"note: took over {self.lock_path} from pid {before}, which is no longer running")
                self._lock_fd = fd
                try:
                    os.ftruncate(fd, 0)
                    os.write(fd, f"{os.getpid()}\n".encode())
                except OSError as e:  # a full or read-only disk: no lock file left behind
                    self._unlock()
                    raise as_cannot_write(e, self.lock_path) or e
                return
            os.close(fd)

    def _unlock(self) -> None:
        if self._lock_fd is not None:
            self.lock_path.unlink(missing_ok=True)
            os.close(self._lock_fd)
            self._lock_fd = None

    # -- after the run --------------------------------------------------------------------------
    def commit(self) -> Path:
        """Move the finished (closed) partial file to ``--out``; returns where the run now is.

        Without --overwrite a file that appeared at ``--out`` meanwhile (not through rtreport, which
        holds the lock) is not replaced: the run stays in its partial file and the user is told."""
        # A write-ahead log beside --out belongs to the file being replaced (the finished partial file has none:
        # closing it checkpointed its log); left there, DuckDB would replay it into the new file.
        stale_wal = self.out.with_name(self.out.name + ".wal")
        from .store import compact

        compact(self.partial)  # without DuckDB's free blocks; left as it is if that fails
        if self.overwrite:
            stale_wal.unlink(missing_ok=True)
            os.replace(self.partial, self.out)
            return self.out
        try:
            os.link(self.partial, self.out)
        except FileExistsError:
            raise UserError(
                f"{self.out} appeared while this run was measuring and was not replaced; "
                f"this run is kept in {self.partial}"
            ) from None
        except OSError:  # a file system without hard links: check, then rename
            if self.out.exists():
                raise UserError(
                    f"{self.out} appeared while this run was measuring and was not replaced; "
                    f"this run is kept in {self.partial}"
                ) from None
            os.replace(self.partial, self.out)
            return self.out
        self.partial.unlink()
        return self.out

    def remove_partial(self, partial: Path | None = None) -> None:
        """Remove a partial file (this run's, or a killed run's now continued in ``--out``) and its log."""
        partial = partial or self.partial
        for p in (partial, partial.with_name(partial.name + ".wal")):
            p.unlink(missing_ok=True)

    def __exit__(self, *exc) -> None:
        self._unlock()


def stale_partials(out: Path) -> list[Path]:
    """Partial files of runs to ``out`` whose process is gone (killed, power loss, a write that failed; or this
    very process, which is not writing them): what they measured is still there, readable by ``rtreport build``,
    and ``--resume`` continues the newest."""
    found = []
    for p in sorted(out.parent.glob(f".{out.name}.*.partial")):
        pid = p.name[len(out.name) + 2 : -len(".partial")]
        if pid.isdigit() and (int(pid) == os.getpid() or not _alive(int(pid))):
            found.append(p)
    return found


LEFTOVER_KINDS = ("copy", "copy.wal", "copy.compact", "copy.compact.wal", "partial.compact", "partial.compact.wal")


def stale_copies(out: Path) -> list[Path]:
    """Working files beside ``out`` whose process is gone (killed outright): a repeat's working copy of ``out``
    (``.OUT.PID.copy`` and its ``.wal``; ``out`` itself was never touched, so it holds nothing to keep) and the
    compacted copy being made of a finished file (``….compact``). Never a stopped run's ``.OUT.PID.partial``."""
    found = []
    for p in sorted(out.parent.glob(f".{out.name}.*")):
        pid, _, kind = p.name[len(out.name) + 2 :].partition(".")
        if kind in LEFTOVER_KINDS and pid.isdigit() and (int(pid) == os.getpid() or not _alive(int(pid))):
            found.append(p)
    return found


def _read_pid(path: Path) -> str | None:
    try:
        return path.read_text().strip() or None
    except OSError:
        return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
