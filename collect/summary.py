"""The closing terminal summary of ``rtreport collect`` and the ``--list-runtimes`` listing: plain text
that fits 80 columns without cutting a number, runtimes that did not run grouped by reason."""

from __future__ import annotations

import json
import textwrap

import duckdb
import numpy as np

from rtreport import action_difference, latency_stats
from rtreport.stats import percent, same_action_count

COLUMNS = [
    ("runtime", 23, "<"),
    ("P50 ms", 8, ">"),
    ("P95 ms", 8, ">"),
    ("states", 7, ">"),
    ("in play", 9, ">"),
    ("mean score", 14, ">"),
]


def _row(cells) -> str:
    return " ".join(f"{c:{align}{width}}" for c, (_, width, align) in zip(cells, COLUMNS)).rstrip()


def _typical_ms(con, run_id: str, rid: str) -> dict | None:
    """P50 and P95 (ms) as the site publishes them: each round's, then their geometric mean within each
    measurement and over the measurements (``latency_stats.interval``), not a percentile of every sample pooled,
    which a few slow rounds (under load) would set."""
    found = con.execute(
        "SELECT l.round, coalesce(TRY_CAST(r.conditions->>'repeat' AS INTEGER), 0), list(l.seconds ORDER BY "
        "l.iteration) FROM latency l LEFT JOIN rounds r ON r.run_id = l.run_id AND r.runtime_id = l.runtime_id "
        "AND r.round = l.round WHERE l.run_id = ? AND l.runtime_id = ? AND l.kind = 'decision' "
        "GROUP BY l.round, r.conditions->>'repeat'",
        [run_id, rid],
    ).fetchall()
    rounds = {k: (rep, np.asarray(seconds, dtype=float)) for k, rep, seconds in found}
    if not rounds:
        return None
    out = {}
    for q in ("p50", "p95"):
        values = latency_stats.per_round(rounds, q)
        result = latency_stats.interval(values)
        out[q] = result["value"] if result else next((v for _, v in values.values()), float("nan"))
    return out


def grouped_reasons(rows, width: int = 80) -> list[str]:
    """``rows``: (runtime id, reason). One wrapped line group per distinct reason, naming its runtimes."""
    by_reason: dict[str, list[str]] = {}
    for rid, reason in rows:
        by_reason.setdefault(reason or "no reason recorded", []).append(rid)
    lines = []
    for reason, ids in by_reason.items():
        text = f"{', '.join(ids)}: {reason}"
        lines += textwrap.wrap(
            text,
            width=width,
            initial_indent="  - ",
            subsequent_indent="    ",
            break_long_words=False,
            break_on_hyphens=False,
        )
    return lines


def summary_lines(con, run_id: str, reference: str | None, order: list[str], width: int = 80) -> list[str]:
    """A first look at the file just written (rtreport build derives the full statistics)."""
    rows = con.execute("SELECT runtime_id, status, reason FROM runtimes WHERE run_id = ?", [run_id]).fetchall()
    rows.sort(key=lambda r: order.index(r[0]) if r[0] in order else len(order))
    ref_q = _state_q(con, run_id, reference) if reference else None
    protocol = _protocol(con, run_id)
    continuous = protocol.get("action_kind") == "continuous"
    agreeing = "actions within the tolerance" if continuous else "same action"
    lines = textwrap.wrap(
        f"first look, reference {reference or 'none'}; {agreeing} on the fixed states and in play",
        width=width,
        break_long_words=False,
        break_on_hyphens=False,
    )  # whole words, never cut
    lines.append(_row([c[0] for c in COLUMNS]))
    measured = [r for r in rows if r[1] != "unavailable"]
    for rid, status, _ in measured:
        lat = _typical_ms(con, run_id, rid)
        q = _state_q(con, run_id, rid)
        scores = [
            r[0]
            for r in con.execute(
                "SELECT score FROM episodes WHERE run_id = ? AND runtime_id = ?", [run_id, rid]
            ).fetchall()
        ]
        agree = played = "—"
        if rid == reference:
            agree = played = "ref."
        elif ref_q is not None and q is not None and len(q) == len(ref_q) and continuous:
            within = action_difference.fixed_states(
                ref_q, q, protocol["action_low"], protocol["action_high"], float(protocol["action_tolerance"])
            )["same_actions"]
            agree = f"{within}/{len(q)}"
        elif ref_q is not None and q is not None and len(q) == len(ref_q):
            agree = f"{same_action_count(ref_q.argmax(1), q.argmax(1))}/{len(q)}"
        same, decisions = con.execute(
            "SELECT sum(same), sum(decisions) FROM shadow WHERE run_id = ? AND runtime_id = ? AND driver = ?",
            [run_id, rid, reference],
        ).fetchone()
        if decisions:
            played = percent(same / decisions, 2)  # never "100.00 %" for a share that is not all
        lines.append(
            _row(
                [
                    rid,
                    f"{lat['p50']:.3f}" if lat else "—",
                    f"{lat['p95']:.3f}" if lat else "—",
                    agree,
                    played,
                    f"{np.mean(scores):.1f} ({len(scores)})" if scores else "—",
                ]
            )
        )
    failed = [(rid, reason) for rid, status, reason in rows if status == "failed"]
    if failed:
        lines.append("failed (kept what they measured before failing):")
        lines += grouped_reasons(failed, width)
    unavailable = [(rid, reason) for rid, status, reason in rows if status == "unavailable"]
    if unavailable:
        lines.append("not run here:")
        lines += grouped_reasons(unavailable, width)
    return lines


def _protocol(con, run_id) -> dict:
    """The run's stored task (``collect.tasks``' protocol), {} for a file without one."""
    try:
        (text,) = con.execute("SELECT protocol FROM runs WHERE run_id = ?", [run_id]).fetchone()
    except duckdb.Error:  # a file older than the stored protocol
        return {}
    return json.loads(text) if text else {}


def _state_q(con, run_id, runtime_id):
    rows = con.execute(
        "SELECT q_values FROM state_q WHERE run_id = ? AND runtime_id = ? ORDER BY state_index", [run_id, runtime_id]
    ).fetchall()
    return np.array([r[0] for r in rows], dtype=np.float64) if rows else None
