"""The shipped default agent: packaging, evaluation on the pre-registered seeds, fixed states.

Everything here plays through ``protocol.play_episode`` with PyTorch FP32 on the CPU, so the
model card's evaluation and the fixed states can be reproduced on any machine with a CPU.
"""

from __future__ import annotations

import json
import platform
import statistics
from pathlib import Path

import numpy as np
import torch

from .. import paths
from ..conditions import cpu_name
from .network import ARCHITECTURE, QNetwork, export_onnx, load_weights, parameter_count, sha256_file
from .protocol import ACTION_MEANINGS, FRAMESKIP, OBSERVATION_SHAPE, play_episode, protocol_settings

STATES_PER_EPISODE = 10  # 6 harvest seeds x 10 = 60 fixed states


def load_seeds(path: Path = paths.SEEDS) -> dict:
    return json.loads(Path(path).read_text())


def torch_q_function(model: QNetwork):
    """One observation stack (4, 84, 84) uint8 -> Q-values, PyTorch FP32 on the model's device."""
    device = next(model.parameters()).device

    def q(observation: np.ndarray) -> np.ndarray:
        with torch.inference_mode():
            x = torch.from_numpy(np.ascontiguousarray(observation)).unsqueeze(0).to(device)
            return model(x)[0].cpu().numpy()

    return q


def evaluate(model: QNetwork, seeds, progress=None) -> list:
    """Play one episode per seed with PyTorch FP32; return the Episodes in seed order."""
    q = torch_q_function(model)
    episodes = []
    for seed in seeds:
        episodes.append(play_episode(q, seed))
        if progress:
            progress(episodes[-1])
    return episodes


def score_summary(scores) -> dict:
    """The model card's figures, from the same statistics the report uses."""
    from rtreport.stats import score_summary as full

    s = full(scores)
    return {k: s[k] for k in ("mean", "median", "std", "min", "max")}


