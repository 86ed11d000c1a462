"""Glue between the CLI and the Collector: input checks, the output file, progress, stop signals."""

from __future__ import annotations

import json
import shutil
import sys
from dataclasses import replace
from pathlib import Path

import click

from rtreport.errors import UserError
from rtreport.labels import check_label, slug

from . import after_run, model_folder, paths, provenance, run_config, tasks
from .artifacts import Artifacts, run_folder
from . import resume as resume_run
from .finite import ReferenceNotFinite
from .collector import FULL, QUICK, Collector, default_label, new_run_id
from .interrupts import hold, stop_signals_raise
from .model_input import load_model
from .options import CollectOptions
from . import outcome
from .outfile import OutputFile
from .write_faults import write_problem
from .progress import Bars, Lines, Silent
from .registry import all_runtimes
from .store import RunStore
from .summary import grouped_reasons, summary_lines


def _width() -> int:
    return max(60, min(100, shutil.get_terminal_size((80, 24)).columns))


def model_for(model_path, env_id, config_path, normalize=None):
    """The model to measure and its task: the shipped Breakout agent, or a user's model (a file, an RL Zoo or
    Hugging Face folder: ``model_folder``) in the task of ``--env``, ``--config`` and the folder, behind the
    training's observation normalisation (``--normalize``, or found beside the model)."""
    config = run_config.read(config_path)
    if normalize is not None and model_path is None:
        raise UserError("--normalize is for a model of your own: give --model too")
    found = None
    if model_path is not None and Path(model_path).exists():
        found = model_folder.find(Path(model_path), env_id)
    task = run_config.task_for(
        env_id,
        config,
        Path(config_path).parent if config_path else None,
        Path(config_path) if config_path else None,
        found,
        Path(normalize) if normalize is not None else None,
    )
    if model_path is None and not task.is_breakout:
        raise UserError(f"give --model: the shipped agent plays Breakout, not {task.name}")
    model = load_model(found.model if found is not None else model_path or paths.AGENT_WEIGHTS, task)
    said = config.get("policy", {}).get("outputs")
    if said is not None and said != model.task.outputs:  # a Stable-Baselines3 .zip says its outputs itself
        raise UserError(
            f"{config_path}: [policy] outputs = {said!r}, but {model_path} decides on its {model.task.outputs} "
            f"({model.export.get('algorithm', model.format)}): leave [policy] outputs out"
        )
    return model


def list_runtimes_lines(model_path, env_id=None, config_path=None, normalize=None) -> list[str]:
    model = model_for(model_path, env_id, config_path, normalize)
    ready, not_here = [], []
    for spec in all_runtimes():
        reason = spec.check(model)
        if reason is None:
            ready.append(f"  {spec.id:<24} {spec.title}" + (" (opt-in)" if spec.opt_in else ""))
        else:
            not_here.append((spec.id, reason))
    lines = ["runs on this machine:"] + (ready or ["  (none)"])
    if not_here:
        lines += ["does not run here:"] + grouped_reasons(not_here, _width())
    return lines


def reference_notice(reference: str | None, available: list[str], requested: list[str], reasons: dict) -> str:
    """What collect says at the start about the reference (the report says the same from the file)."""
    if reference is None:
        return (
            "no reference: neither PyTorch FP32 nor ONNX Runtime FP32 is measured in this run, so no runtime "
            "can be judged (no verdicts)"
        )
    if len(available) == 1:
        return f"reference: {reference}, the only runtime measured here, so there is nothing to judge (no verdicts)"
    if reference.startswith("torch-"):
        return f"reference: {reference} (PyTorch FP32)"
    torch_why = []
    for rid in ("torch-cuda-fp32", "torch-cpu-fp32"):
        if rid not in requested:
            torch_why.append(f"{rid} is not among --runtimes")
        elif reasons.get(rid):
            torch_why.append(f"{rid}: {reasons[rid]}")
    return (
        f"reference: {reference} instead of PyTorch FP32 ({'; '.join(torch_why)}); verdicts in this run "
        f"compare against ONNX Runtime, not PyTorch"
    )


