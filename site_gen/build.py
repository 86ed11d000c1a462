"""``rtreport build``: DuckDB files in, a static bilingual site out (byte-deterministic, no network)."""

from __future__ import annotations

import os
import re
import shutil
import signal
import threading
from contextlib import contextmanager
from pathlib import Path

from rtreport.errors import UserError

from .analysis import analyse
from .cache import RunCache
from .load import load_file
from .render import MARKER, render_site
from .verdict import Gates


def find_inputs(items: list[Path]) -> list[Path]:
    """DuckDB files from files and folders (a folder: every ``*.duckdb`` directly inside it)."""
    files = []
    for item in map(Path, items):
        if item.is_dir():
            found = sorted(item.glob("*.duckdb"))
            if not found:
                left = skipped_notes([item])
                raise UserError(
                    f"{item} holds no .duckdb files: run rtreport collect first, or give the files"
                    + "".join(f"; {note}" for note in left)
                )
            files += found
        elif item.exists():
            files.append(item)
        elif item == Path("data") and len(items) == 1:
            raise UserError(
                "no ./data folder here: run rtreport build where rtreport collect wrote data/, "
                "or give the DuckDB files or folders to build from"
            )
        else:
            raise UserError(f"{item}: no such file or folder")
    return files


def skipped_notes(items: list[Path]) -> list[str]:
    """One line per hidden partial file in the folders given (``.NAME.duckdb.PID.partial``, which ``*.duckdb``
    does not match): a run still being written, or one that stopped unexpectedly, and what to do with it."""
    notes = []
    for folder in (Path(i) for i in items):
        if not folder.is_dir():
            continue
        for p in sorted(folder.glob(".*.duckdb.*.partial")):
            m = re.fullmatch(r"\.(.+\.duckdb)\.(\d+)\.partial", p.name)
            if not m:
                continue
            out, pid = folder / m.group(1), int(m.group(2))
            if _alive(pid):
                notes.append(f"skipped {p}: a collect (pid {pid}) is still writing it; build it when that run ends")
            elif not p.with_name(p.name + ".wal").exists() and p.stat().st_size <= 1 << 20:
                notes.append(
                    f"skipped {p}: a run to {out.name} that stopped unexpectedly, and its log {p.name}.wal, "
                    "which held what it measured, is gone; rtreport build " + str(p) + " says what is left"
                )
            else:
                notes.append(
                    f"skipped {p}: a run to {out.name} that stopped unexpectedly (pid {pid} is gone); "
                    f"rtreport collect --resume {out} continues it, rtreport build {p} publishes it"
                )
    return notes


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return pid != os.getpid()


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Stopped(KeyboardInterrupt):
    """The build was asked to stop by a signal: Ctrl-C (SIGINT), SIGTERM or SIGHUP (a KeyboardInterrupt, so that
    every clean-up for Ctrl-C covers it). ``finished``: it came while the new site was being swapped in, which was
    completed first."""

    def __init__(self, signal_name: str = "SIGINT", finished: bool = False):
        super().__init__(signal_name)
        self.signal_name, self.finished = signal_name, finished
        self.exit_code = 128 + int(getattr(signal, signal_name, signal.SIGINT))

    def line(self, out: Path) -> str:
        if self.finished:
            return f"build stopped by {self.signal_name} as it ended: {out} holds the new site, complete"
        before = f"the site in {out} is unchanged" if Path(out).exists() else f"{out} was not created"
        return f"build stopped by {self.signal_name}: {before}, and nothing of this build is left"


_stop: dict = {"held": 0, "pending": None}


def _on_stop_signal(signum, frame):
    name = signal.Signals(signum).name
    if _stop["held"]:
        _stop["pending"] = _stop["pending"] or name
        return
    raise Stopped(name)


