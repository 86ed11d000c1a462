"""``rtreport collect --resume FILE``: what a stored run needs to go on (its protocol comes from the file)."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import duckdb

from rtreport import integrity, schema
from rtreport.errors import UserError

from .collector import PROFILES


def find_source(out: Path) -> Path:
    """What ``--resume OUT`` continues: OUT, or the newest hidden partial file that a run aimed at OUT left when
    it was killed or could not write (``.OUT.PID.partial``, its process gone), if there is no OUT or it is newer
    (a run with ``--overwrite`` meant to replace OUT)."""
    from .outfile import stale_partials

    partials = [p for p in stale_partials(out) if p.is_file()]

    def changed(p: Path) -> float:  # a run's rows may sit in its log, written after the file itself
        wal = p.with_name(p.name + ".wal")
        return max(p.stat().st_mtime, wal.stat().st_mtime if wal.is_file() else 0)

    partials.sort(key=changed, reverse=True)
    if not partials:
        return out
    newest = partials[0]
    return newest if not out.is_file() or changed(newest) >= out.stat().st_mtime else out


def read_run(path: Path, option: str = "--resume") -> dict:
    """The run row of a file collect can continue (``option``: --resume or --repeat); one clear line for one it
    cannot."""
    if path.is_dir():
        raise UserError(f"{option} {path}: a folder, not a run file")
    if not path.is_file():
        raise UserError(f"{option} {path}: no such file")
    try:
        con = duckdb.connect(str(path), read_only=True)
    except duckdb.Error as e:
        raise UserError(f"{option} {path}: {_cannot_open(e)}") from None
    try:
        tables = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
        meta = dict(con.execute("SELECT key, value FROM meta").fetchall()) if "meta" in tables else {}
        if meta.get("application") != schema.APPLICATION:
            raise UserError(
                f"{option} {path}: a DuckDB file, but not one written by rtreport collect; give the run file "
                "collect wrote, or start a new run with another --out"
            )
        text = str(meta.get("schema_version", ""))
        if text.isdigit() and int(text) > schema.SCHEMA_VERSION:
            raise UserError(
                f"{option} {path}: schema version {text}, newer than this rtreport reads "
                f"({schema.SCHEMA_VERSION}); upgrade rtreport"
            )
        if meta.get("schema_version") not in [str(v) for v in schema.CONTINUABLE]:
            raise UserError(
                f"{option} {path}: schema version {meta.get('schema_version')} cannot be continued by "
                f"this rtreport (schema {schema.SCHEMA_VERSION}); start a new run"
            )
        cur = con.execute("SELECT * FROM runs")
        rows = cur.fetchall()
        if len(rows) != 1:
            raise UserError(f"{option} {path}: holds {len(rows)} runs; resume a file with one")
        run = dict(zip([d[0] for d in cur.description], rows[0]))
        run["integrity_note"] = _verified(con, run["run_id"], path, option)
    except duckdb.Error as e:
        raise UserError(f"{option} {path}: {_cannot_open(e)}") from None
    finally:
        con.close()
    run["settings"] = json.loads(run["settings"] or "{}")
    if run["profile"] not in PROFILES:
        raise UserError(f"{option} {path}: unknown profile {run['profile']!r}")
    return run


def _cannot_open(e: Exception) -> str:
    """DuckDB's refusal of a file, as what is wrong with it and what to do."""
    text = (str(e).strip().splitlines() or [type(e).__name__])[0][:160]
    if "Could not set lock" in text or "Conflicting lock" in text:
        return "open for writing in another process (a collect still running?); wait for it to end"
    if "not a valid DuckDB database" in text:
        return "not a DuckDB database file (or its header is damaged); give the run file collect wrote"
    if any(k in text for k in ("read enough bytes", "truncated", "Corrupt", "corrupt", "checksum")):
        return (
            "damaged or truncated: DuckDB cannot read it; copy it again from where it was measured, or start a new "
            "run with another --out"
        )
    if "Catalog Error" in text:
        return "a DuckDB file, but not one written by rtreport collect (it lacks rtreport's tables)"
    return f"DuckDB cannot read it ({text})"


def _verified(con, run_id: str, path: Path, option: str) -> str | None:
    """The run's rows checked against the checksums its last session recorded (``rtreport.integrity``, as
    ``rtreport check`` does): rows that fail them are refused (a session would seal them as its own); rows with
    none to check are continued, unsealed, and the note returned says so."""
    verdict = integrity.verify(con, run_id)
    if verdict.damaged:
        differ = [d.table for d in verdict.problems if d.kind == "contents"]
        said = [str(d) for d in verdict.problems if d.kind != "contents"]
        if differ:
            said.insert(0, f"the rows of {_listed(differ)} fail their checksum")
        raise UserError(
            f"{option} {path}: {'; '.join(said)} (edited or damaged since its last session ended): rtreport check "
            f"{path} shows what differs; restore the file (a copy from where it was measured) or start a new run"
        )
    if verdict.verified:
        return None
    why = verdict.note or (
        "it records no checksum of its rows (a run killed before its session ended, or a file made before "
        "checksums were recorded)"
    )
    return f"note: {path}: {why}; its rows cannot be verified, so this session records no checksum over them"


