"""The ``rtreport`` command line: parses options and hands off to ``collect`` (measuring, the agent) and
``site_gen`` (publishing). Nothing heavy is imported until a command runs, so ``rtreport build`` needs
only the publishing dependencies."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import click

from rtreport.errors import UserError

from .agent_commands import agent


class PathOrS3(click.ParamType):
    """A local path, or an ``s3://bucket/key`` URL kept as text (a Path would fold its '//')."""

    name = "path"

    def convert(self, value, param, ctx):
        return value if isinstance(value, str) and value.startswith("s3://") else Path(value)


class CleanGroup(click.Group):
    """Turns the project's own user-facing errors into one line and exit status 2."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except UserError as e:
            for line in str(e).splitlines() or [""]:
                click.echo(f"Error: {line}", err=True)
            sys.exit(2)
        except click.UsageError as e:  # an unknown option, a value out of range: one line, not click's usage block
            where = e.ctx.command_path if e.ctx else "rtreport"
            message = " ".join(e.format_message().split())
            click.echo(f"Error: {message} ({where} --help lists the options)", err=True)
            sys.exit(2)


@click.group(cls=CleanGroup)
@click.version_option(package_name="rtreport")
def main():
    """rtreport: can a faster inference runtime replace PyTorch FP32 for your RL agent (default: a Breakout DQN)?

    `collect` measures speed, agreement and play on this machine into one DuckDB file;
    `build` turns one or more such files into a bilingual static report site.
    """


@main.command()
@click.option(
    "--checkpoint-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path(".ckpt/pqn"),
    show_default=True,
    help="Resumable training state; an existing one is resumed.",
)
@click.option(
    "--total-timesteps",
    type=click.IntRange(1),
    default=6_000_000,
    show_default=True,
    help="Agent steps to train for (frames = 4x); the schedules are laid over this.",
)
@click.option("--num-envs", type=click.IntRange(1), default=128, show_default=True)
@click.option("--num-steps", type=click.IntRange(1), default=32, show_default=True, help="Rollout length per env.")
@click.option("--num-minibatches", type=click.IntRange(1), default=32, show_default=True)
@click.option("--learning-rate", type=click.FloatRange(0, min_open=True), default=2.5e-4, show_default=True)
@click.option("--seed", type=int, default=1, show_default=True)
@click.option("--device", default="auto", show_default=True, help="auto, cpu, cuda or cuda:N.")
@click.option(
    "--max-minutes",
    type=click.FloatRange(0, min_open=True),
    default=None,
    help="Stop (and checkpoint) once this much time has passed in this command.",
)
@click.option(
    "--max-iterations",
    type=click.IntRange(1),
    default=None,
    help="Stop (and checkpoint) after this many updates in this command.",
)
def train(
    checkpoint_dir,
    total_timesteps,
    num_envs,
    num_steps,
    num_minibatches,
    learning_rate,
    seed,
    device,
    max_minutes,
    max_iterations,
):
    """Train the Q-network with PQN on the shared Breakout protocol (resumable)."""
    from collect.agent.train import TrainConfig, train as run_training

    config = TrainConfig(
        total_timesteps=total_timesteps,
        num_envs=num_envs,
        num_steps=num_steps,
        num_minibatches=num_minibatches,
        learning_rate=learning_rate,
        seed=seed,
    )
    if config.batch_size % config.num_minibatches:
        raise UserError(
            f"--num-envs x --num-steps ({config.batch_size}) must divide into --num-minibatches ({num_minibatches})"
        )
    if config.num_iterations < 1:
        raise UserError(f"--total-timesteps must be at least one rollout ({config.batch_size} steps)")
    state = run_training(
        config,
        checkpoint_dir,
        device=device,
        max_minutes=max_minutes,
        max_iterations=max_iterations,
        log=lambda m: click.echo(m),
    )
    click.echo(
        f"checkpoint: {checkpoint_dir} (step {state['global_step']:,}, "
        f"{state['wall_seconds'] / 60:.1f} min of training so far)"
    )


@main.command()
@click.option(
    "--model",
    "model_path",
    type=click.Path(path_type=Path),
    default=None,
    help="The policy: rtreport's Q-network state dict (.pt), a TorchScript module (.pt), an ONNX file (.onnx) "
    "or a Stable-Baselines3 model (.zip); default: the shipped Breakout agent.",
)
@click.option(
    "--env",
    "env_id",
    default=None,
    help="The Gymnasium environment the policy plays: an ALE game (ALE/Pong-v5, under the Atari protocol) or any "
    "registered one with a Box observation and Discrete or Box actions (CartPole-v1, Hopper-v5, …); default: "
    "ALE/Breakout-v5.",
)
@click.option(
    "--config",
    "config_path",
    type=click.Path(path_type=Path),
    default=None,
    help="Run configuration (TOML): the environment's kwargs and time limit, the policy's outputs and ε "
    "(docs/own-agent.md).",
)
@click.option(
    "--normalize",
    "normalize_path",
    type=click.Path(path_type=Path),
    default=None,
    help="The training's Stable-Baselines3 VecNormalize (vecnormalize.pkl): observations are normalised with its "
    "frozen statistics; default: the one beside the model or in its RL Zoo / Hugging Face folder, if any.",
)
@click.option(
    "--runtimes",
    "runtime_list",
    default=None,
    help="Comma-separated runtime ids (see --list-runtimes); default: every one.",
)
@click.option(
    "--out",
    type=PathOrS3(),
    default=None,
    help="DuckDB file to write, or s3://bucket/prefix/name.duckdb (measured locally, uploaded when the "
    "run ends); default ./data/<label>.duckdb.",
)
@click.option("--overwrite", is_flag=True, help="Replace --out if it exists.")
@click.option(
    "--label", default=None, help="Name of this machine in the report, in any script; default <host>-<gpu or cpu>."
)
@click.option("--device", "cuda_device", default="cuda:0", show_default=True, help="CUDA device for GPU runtimes.")
@click.option(
    "--artifacts",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Folder for exported models and engines; default ./artifacts/<label>/.",
)
@click.option(
    "--quick", is_flag=True, help="Smoke profile: 8 states, 2 short episodes, 3 rounds of 300 latency samples."
)
@click.option(
    "--play-workers",
    type=click.IntRange(1, 64),
    default=None,
    help="Processes playing each runtime's episodes (same results, less wall time); "
    "default for GPU runtimes: one per core (at most 16) with several --play-slots, else half the "
    "cores (at most 8); 1 for CPU runtimes.",
)
@click.option(
    "--play-slots",
    type=click.IntRange(1, 256),
    default=None,
    help="Games each play process keeps in flight, their batch=1 decisions issued together (same "
    "results); default: 16 for GPU runtimes, 1 for CPU runtimes.",
)
@click.option(
    "--play-mps",
    is_flag=True,
    help="GPU play processes share the GPU through a CUDA MPS daemon of this run's own (started for play, "
    "stopped after; the GPU's settings are not touched), instead of being time-sliced. Same results; "
    "without nvidia-cuda-mps-control, play goes on without it and the file says why.",
)
@click.option(
    "--no-twins",
    "no_twins",
    is_flag=True,
    help="In play, every runtime computes every decision itself. By default a runtime's CUDA-graph "
    "capture (the same kernels) computes its decisions where their fixed states agree bit for bit, "
    "and the runtime itself recomputes one in eight to check them.",
)
@click.option("--quiet", is_flag=True, help="Print nothing but errors.")
@click.option(
    "--list-runtimes", is_flag=True, help="List every known runtime, whether this machine can run it, and why not."
)
@click.option(
    "--resume",
    type=PathOrS3(),
    default=None,
    help="Continue the run in this file or s3:// object (interrupted or finished): whatever it still "
    "lacks, plus any --runtimes added and --rounds raised; nothing stored is measured again.",
)
@click.option(
    "--rounds",
    type=click.IntRange(1, 50),
    default=None,
    help="Latency rounds per runtime (default 10, --quick 3; a --repeat: the run's repeat rounds, 3), each "
    "runtime once per round, "
    "spread over the run: before play, after looks, after play.",
)
@click.option(
    "--repeats",
    type=click.IntRange(0, 20),
    default=None,
    help="Repeats after the run, each in a fresh process (a few latency rounds and the fixed states): the "
    "speed gate needs at least three independent measurements, the run and two repeats by default. "
    "0 leaves them to later `--repeat` commands (on a lent machine: after rebooting).",
)
@click.option(
    "--allow-mixed-onnxruntime",
    is_flag=True,
    help="Measure although onnxruntime and onnxruntime-gpu are both installed (recorded, and shown on "
    "the machine page).",
)
@click.option(
    "--repeat",
    type=click.Path(path_type=Path),
    default=None,
    help="Add a short repeat to this complete run's file, measured in this fresh process: latency "
    "rounds of every runtime and the fixed states' Q-values (compared bit for bit with the run's).",
)
def collect(
    model_path,
    env_id,
    config_path,
    normalize_path,
    runtime_list,
    out,
    overwrite,
    label,
    cuda_device,
    artifacts,
    quick,
    play_workers,
    play_slots,
    play_mps,
    no_twins,
    quiet,
    list_runtimes,
    resume,
    rounds,
    repeats,
    repeat,
    allow_mixed_onnxruntime,
):
    """Measure speed, agreement and play for every runtime this machine can run, into one DuckDB file."""
    cuda_index = _cuda_index(cuda_device)
    if list_runtimes:
        from collect.collect_command import list_runtimes_lines

        click.echo("\n".join(list_runtimes_lines(model_path, env_id, config_path, normalize_path)))
        return
    from collect.pipes import survive_closed_output

    survive_closed_output()  # `rtreport collect | head` must not cost the run
    from collect.collect_command import run_collect
    from collect.options import CollectOptions

    if isinstance(out, str) or isinstance(resume, str):  # s3:// URLs
        from collect.remote import run_collect_s3 as run_collect
    code = run_collect(
        CollectOptions(
            model_path=model_path,
            env_id=env_id,
            config=config_path,
            normalize=normalize_path,
            runtime_list=runtime_list,
            out=out,
            overwrite=overwrite,
            label=label,
            cuda_index=cuda_index,
            device_named=_given("cuda_device"),
            artifacts=artifacts,
            quick=quick,
            quiet=quiet,
            play_workers=play_workers,
            resume=resume,
            rounds=rounds,
            repeats=repeats,
            play_slots=play_slots,
            play_mps=play_mps,
            play_twins=not no_twins,
            repeat=repeat,
            allow_mixed_onnxruntime=allow_mixed_onnxruntime,
        )
    )
    sys.exit(code)


@main.command()
@click.argument("inputs", nargs=-1, type=PathOrS3())
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    default=Path("site"),
    show_default=True,
    help="Folder to write the site into (replaced as a whole, only once every page is written).",
)
@click.option(
    "--gates",
    "gates_path",
    type=click.Path(path_type=Path),
    default=None,
    help="Gate thresholds (TOML); default: rtreport/gates.toml.",
)
@click.option(
    "--base-url",
    default=None,
    help="Where the site will be served, e.g. https://example.org/rtreport/: absolute canonical and "
    "hreflang links, og:url and sitemap.xml (without it, pages use relative links only).",
)
@click.option(
    "--allow-invalid",
    is_flag=True,
    help="Publish files whose raw rows fail validation, marked invalid, without their bad rows "
    "and without verdicts (default: refuse them).",
)
@click.option(
    "--no-cache",
    is_flag=True,
    help="Read and analyse every file again, without the cache of files analysed before "
    "(~/.cache/rtreport, or $RTREPORT_CACHE_DIR; the site is the same either way).",
)
def build(inputs, out, gates_path, base_url, allow_invalid, no_cache):
    """Build the bilingual static report site from collect runs' DuckDB files.

    INPUTS are DuckDB files or folders (every *.duckdb inside), or s3://bucket/prefix/ (every *.duckdb there,
    cached locally); default: ./data.
    """
    from site_gen.build import Stopped, stop_signals_raise

    try:
        with stop_signals_raise():  # Ctrl-C, SIGTERM, SIGHUP: one line, exit 128 + the signal, nothing left behind
            _build(inputs, out, gates_path, base_url, allow_invalid, no_cache)
    except Stopped as e:
        click.echo(e.line(out), err=True)
        sys.exit(e.exit_code)


def _build(inputs, out, gates_path, base_url, allow_invalid, no_cache):
    import time

    from site_gen.build import build_site, find_inputs, skipped_notes

    if gates_path is not None:  # checked against its schema before anything else is read (GatesError: one line)
        from rtreport.gates import Gates

        Gates.load(gates_path)
    if any(isinstance(i, str) for i in inputs):  # s3:// folders: their files' local copies
        from rtreport.storage import fetch_folder

        inputs = [p for i in inputs for p in (fetch_folder(i) if isinstance(i, str) else [i])]
    items = list(inputs) or [Path("data")]
    notes = skipped_notes(items)
    dbs = find_inputs(items)
    start = time.perf_counter()
    if base_url is not None:
        if not re.fullmatch(r"https?://[^\s/]+(/[^\s]*)?", base_url):
            raise UserError(
                f"--base-url must be an http(s) URL such as https://example.org/rtreport/, not {base_url!r}"
            )
        base_url = base_url if base_url.endswith("/") else base_url + "/"
    pages = build_site(
        dbs, out, gates_path, allow_invalid=allow_invalid, base_url=base_url, notes=notes, use_cache=not no_cache
    )
    for note in notes:
        click.echo(f"note: {note}", err=True)
    click.echo(
        f"built {len(pages)} pages from {len(dbs)} file(s) into {out} in {time.perf_counter() - start:.1f} s; "
        f"open {out / 'index.html'}"
    )


@main.command()
@click.argument("file", type=click.Path(path_type=Path))
def check(file):
    """Check a collect run's DuckDB file against the row counts and checksum recorded at its run's end.

    Exit status: 0 the rows are as recorded (or the file has no checksum: one made before rtreport recorded
    them, or a run killed before its session ended; the line says so), 1 damaged, 2 unreadable."""
    from site_gen.check import check_file

    sys.exit(check_file(file, click.echo))


def _given(parameter: str) -> bool:
    """Whether the command line named this option (not its default, nor an environment variable)."""
    from click.core import ParameterSource

    return click.get_current_context().get_parameter_source(parameter) == ParameterSource.COMMANDLINE


def _cuda_index(text: str) -> int:
    m = re.fullmatch(r"(?:cuda:)?(\d+)", text)
    if not m:
        raise UserError(f"--device must look like cuda:0, not {text!r}")
    return int(m.group(1))


main.add_command(agent)  # the agent's commands (agent_commands.py)


if __name__ == "__main__":
    main()
