"""The ``rtreport`` command line: parses options and hands off to the core modules."""
from __future__ import annotations

import sys
from pathlib import Path

import click

from . import paths


class CleanGroup(click.Group):
    """Turns the project's own user-facing errors into one line and exit status 2."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except UserError as e:
            click.echo(f"Error: {e}", err=True)
            sys.exit(2)


class UserError(Exception):
    """Bad input from the user: reported as one line, never as a traceback."""


@click.group(cls=CleanGroup)
@click.version_option(package_name="rtreport")
def main():
    """rtreport: can a faster inference runtime replace PyTorch FP32 for a Breakout DQN agent?

    `collect` measures speed, agreement and play on this machine into one DuckDB file;
    `build` turns one or more such files into a bilingual static report site.
    """


@main.command()
@click.option("--checkpoint-dir", type=click.Path(file_okay=False, path_type=Path), default=Path(".ckpt/pqn"),
              show_default=True, help="Resumable training state; an existing one is resumed.")
@click.option("--total-timesteps", type=click.IntRange(1), default=6_000_000, show_default=True,
              help="Agent steps to train for (frames = 4x); the schedules are laid over this.")
@click.option("--num-envs", type=click.IntRange(1), default=128, show_default=True)
@click.option("--num-steps", type=click.IntRange(1), default=32, show_default=True, help="Rollout length per env.")
@click.option("--num-minibatches", type=click.IntRange(1), default=32, show_default=True)
@click.option("--learning-rate", type=click.FloatRange(0, min_open=True), default=2.5e-4, show_default=True)
@click.option("--seed", type=int, default=1, show_default=True)
@click.option("--device", default="auto", show_default=True, help="auto, cpu, cuda or cuda:N.")
@click.option("--max-minutes", type=click.FloatRange(0, min_open=True), default=None,
              help="Stop (and checkpoint) once this much time has passed in this command.")
@click.option("--max-iterations", type=click.IntRange(1), default=None,
              help="Stop (and checkpoint) after this many updates in this command.")
def train(checkpoint_dir, total_timesteps, num_envs, num_steps, num_minibatches, learning_rate, seed, device,
          max_minutes, max_iterations):
    """Train the Q-network with PQN on the shared Breakout protocol (resumable)."""
    from .train import TrainConfig, train as run_training

    config = TrainConfig(total_timesteps=total_timesteps, num_envs=num_envs, num_steps=num_steps,
                         num_minibatches=num_minibatches, learning_rate=learning_rate, seed=seed)
    if config.batch_size % config.num_minibatches:
        raise UserError(f"--num-envs x --num-steps ({config.batch_size}) must divide into "
                        f"--num-minibatches ({num_minibatches})")
    if config.num_iterations < 1:
        raise UserError(f"--total-timesteps must be at least one rollout ({config.batch_size} steps)")
    state = run_training(config, checkpoint_dir, device=device, max_minutes=max_minutes,
                         max_iterations=max_iterations, log=lambda m: click.echo(m))
    click.echo(f"checkpoint: {checkpoint_dir} (step {state['global_step']:,}, "
               f"{state['wall_seconds'] / 60:.1f} min of training so far)")


if __name__ == "__main__":
    main()
