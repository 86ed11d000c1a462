"""Glue between the CLI and the Collector: input checks, the output file, progress, Ctrl-C."""
from __future__ import annotations

import os
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from . import paths
from .artifacts import Artifacts
from .collector import FULL, QUICK, Collector, default_label, new_run_id, sanitize_label
from .errors import UserError
from .model_input import load_model
from .runtimes import all_runtimes
from .store import RunStore
from .summary import summary_table


def list_runtimes_table(model_path) -> Table:
    model = load_model(model_path or paths.AGENT_WEIGHTS)
    table = Table(title="Runtimes rtreport knows")
    for col in ("id", "runtime", "on this machine"):
        table.add_column(col)
    for spec in all_runtimes():
        reason = spec.unavailable_reason(model)
        table.add_row(spec.info.runtime_id, spec.info.title, "yes" if reason is None else f"no: {reason}")
    return table


def _check_out(out: Path, overwrite: bool) -> None:
    if out.exists() and out.is_dir():
        raise UserError(f"--out {out} is a folder; give a file name")
    if out.exists() and not overwrite:
        raise UserError(f"{out} already exists; pass --overwrite to replace it, or choose another --out")
    parent = out.parent if str(out.parent) else Path(".")
    if not parent.is_dir():
        raise UserError(f"cannot write {out}: folder {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise UserError(f"cannot write {out}: folder {parent} is not writable")


def run_collect(model_path, runtime_list, out, overwrite, label, cuda_index, artifacts, quick, quiet,
                play_workers=None) -> int:
    model = load_model(model_path or paths.AGENT_WEIGHTS)
    known = [s.info.runtime_id for s in all_runtimes()]
    runtime_ids = None
    if runtime_list:
        runtime_ids = [r.strip() for r in runtime_list.split(",") if r.strip()]
        unknown = [r for r in runtime_ids if r not in known]
        if unknown or not runtime_ids:
            raise UserError(f"unknown runtime {', '.join(unknown) or '(none given)'}; known: {', '.join(known)}")
    label = sanitize_label(label) if label else default_label(cuda_index)
    out = Path(out) if out else paths.DATA / f"{label}.duckdb"
    _check_out(out, overwrite)
    if out.exists():
        out.unlink()
    artifacts_dir = Path(artifacts) if artifacts else paths.ROOT / "artifacts" / label
    console = Console(stderr=True, quiet=quiet)
    try:
        store = RunStore(out, new_run_id())
    except Exception as e:
        raise UserError(f"cannot create {out}: {e}") from None
    progress = None if quiet else Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                           TimeElapsedColumn(), console=console, transient=True)
    collector = Collector(model, store, Artifacts(artifacts_dir, model.onnx_source()), QUICK if quick else FULL,
                          runtime_ids, cuda_index, label, progress, play_workers)
    try:
        if progress:
            progress.start()
        collector.run()
    except KeyboardInterrupt:
        if progress:
            progress.stop()
        store.finish_run("incomplete", f"interrupted (Ctrl-C) during {collector.phase}")
        store.close()
        Console(stderr=True).print(f"interrupted: {out} keeps what completed and is marked incomplete")
        return 130
    finally:
        if progress:
            progress.stop()
    if not quiet:
        reference = store.con.execute("SELECT reference_runtime FROM runs").fetchone()[0]
        table, notes = summary_table(store.con, store.run_id, reference, [s.info.runtime_id for s in all_runtimes()])
        Console().print(table)
        for line in notes:
            Console().print(f"  {line}", markup=False, highlight=False)
    store.close()
    console.print(f"wrote {out}")
    return 0