def machine_description() -> dict:
    return {
        "cpu": cpu_name(),
        "os": platform.platform(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
    }


def evaluation_record(episodes, runtime: str = "PyTorch FP32, CPU (eager)") -> dict:
    scores = [e.score for e in episodes]
    return {
        "seeds": [e.seed for e in episodes],
        "scores": scores,
        "steps": [e.steps for e in episodes],
        "truncated": [e.truncated for e in episodes],
        **score_summary(scores),
        "runtime": runtime,
        "machine": machine_description(),
        "command": "rtreport agent evaluate --update-card",
    }


def harvest_fixed_states(model: QNetwork, seeds) -> tuple[np.ndarray, list[dict]]:
    """60 observation stacks from real play of ``model`` on the harvest seeds.

    Each episode contributes STATES_PER_EPISODE states at evenly spread points of its length
    (centres of ten equal slices), so early, middle and late game are all represented.
    """
    q = torch_q_function(model)
    states, index = [], []
    for seed in seeds:
        seen = []
        episode = play_episode(q, seed, on_step=lambda obs, step: seen.append(np.array(obs, dtype=np.uint8)))
        for k in range(STATES_PER_EPISODE):
            step = int((k + 0.5) * episode.steps / STATES_PER_EPISODE)
            fraction = step / episode.steps
            phase = "early" if fraction < 1 / 3 else "middle" if fraction < 2 / 3 else "late"
            states.append(seen[step])
            index.append(
                {"state": len(index), "seed": seed, "step": step, "episode_steps": episode.steps, "phase": phase}
            )
    return np.stack(states).astype(np.uint8), index


def write_fixed_states(states: np.ndarray, index: list[dict], npy: Path, index_path: Path, model_sha: str) -> None:
    assert states.shape[1:] == OBSERVATION_SHAPE and states.dtype == np.uint8
    npy.parent.mkdir(parents=True, exist_ok=True)
    with open(npy, "wb") as f:  # raw .npy: no timestamps, byte-stable
        np.save(f, states, allow_pickle=False)
    index_path.write_text(
        json.dumps(
            {
                "count": len(index),
                "shape": list(states.shape),
                "dtype": "uint8",
                "sha256": sha256_file(npy),
                "harvested_with": {"model_sha256": model_sha, "runtime": "PyTorch FP32, CPU"},
                "states": index,
            },
            indent=1,
        )
        + "\n"
    )


def training_curve(returns_csv: Path, bin_frames: int = 1_000_000) -> list[dict]:
    """Training games' raw scores, averaged per bin of frames (the score curve of the card)."""
    import csv

    bins: dict[int, list[float]] = {}
    with open(returns_csv) as f:
        for row in csv.DictReader(f):
            bins.setdefault(int(row["frames"]) // bin_frames, []).append(float(row["score"]))
    return [
        {"frames_up_to": (b + 1) * bin_frames, "games": len(v), "mean_score": round(statistics.fmean(v), 2)}
        for b, v in sorted(bins.items())
    ]


def package(checkpoint_dir: Path, code_version: str, trained_on: str) -> dict:
    """Copy the trained weights into data/agent, export ONNX, and start the model card."""
    from .train import Checkpoint

    ckpt = Checkpoint(checkpoint_dir)
    trainer = torch.load(ckpt.trainer, map_location="cpu", weights_only=False)
    model = QNetwork()
    model.load_state_dict(torch.load(ckpt.model, map_location="cpu", weights_only=True))
    paths.AGENT.mkdir(parents=True, exist_ok=True)
    torch.save(model.state_dict(), paths.AGENT_WEIGHTS)
    export_onnx(model, paths.AGENT_ONNX)
    card = {
        "name": "rtreport default Breakout agent",
        "architecture": ARCHITECTURE,
        "parameters": parameter_count(model),
        "input": {"name": "observation", "dtype": "uint8", "shape": ["N", *OBSERVATION_SHAPE]},
        "output": {
            "name": "q_values",
            "dtype": "float32",
            "shape": ["N", len(ACTION_MEANINGS)],
            "actions": list(ACTION_MEANINGS),
        },
        "files": {
            name: {"path": paths.shown(p), "bytes": p.stat().st_size, "sha256": sha256_file(p)}
            for name, p in (("weights", paths.AGENT_WEIGHTS), ("onnx", paths.AGENT_ONNX))
        },
        "training": {
            "algorithm": "PQN (Gallici et al. 2024): Q(lambda), LayerNorm, vectorised envs, no replay buffer",
            "config": trainer["config"],
            "agent_steps": trainer["global_step"],
            "frames": trainer["global_step"] * FRAMESKIP,
            "games": trainer["games"],
            "wall_time_seconds": round(trainer["wall_seconds"], 1),
            "machine": trained_on,
            "code_version": code_version,
            "command": "rtreport train --checkpoint-dir .ckpt/pqn --max-minutes 8.4 (run twice; the second resumes)",
            "score_curve": training_curve(ckpt.returns),
            "score_curve_note": "mean raw score of training games, binned per 1M frames; exploration epsilon "
            f"decays linearly to {trainer['config']['end_e']} over the first "
            f"{trainer['config']['exploration_fraction'] * trainer['config']['total_timesteps'] * FRAMESKIP:,.0f}"
            " frames",
        },
        "protocol": protocol_settings(),
    }
    write_card(card)
    return card


def read_card() -> dict:
    return json.loads(paths.MODEL_CARD.read_text())


def write_card(card: dict) -> None:
    paths.MODEL_CARD.write_text(json.dumps(card, indent=1) + "\n")


def shipped_model() -> QNetwork:
    return load_weights(paths.AGENT_WEIGHTS)


def card_markdown(card: dict) -> str:
    """The model card's summary as docs/agent.md shows it (tests/test_docs.py keeps the two in step)."""
    t, ev = card["training"], card["evaluation"]
    scores = ", ".join(f"{s:g}" for s in ev["scores"])
    return "\n".join(
        [
            "| model card (`data/agent/model_card.json`) | |",
            "|---|---|",
            f"| architecture | {card['architecture']} |",
            f"| parameters | {card['parameters']:,} |",
            f"| training | {t['algorithm']}; {t['frames']:,} frames ({t['agent_steps']:,} agent steps), "
            f"{t['wall_time_seconds'] / 60:.1f} min on {t['machine']}; code `{t['code_version'][:12]}` |",
            f"| evaluation | {len(ev['scores'])} pre-registered seeds, {ev['runtime']} on {ev['machine']['cpu']} |",
            f"| score | mean **{ev['mean']:.2f}**, median {ev['median']:g}, std {ev['std']:.2f}, "
            f"min {ev['min']:g}, max {ev['max']:g} |",
            f"| per-seed scores | {scores} |",
        ]
    )


def evaluate_against_card(update_card: bool, echo=print) -> int:
    """``rtreport agent evaluate``: play the evaluation seeds; write the card, or compare with it (exit status)."""
    episodes = evaluate(
        shipped_model(),
        load_seeds()["evaluation"],
        progress=lambda e: echo(
            f"seed {e.seed}: score {e.score:g} ({e.steps} steps{', truncated' if e.truncated else ''})"
        ),
    )
    record = evaluation_record(episodes)
    echo(
        f"mean {record['mean']:.2f}  median {record['median']:g}  std {record['std']:.2f}  "
        f"min {record['min']:g}  max {record['max']:g}"
    )
    if update_card:
        card = read_card()
        card["evaluation"] = record
        write_card(card)
        echo(f"written to {paths.MODEL_CARD}")
        return 0
    card_scores = read_card().get("evaluation", {}).get("scores")
    if card_scores is None:
        return 0
    same = card_scores == record["scores"]
    echo("per-seed scores match the model card" if same else "per-seed scores DIFFER from the model card")
    return 0 if same else 1


def regenerate_fixed_states(check: bool, echo=print) -> int:
    """``rtreport agent fixed-states``: write the fixed states, or regenerate and compare byte for byte."""
    import tempfile

    states, index = harvest_fixed_states(shipped_model(), load_seeds()["fixed_state_harvest"])
    model_sha = sha256_file(paths.AGENT_WEIGHTS)
    if not check:
        write_fixed_states(states, index, paths.FIXED_STATES, paths.FIXED_STATES_INDEX, model_sha)
        echo(f"wrote {len(index)} states to {paths.FIXED_STATES} (sha256 {sha256_file(paths.FIXED_STATES)})")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        npy, idx = Path(tmp) / "fixed_states.npy", Path(tmp) / "fixed_states.json"
        write_fixed_states(states, index, npy, idx, model_sha)
        same = (
            npy.read_bytes() == paths.FIXED_STATES.read_bytes()
            and idx.read_bytes() == paths.FIXED_STATES_INDEX.read_bytes()
        )
    echo(
        "regenerated fixed states are byte-identical to the shipped ones"
        if same
        else "regenerated fixed states DIFFER from the shipped ones"
    )
    return 0 if same else 1
