"""A cache of each file's runs and statistics (``analyse``'s results), so a rebuild reads and analyses only the
files that changed (docs/build-speed.md).

An entry is found by a key that covers everything its content depends on: the SHA-256 of the file's bytes (and of
its ``.wal`` log, which DuckDB replays when it opens the file), the code that reads and analyses it (every source
file of ``site_gen`` and ``rtreport``, and the versions of Python, NumPy and DuckDB), the gates and
``--allow-invalid``. So a hit gives what loading and analysing the file would give, and the site is the same byte
for byte (``tests/test_build_cache.py``). Where the entry lives: ``$RTREPORT_CACHE_DIR``, else
``$XDG_CACHE_HOME/rtreport``, else ``~/.cache/rtreport``. Entries are pickles, read only when the current user
owns them; one that cannot be read is a miss, and a cache that cannot be written is skipped, never an error.
Entries not used for ``KEEP_DAYS`` are removed when a build writes a new one.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sys
import time
from pathlib import Path

FORMAT = "runs-v1"  # the folder of this layout: a new layout takes a new name
KEEP_DAYS = 30
_PACKAGES = ("site_gen", "rtreport")


def cache_dir() -> Path:
    if os.environ.get("RTREPORT_CACHE_DIR"):
        return Path(os.environ["RTREPORT_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "rtreport"


def unusable(folder: Path | None = None) -> str | None:
    """Why the cache's folder cannot hold entries (a file where it or a folder above it should be), else None."""
    folder = folder or cache_dir()
    for at in (folder, *folder.parents):
        if at.exists():
            if at.is_dir():
                return None
            named = "(RTREPORT_CACHE_DIR) " if os.environ.get("RTREPORT_CACHE_DIR") else ""
            return (
                f"the build cache's folder {named}{folder} cannot be made: {at} is a file; built without the cache "
                "(move the file, or set RTREPORT_CACHE_DIR to a folder)"
            )
    return None


def code_version() -> str:
    """A digest of the source that turns a file into its results, and of the libraries that do the numbers."""
    import duckdb
    import numpy

    h = hashlib.sha256(f"{sys.version}|{numpy.__version__}|{duckdb.__version__}".encode())
    root = Path(__file__).resolve().parents[1]
    for package in _PACKAGES:
        for path in sorted((root / package).rglob("*")):
            if path.suffix in (".py", ".toml", ".json", ".po") and path.is_file() and "__pycache__" not in path.parts:
                h.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def file_digest(path: Path) -> str:
    h = hashlib.sha256()
    for part in (path, path.with_name(path.name + ".wal")):
        h.update(b"file\0" if part.is_file() else b"none\0")
        if part.is_file():
            with open(part, "rb") as f:
                while chunk := f.read(1 << 20):
                    h.update(chunk)
        h.update(b"\0|\0")
    return h.hexdigest()


class RunCache:
    """``get(path)``: the file's ``RunResult`` list, or None; ``put(path, results)`` after analysing it."""

    def __init__(self, gates, allow_invalid: bool, folder: Path | None = None):
        self.gates = gates
        self.folder = (folder or cache_dir()) / FORMAT
        self.salt = f"{code_version()}|{gates!r}|{bool(allow_invalid)}"
        self.hits = self.misses = 0
        self._keys: dict[Path, str] = {}

    def _entry(self, path: Path) -> Path:
        if path not in self._keys:
            self._keys[path] = hashlib.sha256(f"{self.salt}|{file_digest(path)}".encode()).hexdigest()
        return self.folder / f"{self._keys[path]}.pickle"

    def get(self, path: Path) -> list | None:
        entry = self._entry(Path(path))
        try:
            if hasattr(os, "getuid") and entry.stat().st_uid != os.getuid():
                raise OSError("not the current user's")
            results = pickle.loads(entry.read_bytes())
            os.utime(entry)
        except Exception:
            self.misses += 1
            return None
        for res in results:  # what depends on where the file is, not on what it holds
            res.rows.source = Path(path)
            res.gates = self.gates
        self.hits += 1
        return results

    def put(self, path: Path, results: list) -> None:
        entry = self._entry(Path(path))
        tmp = entry.with_name(f".{entry.name}.{os.getpid()}.tmp")
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            tmp.write_bytes(pickle.dumps(results, protocol=pickle.HIGHEST_PROTOCOL))
            os.replace(tmp, entry)
            self._prune()
        except BaseException as e:  # a stop signal too (then raised on): no half-written entry is left
            try:
                tmp.unlink(missing_ok=True)
            except OSError:  # e.g. the cache's folder is a file: nothing was written
                pass
            if not isinstance(e, Exception):
                raise

    def _prune(self) -> None:
        """Entries not used for ``KEEP_DAYS``, and entries half-written by builds killed outright (their process
        gone)."""
        old = time.time() - KEEP_DAYS * 86400
        for entry in self.folder.glob("*.pickle"):
            try:
                if entry.stat().st_mtime < old:
                    entry.unlink()
            except OSError:
                pass
        for tmp in self.folder.glob(".*.pickle.*.tmp"):
            pid = tmp.name.rsplit(".", 2)[-2]
            if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
                tmp.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
