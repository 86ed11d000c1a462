"""What a run of another agent than the shipped Breakout one adds to reading its file: the name its answer is
grouped and shown under, which agent it judged, the uniformly random policy's scores (the play margin's anchor)
and the continuous actions' difference counts."""

from __future__ import annotations

from pathlib import Path


def agent_label(run: dict) -> str:
    """The machine's label, the environment and the model file's name (``cpu-laptop / CartPole-v1 / ppo.zip``),
    so that each agent a machine measured has its own answer and history."""
    env = (run.get("protocol") or {}).get("gym_id", "?")
    return f"{run['label']} / {env} / {Path(run.get('model_path') or '?').name}"


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
