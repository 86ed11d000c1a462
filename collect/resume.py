"""``rtreport collect --resume FILE``: what a stored run needs to go on (its protocol comes from the file)."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import duckdb

from rtreport import schema
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


def check_same_run(run: dict, model, gpu_name: str | None) -> None:
    if model.sha256 != run["model_sha256"]:
        raise UserError(
            f"the run measured another model (sha256 {run['model_sha256'][:12]}); give the same "
            f"--model (this one is {model.sha256[:12]})"
        )
    if (run.get("gpu_name") or None) != (gpu_name or None):
        raise UserError(
            f"the run was measured on {run.get('gpu_name') or 'a machine without a GPU'}; continue it "
            f"there, not on {gpu_name or 'this machine without a GPU'}"
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
