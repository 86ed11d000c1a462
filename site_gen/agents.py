"""What a run of another agent than the shipped Breakout one adds to reading its file: the name its answer is
grouped and shown under, which agent it judged, the uniformly random policy's scores (the play margin's anchor)
and the continuous actions' difference counts."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path


def agent_label(run: dict) -> str:
    """The machine's label, the environment and the model file's name (``cpu-laptop / CartPole-v1 / ppo.zip``),
    so that each agent a machine measured has its own answer and history."""
    env = (run.get("protocol") or {}).get("gym_id", "?")
    return f"{run['label']} / {env} / {Path(run.get('model_path') or '?').name}"


# where a file of the training's preprocessing was found, not what it holds: the same agent moved to another folder
# is the same agent
LOCATIONS = ("file", "folder", "source", "env_id_from", "model_file")


def _content(value):
    if isinstance(value, dict):
        return {k: _content(v) for k, v in value.items() if k not in LOCATIONS}
    return [_content(v) for v in value] if isinstance(value, list) else value


def identity(run: dict) -> tuple[str, str] | None:
    """Which agent a run measured: its model file's SHA-256 and a digest of the preprocessing it played behind (the
    protocol's ``preprocessing``: observation normalisation with its file's SHA-256, the model's folder; its frame
    stack; its ``atari`` settings), where each file was found left out. None: a file that does not say (older
    files, without ``model_sha256`` or a protocol)."""
    protocol = run.get("protocol") or {}
    if not run.get("model_sha256") or not protocol:
        return None
    played = {k: _content(protocol[k]) for k in ("preprocessing", "frame_stack", "atari") if k in protocol}
    return run["model_sha256"], hashlib.sha256(json.dumps(played, sort_keys=True).encode()).hexdigest()


def tell_apart(runs: list[dict]) -> None:
    """Runs shown under one ``agent_label`` that measured different agents (``identity``) become one agent each,
    named by the label and the start of its model's SHA-256 (``cpu / CartPole-v1 / ppo.zip · 3f2a9c1d``; and of its
    preprocessing's digest where one model was played behind two). Only where a label is shared: every other agent
    keeps the label it always had, and so its addresses. The agent measured first keeps the label's addresses
    (``slug_label``); each run keeps its own page's (``agent_base``: ``history.run_slugs``). A run that does not say
    which agent it measured stays with the one measured first. ``display_label`` follows."""
    groups: dict[str, list] = {}
    for run in runs:
        if "machine_label" in run:  # another agent than Breakout's, shown under its agent label
            groups.setdefault(run.get("agent_base", run["label"]), []).append(run)
    changed = []
    for base, group in groups.items():
        if any("agent_base" in run for run in group):
            continue  # told apart already
        first = {}
        for run in sorted(group, key=lambda r: (str(r.get("started_at") or ""), r["run_id"])):
            first.setdefault(identity(run), run)
        known = [who for who in first if who is not None]
        if len(known) < 2:
            continue
        models = [sha for sha, _ in known]
        for run in group:
            sha, played = identity(run) or known[0]
            suffix = sha[:8] + (f" · {played[:8]}" if models.count(sha) > 1 else "")
            run.update(agent_base=base, label=f"{base} · {suffix}")
            run["slug_label"] = base if (sha, played) == known[0] else f"{base} {suffix.replace(' · ', ' ')}"
            changed.append(run)
    counts: dict[str, int] = {}
    for run in runs:
        counts[run["label"]] = counts.get(run["label"], 0) + 1
    for run in changed:  # the date and file that told a shared label's runs apart, where the new label is shared
        shown = run.get("display_label", run["agent_base"])[len(run["agent_base"]) :]
        run["display_label"] = run["label"] + (shown if counts[run["label"]] > 1 else "")


def agent_key(run: dict) -> str:
    """Which task a run judged its agent on: the compare page compares runs of one task only (runs of other models
    on it carry the notice that they were not measured alike, as they always have)."""
    return (run.get("protocol") or {}).get("gym_id", "ALE/Breakout-v5")


def has_table(con, name: str) -> bool:
    return bool(con.execute("SELECT 1 FROM information_schema.tables WHERE table_name = ?", [name]).fetchall())


def random_scores(con, run_id: str) -> dict:
    """seed -> the uniformly random policy's score (files without the table: none)."""
    if not has_table(con, "baseline_episodes"):
        return {}
    return dict(
        con.execute(
            "SELECT seed, score FROM baseline_episodes WHERE run_id = ? AND policy = 'uniform-random'", [run_id]
        ).fetchall()
    )


def shadow_differences(con, run_id: str, runtime_id: str, driver: str) -> list:
    """The runtime's decisions per bin of the action difference, summed over the driver's games."""
    summed = None
    for (counts,) in con.execute(
        "SELECT counts FROM shadow_differences WHERE run_id = ? AND runtime_id = ? AND driver = ?",
        [run_id, runtime_id, driver],
    ).fetchall():
        summed = list(counts) if summed is None else [a + b for a, b in zip(summed, counts)]
    return summed or []
