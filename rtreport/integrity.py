"""A run's own check against later damage: when a collect session ends it records, in the small table
``integrity``, the run's row count and a checksum of its rows in every table (per run, so that runs of several
files unioned into one keep theirs); ``rtreport build`` and ``rtreport check``
recompute both and compare (docs/duckdb-schema.md).

The checksum is DuckDB's 64-bit ``hash`` of each whole row, summed modulo 2^64: independent of row order (a file
compacted or copied keeps it), one pass over each table (0.3 s for the 13 MB H200 file). DuckDB does not promise
the same hash in every version, so the version that made it is recorded with it; a checksum made by another
version is not compared (the row counts still are). Files made before this have no such table: "no checksum
recorded", never "damaged".

A session records checksums only over rows it wrote or verified: ``collect --resume`` and ``--repeat`` refuse a file
whose rows fail theirs, and one with none to verify (a run killed before its session ended) goes on unsealed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

TABLE = "integrity"
CREATE = (
    f"CREATE TABLE IF NOT EXISTS {TABLE} (run_id VARCHAR NOT NULL, table_name VARCHAR NOT NULL, "
    "row_count BIGINT NOT NULL, checksum VARCHAR NOT NULL, method VARCHAR NOT NULL, "
    "PRIMARY KEY (run_id, table_name))"
)


def _method() -> str:
    import duckdb

    return f"sum of duckdb hash(row) mod 2^64, duckdb {duckdb.__version__}"


def _tables(con) -> list[str]:
    """The tables that hold a run's rows (every one with a run_id column, but this one)."""
    return sorted(
        t
        for (t,) in con.execute(
            "SELECT DISTINCT table_name FROM information_schema.columns "
            "WHERE column_name = 'run_id' AND table_schema = "
            "'main' AND table_catalog = current_database()"
        ).fetchall()
        if t != TABLE
    )


def measure(con, run_id: str) -> dict[str, tuple[int, str]]:
    """table -> (rows of the run, checksum of those rows)."""
    out = {}
    for t in _tables(con):
        n, h = con.execute(
            f'SELECT count(*), coalesce(sum(hash(r)::HUGEINT) % 18446744073709551616, 0) FROM "{t}" r WHERE run_id = ?',
            [run_id],
        ).fetchone()
        out[t] = (int(n), f"{int(h):016x}")
    return out


def record(con, run_id: str) -> None:
    """Inside the transaction that ends a session: replace the run's recorded counts and checksums. Only over rows
    the session wrote or verified (``verify``) when it began: ``collect.store.RunStore`` calls ``forget`` instead
    where it could not verify them."""
    forget(con, run_id)
    method = _method()
    for t, (n, h) in measure(con, run_id).items():
        con.execute(f"INSERT INTO {TABLE} VALUES (?, ?, ?, ?, ?)", [run_id, t, n, h, method])


def forget(con, run_id: str) -> None:
    """As a session starts: the run's rows are about to change, so it has no checksum until the session ends."""
    con.execute(CREATE)
    con.execute(f"DELETE FROM {TABLE} WHERE run_id = ?", [run_id])


@dataclass(frozen=True)
class Damage:
    """What differs in one table: ``kind`` "gone" (the table), "rows" (another row count), "contents" (the same
    count, another checksum) or "added" (rows in a table that had none)."""

    kind: str
    table: str
    rows: int = 0  # rows now
    recorded: int = 0  # rows recorded at the run's end

    def __str__(self) -> str:
        return {
            "gone": f"table {self.table} is gone ({self.recorded:,} rows recorded)",
            "rows": f"table {self.table} holds {self.rows:,} rows, {self.recorded:,} recorded at the run's end",
            "contents": (
                f"table {self.table} holds as many rows as recorded ({self.rows:,}), "
                "but their contents differ (checksum)"
            ),
            "added": f"table {self.table} holds rows added after the run's end",
        }[self.kind]


@dataclass
class Verdict:
    state: str  # "ok", "no checksum recorded", "damaged"
    problems: list = field(default_factory=list)  # Damage: what differs
    note: str | None = None  # e.g. a checksum of another DuckDB version not compared

    @property
    def damaged(self) -> bool:
        return self.state == "damaged"

    @property
    def verified(self) -> bool:
        """Every row checked against its checksum (not so where none is recorded, or one is of another version)."""
        return self.state == "ok" and self.note is None

    def line(self) -> str:
        text = {
            "ok": "every table holds the rows recorded at the run's end",
            "no checksum recorded": "no checksum recorded (a file made before rtreport recorded one, a run "
            "still going or killed before its session ended, or one continued from such a file)",
            "damaged": "damaged: " + "; ".join(map(str, self.problems)),
        }[self.state]
        return text + (f" ({self.note})" if self.note else "")


def verify(con, run_id: str) -> Verdict:
    """The run's rows now against those recorded when its last session ended."""
    tables = {t for (t,) in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    recorded = (
        con.execute(
            f"SELECT table_name, row_count, checksum, method FROM {TABLE} WHERE run_id = ? ORDER BY table_name",
            [run_id],
        ).fetchall()
        if TABLE in tables
        else []
    )
    if not recorded:
        return Verdict("no checksum recorded")
    now, method, problems, note = measure(con, run_id), _method(), [], None
    for t, n, h, made_by in recorded:
        if t not in now:
            problems.append(Damage("gone", t, recorded=n))
        elif now[t][0] != n:
            problems.append(Damage("rows", t, now[t][0], n))
        elif now[t][1] != h:
            if made_by == method:
                problems.append(Damage("contents", t, n, n))
            else:
                note = (
                    f"checksums made by {made_by.rsplit(', ', 1)[-1]} are not compared by {method.rsplit(', ', 1)[-1]}"
                )
    extra = sorted(t for t in set(now) - {t for t, *_ in recorded} if now[t][0])
    problems += [Damage("added", t, now[t][0]) for t in extra]
    return Verdict("damaged" if problems else "ok", problems, note)