def _listed(words: list[str]) -> str:
    return ", ".join(words[:-1]) + " and " + words[-1] if len(words) > 1 else words[0]


MEMORY_TOLERANCE = 0.02  # memory of one kind of machine: a kernel of another boot may keep a little more for itself
KIND_FIELDS = {  # a machine's kind: what differs between two machines of one cloud instance type (none should)
    "cpu": "CPU model",
    "cpu_count": "logical core count",
    "gpu_name": "GPU model",
    "gpu_count": "GPU count",
    "memory_bytes": "memory size",
}


def recorded_kind(run: dict) -> dict:
    """The kind of machine the run was made on, as far as its file records it (``settings.hardware`` came later)."""
    return {
        "cpu": run.get("cpu"),
        "cpu_count": run.get("cpu_count"),
        "gpu_name": run.get("gpu_name") or None,
        **(run["settings"].get("hardware") or {}),
    }


def other_kind(was: dict, here: dict) -> list[str]:
    """The fields of a machine's kind in which ``here`` differs from ``was``; one that ``was`` does not record (or
    memory this machine's OS does not say) is not compared; memory is the same within ``MEMORY_TOLERANCE``."""
    differ = []
    for key in KIND_FIELDS:
        a, b = was.get(key), here.get(key)
        if key not in was or (a is None and key != "gpu_name"):  # no GPU is recorded as None: compared
            continue
        if key == "memory_bytes":
            same = b is None or abs(a - b) <= MEMORY_TOLERANCE * max(a, b)
        else:
            same = a == b
        if not same:
            differ.append(key)
    return differ


def kind_in_words(kind: dict, keys) -> str:
    """A machine's kind in words, in the fields ``keys`` (those the run records)."""
    words = []
    if "cpu" in keys:
        words.append(kind.get("cpu") or "an unknown CPU")
    if "cpu_count" in keys:
        words.append(f"{kind.get('cpu_count')} logical cores")
    name, count = kind.get("gpu_name"), kind.get("gpu_count") if "gpu_count" in keys else None
    if not name and not count:
        words.append("no GPU")
    elif not name:
        words.append(f"{count} GPUs")
    else:
        words.append(f"{count} × {name}" if count else name)
    if "memory_bytes" in keys and kind.get("memory_bytes"):
        words.append(f"{kind['memory_bytes'] / 2**30:.1f} GiB of memory")
    return ", ".join(words)


def check_same_kind(run: dict, here: dict, option: str, path: Path) -> None:
    """A run goes on only on a machine of the kind it was made on (another boot or host name of that kind is one:
    its session and rounds record which); one line saying both where it is not."""
    was = recorded_kind(run)
    differ = other_kind(was, here)
    if differ:
        keys = [k for k in KIND_FIELDS if k in was]
        over = f" by more than {MEMORY_TOLERANCE * 100:g} %" if differ[-1] == "memory_bytes" else ""
        raise UserError(
            f"{option} {path}: the run was made on {kind_in_words(was, keys)}; this machine has "
            f"{kind_in_words(here, keys)} (the {_listed([KIND_FIELDS[k] for k in differ])} "
            f"differ{'s' if len(differ) == 1 else ''}{over}): continue it on a machine of its kind, or start a new run "
            "here"
        )


def model_given(run: dict, model_path, task, option: str, path: Path) -> None:
    """A run of another task than Breakout measured a model of its user's own: without --model, the shipped agent's file
    would be checked against that task (and named as the fault)."""
    if model_path is None and not task.is_breakout:
        raise UserError(
            f"{option} {path}: the run measured a model of your own ({run.get('model_format')}, sha256 "
            f"{str(run.get('model_sha256'))[:12]}) on {task.name}; give it again with --model"
        )


def check_same_run(run: dict, model) -> None:
    if model.sha256 != run["model_sha256"]:
        raise UserError(
            f"the run measured another model (sha256 {run['model_sha256'][:12]}); give the same "
            f"--model (this one is {model.sha256[:12]})"
        )


def profile_for(run: dict, rounds: int | None):
    settings = run["settings"]
    base = PROFILES[run["profile"]]
    fields = {
        k: tuple(v) if isinstance(v, list) else v
        for k, v in settings.items()
        if k in base.__dataclass_fields__ and k != "name"
    }
    profile = replace(base, **fields)
    if rounds is not None and rounds > profile.rounds:
        profile = replace(profile, rounds=rounds)
    return profile


def copy_for_writing(src: Path, partial: Path) -> None:
    """The run goes on in a copy (the partial file); the original stays as it was until the copy replaces it."""
    if Path(src) == Path(partial):  # a killed run's partial of this process's name: continued in place
        return
    shutil.copyfile(src, partial)
    wal = src.with_name(src.name + ".wal")
    if wal.exists():
        shutil.copyfile(wal, partial.with_name(partial.name + ".wal"))