def default_out(label: str) -> tuple[Path, str | None]:
    """Where a run goes without --out: ./data/<label>.duckdb, or, when an earlier run is there (the README's command
    run again), the first free ./data/<label>-2.duckdb, -3, …: a second run never overwrites nor is refused, and
    ``rtreport build`` shows both runs of the machine."""
    folder = Path("data")
    if folder.exists() and not folder.is_dir():
        raise UserError("./data is a file; collect writes its run into a folder ./data: move the file, or give --out")
    try:
        folder.mkdir(exist_ok=True)
    except OSError as e:
        raise UserError(
            f"cannot create the folder ./data here: {write_problem(e) or e.strerror}; run "
            "rtreport collect in a folder you can write, or give --out"
        ) from None
    name, n = slug(label), 1
    out = folder / f"{name}.duckdb"
    while out.exists():
        n += 1
        out = folder / f"{name}-{n}.duckdb"
    return out, (f"note: {folder / f'{name}.duckdb'} holds an earlier run; this one goes to {out}" if n > 1 else None)


def check_device(cuda_index: int, named: bool) -> None:
    """A GPU named by --device that this machine lacks is refused. Left to its default (cuda:0), it is simply
    absent on a machine without a GPU: the GPU runtimes say they cannot run here and the CPU ones are measured."""
    import torch

    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if (cuda_index or named) and cuda_index >= count:
        have = f"its GPUs are cuda:0 to cuda:{count - 1}" if count else "it has no CUDA GPU PyTorch can see"
        hint = "" if count else " (leave --device out to measure the CPU runtimes)"
        raise UserError(f"--device cuda:{cuda_index} is not on this machine: {have}{hint}")


