"""The closing terminal table of ``rtreport collect``: a first look, read back from the file just written."""
from __future__ import annotations

import numpy as np
from rich.table import Table

from site_gen.stats import max_abs_difference, percentile, same_action_count


def summary_table(con, run_id: str, reference: str | None, order: list[str]) -> tuple[Table, list[str]]:
    """The table, and one line per runtime that did not run (with its reason)."""
    table = Table(title=f"first look; reference {reference or '—'} (rtreport build derives the full statistics)")
    notes = []
    for col in ("runtime", "status", "P50 ms", "P95 ms", "same act.", "max |ΔQ|", "mean score"):
        table.add_column(col, justify="left" if col in ("runtime", "status") else "right", no_wrap=col in ("runtime", "status"))
    ref_q = _state_q(con, run_id, reference) if reference else None
    rows = con.execute("SELECT runtime_id, title, status, reason FROM runtimes WHERE run_id = ?", [run_id]).fetchall()
    for rid, title, status, reason in sorted(rows, key=lambda r: order.index(r[0]) if r[0] in order else len(order)):
        if status != "available":
            notes.append(f"{title}: {status} — {reason}")
        lat = [r[0] for r in con.execute("SELECT seconds FROM latency WHERE run_id = ? AND runtime_id = ? "
                                         "AND kind = 'decision' ORDER BY iteration", [run_id, rid]).fetchall()]
        q = _state_q(con, run_id, rid)
        scores = [r[0] for r in con.execute("SELECT score FROM episodes WHERE run_id = ? AND runtime_id = ?",
                                            [run_id, rid]).fetchall()]
        agree = delta = "—"
        if ref_q is not None and q is not None and len(q) == len(ref_q):
            agree = f"{same_action_count(ref_q.argmax(1), q.argmax(1))}/{len(q)}"
            delta = f"{max_abs_difference(ref_q, q):.2e}"
        table.add_row(rid, status,
                      f"{percentile(lat, 50) * 1e3:.3f}" if lat else "—",
                      f"{percentile(lat, 95) * 1e3:.3f}" if lat else "—",
                      agree, delta, f"{np.mean(scores):.1f} ({len(scores)})" if scores else "—")
    return table, notes


def _state_q(con, run_id, runtime_id):
    rows = con.execute("SELECT q_values FROM state_q WHERE run_id = ? AND runtime_id = ? ORDER BY state_index",
                       [run_id, runtime_id]).fetchall()
    return np.array([r[0] for r in rows], dtype=np.float64) if rows else None
