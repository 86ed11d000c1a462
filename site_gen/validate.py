"""Checks on a run's raw rows before any statistic is derived from them (SQL over the open file).

Each check names a table, what is wrong, and the condition of a bad row; duplicate keys are checked per
table. ``problems`` lists what a file breaks; ``valid_rows`` is the filter that keeps only good rows when
the user publishes an invalid file anyway (``rtreport build --allow-invalid``).
"""

from __future__ import annotations

from dataclasses import dataclass

# table -> [(what is wrong: its key among WRONG's, SQL condition true for a bad row)]; {A}: the run's action count.
CHECKS = {
    "latency": [("seconds", "NOT coalesce(isfinite(seconds) AND seconds >= 0, false)")],
    "state_q": [
        (
            "q_values",
            "NOT coalesce(len(q_values) = {A} AND "
            "list_bool_and(list_transform(q_values, lambda x: coalesce(isfinite(x), false))), false)",
        ),
        ("action", "NOT coalesce(action BETWEEN 0 AND {last}, false)"),
    ],
    "episodes": [
        ("score", "NOT coalesce(isfinite(score), false)"),
        ("seed", "NOT coalesce(list_contains($seeds, seed), false)"),
        ("steps", "NOT coalesce(steps >= 0, false)"),
        (
            "trace",
            "actions IS NOT NULL AND NOT coalesce(len(actions) = steps AND "
            "list_bool_and(list_transform(actions, lambda a: coalesce(a <= {last}, false))), false)",
        ),
    ],
}
# what is wrong, in words (the site says it in each language: site_gen.describe.problem_text)
WRONG = {
    "seconds": "latency not a finite, non-negative number of seconds",
    "q_values": "Q-values not {A} finite numbers",
    "action": "action outside 0–{last}",
    "score": "score not a finite number",
    "seed": "seed not in the run's pre-registered seeds",
    "steps": "negative step count",
    "trace": "action trace not one action in 0–{last} per step",
    "key": "repeating a key ({keys}) already present",
    "twins": "not 0 ≤ differing ≤ checked ≤ decisions",
}
CHECKS["repeat_state_q"] = CHECKS["state_q"]  # a repeat's fixed-state Q-values (schema 3)
KEYS = {
    "latency": ("runtime_id", "kind", "batch_size", "round", "iteration"),
    "state_q": ("runtime_id", "state_index"),
    "episodes": ("runtime_id", "seed"),
    "repeat_state_q": ("runtime_id", "repeat", "state_index"),
    "flips": ("runtime_id", "seed", "step"),
}  # latency and flips: no index checks them (schema.UNINDEXED)


@dataclass(frozen=True)
class Problem:
    table: str
    runtime_id: str
    rows: int
    wrong: str  # a key of WRONG
    params: tuple = ()  # (name, value) pairs its words take: A, last, keys

    @property
    def what(self) -> str:
        return WRONG[self.wrong].format(**dict(self.params))

    def __str__(self) -> str:
        return f"table {self.table}, runtime {self.runtime_id}: {self.rows:,} row{'s' * (self.rows != 1)} {self.what}"


def _conditions(table: str, num_actions: int) -> list[tuple[str, str, tuple]]:
    fill = {"A": num_actions, "last": num_actions - 1}
    return [(wrong, cond.format(**fill), tuple(fill.items())) for wrong, cond in CHECKS.get(table, [])]


def problems(con, run_id: str, num_actions: int, seeds: list) -> list[Problem]:
    found = []
    params = {"run": run_id, "seeds": [int(s) for s in seeds]}
    for table in KEYS:
        for wrong, bad, fill in _conditions(table, num_actions):
            sql = (
                f"SELECT runtime_id, count(*) FROM {table} WHERE run_id = $run AND ({bad}) "
                "GROUP BY runtime_id ORDER BY runtime_id"
            )
            used = {k: v for k, v in params.items() if f"${k}" in sql}
            found += [Problem(table, rid, n, wrong, fill) for rid, n in con.execute(sql, used).fetchall()]
        keys = ", ".join(KEYS[table])
        for rid, n in con.execute(
            f"SELECT runtime_id, sum(c - 1) FROM (SELECT {keys}, count(*) AS c FROM {table} "
            f"WHERE run_id = $run GROUP BY ALL HAVING count(*) > 1) GROUP BY runtime_id "
            "ORDER BY runtime_id",
            {"run": run_id},
        ).fetchall():
            found.append(Problem(table, rid, int(n), "key", (("keys", keys),)))
    if con.execute("SELECT 1 FROM information_schema.tables WHERE table_name = 'twins'").fetchall():
        found += [
            Problem("twins", rid, n, "twins")
            for rid, n in con.execute(
                "SELECT runtime_id, count(*) FROM twins WHERE run_id = ? AND NOT coalesce(0 <= differing AND "
                "differing <= checked AND checked <= decisions, false) GROUP BY runtime_id ORDER BY runtime_id",
                [run_id],
            ).fetchall()
        ]
    return found


def valid_rows(table: str, num_actions: int) -> str:
    """SQL to put after ``FROM <table> WHERE run_id = $run``: only rows that pass every check, the first of
    any repeated key (by storage order)."""
    conditions = " ".join(f"AND NOT ({bad})" for _, bad, _ in _conditions(table, num_actions))
    return f"{conditions} QUALIFY row_number() OVER (PARTITION BY {', '.join(KEYS[table])} ORDER BY rowid) = 1"