def run_collect(o: CollectOptions) -> int:
    if not o.allow_mixed_onnxruntime:
        provenance.refuse_mixed_onnxruntime()
    check_device(o.cuda_index, o.device_named)  # a run and a repeat alike
    if o.repeat is not None:
        if (
            o.resume is not None
            or o.out is not None
            or o.label is not None
            or o.quick
            or o.runtime_list
            or o.overwrite
            or o.repeats is not None
            or o.env_id is not None
            or o.config is not None
            or o.normalize is not None
        ):
            raise UserError(
                "--repeat adds to the file's own run: it takes no --resume, --out, --label, --quick, "
                "--runtimes, --repeats, --overwrite, --env, --config or --normalize"
            )
        from .repeat import run_repeat

        return run_repeat(Path(o.repeat), o.model_path, o.cuda_index, o.artifacts, o.rounds, o.quiet)
    if o.resume is not None and (o.env_id or o.config or o.normalize):
        raise UserError("--resume plays the task the run began with: it takes no --env, --config or --normalize")
    model = None if o.resume is not None else model_for(o.model_path, o.env_id, o.config, o.normalize)
    known = [s.id for s in all_runtimes()]
    runtime_ids = named = None
    label, out, overwrite, cuda_index = o.label, o.out, o.overwrite, o.cuda_index
    if o.runtime_list is not None:
        runtime_ids = list(dict.fromkeys(r.strip() for r in o.runtime_list.split(",") if r.strip()))
        unknown = [r for r in runtime_ids if r not in known]
        if o.runtime_list.startswith("-"):  # `--runtimes --quick`: the next option was taken as the list
            raise UserError(
                f"--runtimes takes a comma-separated list of runtime ids, not {o.runtime_list!r} "
                "(rtreport collect --list-runtimes lists them)"
            )
        if unknown or not runtime_ids:
            raise UserError(f"unknown runtime {', '.join(unknown) or '(none given)'}; known: {', '.join(known)}")
        named = runtime_ids
    stored, source = None, None
    if o.resume is not None:
        if out is not None or label is not None or o.quick:
            raise UserError("--resume continues the file's own run: it takes no --out, --label or --quick")
        source = resume_run.find_source(Path(o.resume))  # the file, or the partial a killed run left for it
        stored = resume_run.read_run(source)  # its rows verified against their checksums, or refused
        resume_run.check_same_kind(stored, provenance.kind(cuda_index), "--resume", source)
        task = tasks.from_protocol(stored.get("protocol"))
        resume_run.model_given(stored, o.model_path, task, "--resume", source)
        model = load_model(o.model_path or paths.AGENT_WEIGHTS, task)
        resume_run.check_same_run(stored, model)
        label, out, overwrite = stored["label"], Path(o.resume), True
        requested = stored["settings"].get("runtimes_requested", [])
        runtime_ids = list(dict.fromkeys([*requested, *(runtime_ids or [])]))
        profile = resume_run.profile_for(stored, o.rounds)
    else:
        profile = QUICK if o.quick else FULL
        if o.rounds:
            profile = replace(profile, rounds=o.rounds)
        if o.repeats is not None:
            profile = replace(profile, repeats=o.repeats)
    label = check_label(label) if label is not None else default_label(cuda_index)
    out, out_note = (Path(out), None) if out is not None else default_out(label)
    run_id = stored["run_id"] if stored else new_run_id()
    artifacts_dir = run_folder(o.artifacts, label, run_id)  # private to this run
    o = replace(o, label=label, out=out, overwrite=overwrite)  # as resolved: what the run is written as

    def say(line: str) -> None:
        if not o.quiet:
            click.echo(line, err=True)

    if out_note:
        say(out_note)

    store_box: list = []  # the RunStore, once there is one
    last: list = []  # the closing line, said after the repeats
    target = OutputFile(out, overwrite, say, source)
    try:
        with target:
            code = _measure(
                target,
                store_box,
                model,
                stored,
                source,
                profile,
                runtime_ids,
                artifacts_dir,
                run_id,
                o,
                say,
                known,
                last.append,
            )
    except BaseException as e:  # only a write fault is handled here: it ends the run, whatever the phase
        why = write_problem(e)
        if why is None:
            raise
        if store_box:
            store_box[0].abandon()
        click.echo("Error: " + outcome.write_failed(e, why, target, bool(store_box), source), err=True)
        return outcome.CANNOT_WRITE
    if code == 0 and out.is_file():  # the run is complete: the repeats it owes, each in a fresh process
        code = after_run.take(out, o, say)  # each repeat finds this run's folder through its run id
    for line in last:
        say(line + ("" if code == 0 else f" (its repeats stopped: exit code {code})"))
    if code == 0 and named and out.is_file():  # a runtime the user asked for by name is owed, not optional
        failed = outcome.named_not_measured(out, named)
        if failed:
            click.echo(f"Error: {failed}; {out} keeps the rest of the run", err=True)
            code = outcome.NAMED_NOT_MEASURED
    return code