@contextmanager
def stop_signals_raise():
    """While inside, SIGINT, SIGTERM and SIGHUP raise ``Stopped`` (held back inside ``_held``: a swap or a
    clean-up is never cut in half). Only the main thread can take signals: elsewhere this changes nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.getsignal(s) for s in STOP_SIGNALS}
    for s in STOP_SIGNALS:
        signal.signal(s, _on_stop_signal)
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
        _stop.update(held=0, pending=None)


@contextmanager
def _held():
    _stop["held"] += 1
    try:
        yield
    finally:
        _stop["held"] -= 1


def _raise_held_stop(finished: bool) -> None:
    """A stop signal that came while held: raised now (``finished``: the new site is in place)."""
    if not _stop["held"] and _stop["pending"]:
        name, _stop["pending"] = _stop["pending"], None
        raise Stopped(name, finished)


_LEFTOVER = re.compile(r"\.(.+)\.(building|old|probe)-(\d+)")


def remove_leftovers(out: Path, notes: list | None = None) -> None:
    """Remove what builds into ``out`` left beside it when they were killed outright (SIGKILL, power loss): their
    working folders ``.OUT.building-PID``, previous sites ``.OUT.old-PID`` and probes ``.OUT.probe-PID``, where
    process PID is no longer running (a live build's are left alone). A build killed between its two renames left
    no ``out`` and its previous site in ``.OUT.old-PID``: that is put back first."""
    parent = out.parent
    if not parent.is_dir():
        return
    for path in sorted(parent.glob(f".{glob_escape(out.name)}.*-*")):
        m = _LEFTOVER.fullmatch(path.name)
        if not m or m.group(1) != out.name or _alive(int(m.group(3))):
            continue
        pid, kind = m.group(3), m.group(2)
        if kind == "old" and not out.exists() and path.is_dir():
            os.replace(path, out)
            if notes is not None:
                notes.append(f"put back the site in {out}, left in {path.name} by a build (pid {pid}) that was killed")
            continue
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
        if notes is not None and not path.exists():
            notes.append(f"removed {path}, left by a build (pid {pid}) that is no longer running")


def glob_escape(name: str) -> str:
    return re.sub(r"([*?\[])", r"[\1]", name)


def _check_out(out: Path) -> None:
    """Only a folder that is absent, empty or built by rtreport before may be replaced."""
    here = Path.cwd().resolve()
    if out.resolve() == here or out.resolve() in here.parents:
        raise UserError(
            f"--out {out} is the folder you are in (or holds it), and a build replaces its --out folder "
            "as a whole; give a folder inside it, e.g. --out site"
        )
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out} is a file, not a folder")
    if out.is_dir():
        entries = [p.name for p in out.iterdir() if p.name != ".gitkeep"]
        if entries and MARKER not in entries:
            raise UserError(f"--out {out} is not empty and was not built by rtreport; choose an empty folder")
    if not out.parent.is_dir():
        raise UserError(f"--out {out}: folder {out.parent} does not exist")
    probe = out.with_name(f".{out.name}.probe-{os.getpid()}")  # the site is built beside --out, then swapped in
    try:
        with _held():
            probe.mkdir()
            probe.rmdir()
    except OSError as e:
        raise UserError(
            f"cannot write --out {out}: folder {out.parent} takes no new folder ({e.strerror or e})"
        ) from None
    _raise_held_stop(finished=False)


MANIFEST = ".rtreport-manifest"  # every file the build wrote, one relative path a line: the others are the user's


def _files(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file() or p.is_symlink())


def _users_files(out: Path, new: Path) -> list[str]:
    """Files in the previous site that rtreport did not write (a CNAME, a .nojekyll, a .gitkeep): by its manifest;
    a site built before manifests existed: files outside every top-level entry the new build writes."""
    if not out.is_dir():
        return []
    old = _files(out)
    manifest = out / MANIFEST
    if manifest.is_file():
        ours = set(manifest.read_text().splitlines()) | {MANIFEST}
        return [f for f in old if f not in ours]
    tops = {p.name for p in new.iterdir()}
    return [f for f in old if f.split("/", 1)[0] not in tops and f != MARKER]


def _swap_in(new: Path, out: Path, notes: list | None = None) -> None:
    """Replace ``out`` by the finished ``new`` folder: two renames, so a reader never sees half a site. Files
    rtreport did not write there are carried over into the new site first (the new build's own files win)."""
    (new / MANIFEST).write_text("".join(f"{f}\n" for f in _files(new)))
    kept = [f for f in _users_files(out, new) if not (new / f).exists()]
    for f in kept:
        (new / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(out / f, new / f, follow_symlinks=False)
    told = [f for f in kept if f != ".gitkeep"]  # the checkout's own placeholder for site/ goes without saying
    if told and notes is not None:
        notes.append(
            f"kept {len(told)} file{'s' * (len(told) != 1)} in {out} that rtreport did not write: "
            + ", ".join(told[:5])
            + (", …" if len(told) > 5 else "")
        )
    old = out.with_name(f".{out.name}.old-{os.getpid()}")
    if out.exists():
        os.replace(out, old)
    try:
        os.replace(new, out)
    except BaseException:
        if old.exists():
            os.replace(old, out)
        raise
    if old.exists():
        shutil.rmtree(old, ignore_errors=True)


def load_runs(
    db_paths: list[Path],
    allow_invalid: bool = False,
    notes: list | None = None,
    cache: RunCache | None = None,
    ready: dict | None = None,
) -> list:
    """Every file's run, or one error line per file that cannot be used (all of them, not just the first).
    ``notes`` gets a line for each run published although not complete, and why. A file found in ``cache``
    is not read: ``ready`` gets its runs' results, by ``id`` of the run."""
    runs, errors = [], []
    for path in db_paths:
        try:
            found = cache.get(Path(path)) if cache is not None else None
            if found is None:
                runs += load_file(Path(path), allow_invalid)
                continue
            runs += [res.rows for res in found]
            if ready is not None:
                ready.update({id(res.rows): res for res in found})
        except UserError as e:
            errors.append(str(e))
    seen: dict[str, Path] = {}
    for run in runs:
        rid = run.run["run_id"]
        if rid in seen:
            errors.append(f"the same run ({rid}) is given twice: {seen[rid]} and {run.source}; give it once")
        seen.setdefault(rid, run.source)
    if errors:
        raise UserError("\n".join(errors))
    for run in runs:
        status, detail = run.run["status"], run.run.get("status_detail")
        if notes is not None and status != "complete":
            why = "stopped unexpectedly (still marked running)" if status == "running" else (detail or status)
            notes.append(f"published {run.source} as {status}: {why}")
    return runs


def display_labels(runs) -> list[str]:
    """Each run's label as its user typed it; runs that share a label are told apart by date and file."""
    counts: dict[str, int] = {}
    for run in runs:
        counts[run.run["label"]] = counts.get(run.run["label"], 0) + 1
    return [
        run.run["label"]
        if counts[run.run["label"]] == 1
        else f"{run.run['label']} ({str(run.run['started_at'])[:16]}, {run.source.name})"
        for run in runs
    ]


def build_site(
    db_paths: list[Path],
    out: Path,
    gates_path: Path | None = None,
    allow_invalid: bool = False,
    base_url: str | None = None,
    notes: list | None = None,
    use_cache: bool = True,
) -> list[Path]:
    """Build into a temporary folder beside ``out`` and swap it in once every page is written; on any
    failure the previous site stays as it was. Files analysed before are taken from the cache (``cache.py``)."""
    if not db_paths:
        raise UserError("no DuckDB files to build from (give paths, or run rtreport collect first)")
    gates = Gates.load(gates_path)  # a GatesError names every problem of the file
    out = Path(out)
    _check_out(out)
    from .cache import unusable

    why_no_cache = unusable() if use_cache else None
    if why_no_cache and notes is not None:
        notes.append(why_no_cache)
    cache, ready = RunCache(gates, allow_invalid) if use_cache and not why_no_cache else None, {}
    runs = load_runs(sorted(db_paths, key=lambda p: Path(p).name), allow_invalid, notes, cache, ready)
    tmp = out.with_name(f".{out.name}.building-{os.getpid()}")
    with _held():
        remove_leftovers(out, notes)  # this process's own too: a process id used again
    _raise_held_stop(finished=False)
    doing = {"what": "starting", "source": None}
    try:
        for run, label in zip(runs, display_labels(runs)):
            run.run["display_label"] = label
        results = []
        for run in runs:
            doing.update(what="analysing", source=run.source)
            results.append(ready.get(id(run)) or analyse(run, gates))
        if cache is not None:
            for source in dict.fromkeys(r.rows.source for r in results if id(r.rows) not in ready):
                cache.put(source, [r for r in results if r.rows.source == source])
        written = render_site(results, tmp, gates, gates_path, doing, base_url)
        with _held():  # a stop signal now waits until the new site is in place (or the old one back)
            _swap_in(tmp, out, notes)
    except (UserError, KeyboardInterrupt):
        with _held():
            shutil.rmtree(tmp, ignore_errors=True)
        raise
    except Exception as e:
        with _held():
            shutil.rmtree(tmp, ignore_errors=True)
        source = f" from {doing['source']}" if doing["source"] else ""
        first = (str(e).strip().splitlines() or [""])[0][:200]
        raise UserError(
            f"build failed {doing['what']}{source} ({type(e).__name__}: {first}); the site in {out} is unchanged"
        ) from None
    _raise_held_stop(finished=True)
    return [out / p.relative_to(tmp) for p in written]
