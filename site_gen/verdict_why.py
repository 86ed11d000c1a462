"""Each runtime's verdict in one short reason, as the machine page's verdicts table gives it beside the badge, and
every gate's full reason, runtime by runtime, as the machine's tables page gives it (one table a gate)."""

from __future__ import annotations

from . import claims
from .analysis import RunResult
from .findings import failed_why, undecided_why
from .wording import WITHHELD_REASON, gate_reason, reproduction, speed, stood_in, twin

GATE_HEADINGS = {"faster": "tables_gate_faster", "agreement": "tables_gate_agreement", "play": "tables_gate_play"}


def short_why(r, res: RunResult, t) -> str:
    """Why this verdict, in a line: the speed of a runtime that passes every gate, the failing gates of one that is
    not adopted, what keeps one undecided; for a runtime without a verdict, why the run draws none (a smoke run, no
    usable reference, a damaged file), else ""."""
    if r.verdict is None:
        return t(WITHHELD_REASON[res.withheld]) if res.withheld in WITHHELD_REASON and not r.is_reference else ""
    outcome = r.verdict.outcome
    if outcome == "not-adopted":
        return failed_why(r, t)
    if outcome == "undecided":
        return undecided_why(r, t)
    ratio = r.ratios.get(res.gates.speed_statistic) if r.ratios else None
    if not ratio:
        return t("why_passes_all")
    rid = r.rows.runtime_id
    return claims.say(
        t,
        claims.speed_kind(ratio),
        "why_passes",
        ratio,
        rid,
        stat=res.gates.speed_statistic.upper(),
        speed=speed(ratio, t, rid),
    )


def gate_tables(res: RunResult, t) -> list[dict]:
    """[{key, heading, table}]: one table for each gate (every judged runtime's reason for it), then one of
    reproduction in fresh processes (and the twins and stand-ins that played in a runtime's place)."""
    judged = [r for r in res.runtimes if r.verdict]
    out = []
    for gate, heading in GATE_HEADINGS.items():
        rows = [
            [r.rows.title, gate_reason(g, t, r.rows.runtime_id)]
            for r in judged
            for g in r.verdict.gates
            if g.gate == gate
        ]
        if rows:
            out.append({"key": f"gate-{gate}", "heading": t(heading), "table": _table(rows, t)})
    rows = []
    for r in res.runtimes:
        rid, said = r.rows.runtime_id, []
        if r.reproduction:
            said.append(reproduction(r.reproduction, t, rid))
        if r.twin:
            said.append(twin(r.twin, t, rid))
        if r.shadow and r.shadow.get("stood_in"):
            said.append(stood_in(r.shadow["stood_in"], t, rid))
        if said:
            rows.append([r.rows.title, t("semi").join(said)])
    if rows:
        out.append({"key": "reproduction", "heading": t("tables_reproduction"), "table": _table(rows, t)})
    return out


def _table(rows, t) -> dict:
    return {"head": [t("col_runtime"), t("reason")], "rows": rows}