def _measure(
    target,
    store_box,
    model,
    stored,
    source,
    profile,
    runtime_ids,
    artifacts_dir,
    run_id,
    o: CollectOptions,
    say,
    known,
    closing,
) -> int:
    """Measure into the partial file and commit it; ``closing`` gets the line that ends the command's output."""
    out = target.out
    if stored:
        try:
            resume_run.copy_for_writing(source, target.partial)
        except BaseException:
            if source != target.partial:
                target.remove_partial()
            raise
        store = RunStore(target.partial, stored["run_id"], existing=True)
        store_box.append(store)
        changed = {"rounds": profile.rounds} if profile.rounds != stored["settings"].get("rounds") else {}
        if o.repeats is not None and o.repeats != stored["settings"].get("repeats"):
            changed["repeats"] = o.repeats
        if changed:
            store.update_run(settings=json.dumps({**stored["settings"], **changed}, sort_keys=True))
    else:
        try:
            store = RunStore(target.partial, run_id)
        except BaseException:
            target.remove_partial()
            raise
        store_box.append(store)
    if o.quiet:
        ui = Silent()
    elif sys.stderr.isatty():
        from rich.console import Console

        ui = Bars(Console(stderr=True))
    else:
        ui = Lines(say)
    collector = Collector(
        model, store, Artifacts(artifacts_dir, model.onnx_source()), profile, o, runtime_ids, ui, stored
    )
    available = [rid for rid, r in collector.reasons.items() if r is None]
    if not available:
        store.close()
        target.remove_partial()
        raise UserError(
            "nothing to measure: no requested runtime can run on this machine ("
            + "; ".join(f"{rid}: {r}" for rid, r in collector.reasons.items())[:600]
            + "); see rtreport collect --list-runtimes"
        )
    for stale in target.stale_partials():
        if stale != source:
            say(
                f"note: {stale} holds an earlier run to {out.name} that stopped unexpectedly; "
                f"rtreport build {stale} shows what it measured"
            )
    if stored:
        came = f" from {source} (left by a run that stopped unexpectedly)" if source != out else ""
        say(
            f"resuming run {stored['run_id']} of {stored['label']} ({stored['status']}){came}: measuring what it "
            f"still lacks, written as {target.partial.name} until this session ends"
        )
        if stored.get("integrity_note"):
            say(stored["integrity_note"])
    else:
        say(f"measuring {len(available)} runtime(s) into {out} (written as {target.partial.name} until the run ends)")
    say(reference_notice(collector.reference, available, [s.id for s in collector.specs], collector.reasons))
    code, message, error = 0, None, None
    with stop_signals_raise():
        try:
            ui.start()
            collector.run()
        except KeyboardInterrupt as e:  # Ctrl-C, SIGTERM or SIGHUP (interrupts.Interrupted)
            hold()  # stopping already: a second signal must not cut the clean-up
            name = getattr(e, "signal_name", "SIGINT")
            code = getattr(e, "exit_code", 130)
            message = f"stopped by {name} during {collector.where()}"
            store.finish_run("incomplete", message)
        except ReferenceNotFinite as e:  # nothing can be compared with it: nothing is kept (a --resume keeps its file)
            store.close()
            if source != target.partial:
                target.remove_partial()
            kept = f"{out} is untouched" if stored else f"nothing was written to {out}"
            click.echo(f"Error: {e}; check the model (its weights may hold NaN or inf); {kept}", err=True)
            return outcome.NOTHING_MEASURED
        except Exception as e:  # a fault outside any one runtime: keep what was measured
            hold()
            code = 1
            first = (str(e).strip().splitlines() or [""])[0][:300]
            store.finish_run("incomplete", f"failed during {collector.where()}: {type(e).__name__}: {first}")
            error = f"collect failed during {collector.where()}: {type(e).__name__}: {first}"
        finally:
            ui.stop()
        tally = outcome.tally(store.con, store.run_id, available, len(collector.specs) - len(available))
        if code == 0 and not o.quiet:
            reference = store.con.execute("SELECT reference_runtime FROM runs").fetchone()[0]
            click.echo("\n".join(summary_lines(store.con, store.run_id, reference, known, _width())))
        store.close()
        if code == 0 and not tally.measured and not stored:  # a file of failures only replaces nothing
            target.remove_partial()
            click.echo(f"Error: {tally.line()}; nothing was written to {out}", err=True)
            return outcome.NOTHING_MEASURED
        where = target.commit()
        if source is not None and source not in (out, target.partial):
            target.remove_partial(source)  # the killed run's partial now lives on in --out
    if message:
        click.echo(
            f"{message}: {where} keeps every phase that completed and is marked incomplete; "
            f"{outcome.next_steps(where)}",
            err=True,
        )
    if error:
        click.echo(
            f"Error: {error}; {where} keeps what was measured and is marked incomplete; {outcome.next_steps(where)}",
            err=True,
        )
    elif code == 0:
        if not tally.measured:
            click.echo(f"Error: {tally.line()}; {where} records why", err=True)
            return outcome.NOTHING_MEASURED
        closing(f"wrote {where}" + (f": {tally.line()}" if tally.failed else ""))
    return code
