"""``rtreport agent …``: the shipped Breakout agent (package, evaluate, fixed states) and the example agents of
other tasks."""

from __future__ import annotations

import sys
from pathlib import Path

import click


@click.group()
def agent():
    """The shipped default agent (package it, evaluate it, regenerate its fixed states) and example agents."""


@agent.command("package")
@click.option(
    "--checkpoint-dir",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=Path(".ckpt/pqn"),
    show_default=True,
)
@click.option("--code-version", required=True, help="Git commit of the code that trained the checkpoint.")
@click.option("--trained-on", required=True, help="The machine that trained it, in words.")
def agent_package(checkpoint_dir, code_version, trained_on):
    """Copy a trained checkpoint into data/agent, export ONNX and write the model card's training part."""
    from collect.agent.shipped import package

    card = package(checkpoint_dir, code_version, trained_on)
    click.echo(f"packaged {card['parameters']:,} parameters, {card['training']['frames']:,} frames")


@agent.command("example")
@click.argument("name")
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    default=Path("."),
    show_default=True,
    help="Folder to save <name>.zip (or <name>.pt) into, or the file's path.",
)
@click.option("--seed", type=int, default=0, show_default=True)
def agent_example(name, out, seed):
    """Make an example agent of another task in minutes on a CPU: cartpole (PPO, discrete actions),
    inverted-pendulum (SAC, MuJoCo, continuous actions) or pong-small (an untrained small Q-network for ALE/Pong-v5);
    then rtreport collect --env … --model <file>."""
    from collect.agent.examples import train

    train(name, out, seed, click.echo)


@agent.command("evaluate")
@click.option("--update-card", is_flag=True, help="Write the results into data/agent/model_card.json.")
def agent_evaluate(update_card):
    """Play the 30 pre-registered evaluation seeds with the shipped agent (PyTorch FP32, CPU)."""
    from collect.agent.shipped import evaluate_against_card

    sys.exit(evaluate_against_card(update_card, click.echo))


@agent.command("fixed-states")
@click.option("--check", is_flag=True, help="Regenerate into a temporary folder and compare with the shipped files.")
def agent_fixed_states(check):
    """Regenerate the 60 fixed states from real play of the shipped agent on the harvest seeds."""
    from collect.agent.shipped import regenerate_fixed_states

    sys.exit(regenerate_fixed_states(check, click.echo))
