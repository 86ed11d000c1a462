"""The DuckDB file: the one contract between ``collect`` (which writes it) and ``site_gen`` (which reads it).

Raw observations plus provenance; nothing derived. Every fact table has a key: a PRIMARY KEY, except on the two
large tables (``UNINDEXED``), whose key ``site_gen.validate`` checks when a file is read. Files of an older
schema are read through ``upgrade``, which copies them into an in-memory database of the current schema
(the file itself is never changed). docs/duckdb-schema.md explains every column.
"""

from __future__ import annotations

import hashlib
import json

APPLICATION = "rtreport"
SCHEMA_VERSION = 3
CONTINUABLE = (2, 3)  # versions collect --resume / --repeat continue (upgraded in place: tables added)

# table -> (columns, primary key). Types are DuckDB's.
TABLES: dict[str, tuple[list[tuple[str, str]], tuple[str, ...]]] = {
    "meta": ([("key", "VARCHAR"), ("value", "VARCHAR NOT NULL")], ("key",)),
    "runs": (
        [
            ("run_id", "VARCHAR"),
            ("label", "VARCHAR NOT NULL"),
            ("started_at", "TIMESTAMP NOT NULL"),
            ("finished_at", "TIMESTAMP"),  # UTC
            ("status", "VARCHAR NOT NULL"),
            ("status_detail", "VARCHAR"),  # running|complete|incomplete
            ("profile", "VARCHAR NOT NULL"),  # full|quick
            ("host", "VARCHAR"),
            ("os", "VARCHAR"),
            ("cpu", "VARCHAR"),
            ("cpu_count", "INTEGER"),
            ("gpu_name", "VARCHAR"),
            ("gpu_driver", "VARCHAR"),
            ("cuda_version", "VARCHAR"),
            ("python_version", "VARCHAR"),
            ("environment", "JSON"),  # {distribution: version} of every library the run could use
            ("rtreport_version", "VARCHAR"),
            ("code_version", "VARCHAR"),
            ("code_hash", "VARCHAR"),
            ("model_path", "VARCHAR"),
            ("model_format", "VARCHAR"),
            ("model_sha256", "VARCHAR"),
            ("num_actions", "INTEGER"),
            ("fixed_states_sha256", "VARCHAR"),
            ("seeds_sha256", "VARCHAR"),
            ("reference_runtime", "VARCHAR"),
            ("eval_epsilon", "DOUBLE"),
            ("protocol", "JSON"),
            ("settings", "JSON"),
        ],
        ("run_id",),
    ),
    "runtimes": (
        [
            ("run_id", "VARCHAR"),
            ("runtime_id", "VARCHAR"),
            ("position", "INTEGER"),  # report order
            ("title", "VARCHAR"),
            ("framework", "VARCHAR"),
            ("device", "VARCHAR"),
            ("precision", "VARCHAR"),
            ("variant", "VARCHAR"),
            ("status", "VARCHAR NOT NULL"),
            ("reason", "VARCHAR"),  # available|failed|unavailable
            ("artifact_path", "VARCHAR"),
            ("artifact_bytes", "BIGINT"),
            ("prepare_seconds", "DOUBLE"),
            ("libraries", "JSON"),  # {library: version} this runtime ran on
            ("numerics", "JSON"),  # {"tf32": "off"|"on"|"not-applicable"|"by-types"|"default", "switches": {...}}
            ("details", "JSON"),  # anything else the runner says about itself
        ],
        ("run_id", "runtime_id"),
    ),
    "latency": (
        [
            ("run_id", "VARCHAR"),
            ("runtime_id", "VARCHAR"),
            ("kind", "VARCHAR"),
            ("batch_size", "INTEGER"),
            ("round", "INTEGER"),
            ("iteration", "INTEGER"),
            ("seconds", "DOUBLE"),
        ],
        ("run_id", "runtime_id", "kind", "batch_size", "round", "iteration"),
    ),
    "state_q": (
        [
            ("run_id", "VARCHAR"),
            ("runtime_id", "VARCHAR"),
            ("state_index", "INTEGER"),
            ("q_values", "FLOAT[]"),
            ("action", "INTEGER"),
        ],
        ("run_id", "runtime_id", "state_index"),
    ),
    # The fixed states of a task that ships none (every task but Breakout, whose states are data/fixed_states.npy):
    # taken from the reference model's own play on the harvest seeds when the run began; the observation's raw
    # bytes, C order, of the shape and dtype the run's protocol names.
    "task_states": (
        [
            ("run_id", "VARCHAR"),
            ("state_index", "INTEGER"),
            ("seed", "BIGINT"),
            ("step", "INTEGER"),
            ("episode_steps", "INTEGER"),
            ("observation", "BLOB"),
        ],
        ("run_id", "state_index"),
    ),
    # Episodes of a policy that is no runtime: a uniformly random policy on the play seeds, whose mean score anchors
    # the play margin on tasks of any return scale (the gates file's rule).
    "baseline_episodes": (
        [
            ("run_id", "VARCHAR"),
            ("policy", "VARCHAR"),
            ("seed", "BIGINT"),
            ("score", "DOUBLE"),
            ("steps", "INTEGER"),
            ("truncated", "BOOLEAN"),
        ],
        ("run_id", "policy", "seed"),
    ),
    "episodes": (
        [
            ("run_id", "VARCHAR"),
            ("runtime_id", "VARCHAR"),
            ("seed", "BIGINT"),
            ("score", "DOUBLE"),
            ("steps", "INTEGER"),
            ("truncated", "BOOLEAN"),
            ("step_cap", "INTEGER"),
            ("seconds", "DOUBLE"),
            ("actions", "UTINYINT[]"),
            # NULL: played by this runtime. Else the runtime whose played episode this is, established
            # without replaying it: this runtime took that runtime's greedy action at every step of it.
            ("source", "VARCHAR"),
            ("margin_counts", "INTEGER[]"),
        ],  # played episodes: decisions per top-two margin bin
        ("run_id", "runtime_id", "seed"),
    ),
    # Latency rounds: when each round of each runtime ran, in what order, in which phase of the run or repeat,
    # and the host's and GPU's state then.
    "rounds": (
        [
            ("run_id", "VARCHAR"),
            ("runtime_id", "VARCHAR"),
            ("round", "INTEGER"),
            ("position", "INTEGER"),
            ("started_at", "TIMESTAMP"),
            ("conditions", "JSON"),
        ],
        ("run_id", "runtime_id", "round"),
    ),
    # Shadow evaluation: a runtime shown every observation of an episode another runtime (the driver) played.
    "shadow": (
        [
            ("run_id", "VARCHAR"),
            ("runtime_id", "VARCHAR"),
            ("seed", "BIGINT"),
            ("driver", "VARCHAR"),
            ("decisions", "INTEGER"),
            ("same", "INTEGER"),
            ("first_flip", "INTEGER"),
            ("complete", "BOOLEAN"),
        ],  # false: stopped at the first flip (identity check only)
        ("run_id", "runtime_id", "seed", "driver"),
    ),
    # Every flip against the reference's greedy action along the reference's episodes.
    # Continuous actions: per shadow episode, its decisions per bin of the action difference from the driver's
    # (``rtreport.action_difference.BIN_EDGES``); ``shadow.same`` counts those within the run's tolerance.
    "shadow_differences": (
        [
            ("run_id", "VARCHAR"),
            ("runtime_id", "VARCHAR"),
            ("seed", "BIGINT"),
            ("driver", "VARCHAR"),
            ("counts", "INTEGER[]"),
        ],
        ("run_id", "runtime_id", "seed", "driver"),
    ),
    "flips": (
        [
            ("run_id", "VARCHAR"),
            ("runtime_id", "VARCHAR"),
            ("seed", "BIGINT"),
            ("step", "INTEGER"),
            ("reference_action", "UTINYINT"),
            ("action", "UTINYINT"),
            ("reference_margin", "DOUBLE"),
            ("margin", "DOUBLE"),
        ],
        ("run_id", "runtime_id", "seed", "step"),
    ),
    # What a decision costs: per runtime, the profiler's kernels and copies over a sample of decisions …
    "kernels": (
        [
            ("run_id", "VARCHAR"),
            ("runtime_id", "VARCHAR"),
            ("name", "VARCHAR"),
            ("kind", "VARCHAR"),
            ("calls", "INTEGER"),
            ("seconds", "DOUBLE"),
            ("decisions", "INTEGER"),
        ],  # kernel|memcpy_htod|…
        ("run_id", "runtime_id", "name", "kind"),
    ),
    # … memory added by preparing it, energy per decision and the power around it …
    "resources": (
        [
            ("run_id", "VARCHAR"),
            ("runtime_id", "VARCHAR"),
            ("kind", "VARCHAR"),
            ("value", "DOUBLE"),
            ("unit", "VARCHAR"),
            ("method", "VARCHAR"),
        ],
        ("run_id", "runtime_id", "kind"),
    ),
    # … and the floor under any GPU decision: a 28 KB copy in and a 16 B copy out.
    "floors": (
        [("run_id", "VARCHAR"), ("kind", "VARCHAR"), ("iteration", "INTEGER"), ("seconds", "DOUBLE")],
        ("run_id", "kind", "iteration"),
    ),
    # Each command that wrote to the run: the first, and every --resume.
    "sessions": (
        [
            ("run_id", "VARCHAR"),
            ("session", "INTEGER"),
            ("started_at", "TIMESTAMP"),
            ("finished_at", "TIMESTAMP"),
            ("status", "VARCHAR"),
            ("detail", "VARCHAR"),
            ("code_hash", "VARCHAR"),
            ("rtreport_version", "VARCHAR"),
            ("host", "VARCHAR"),
        ],
        ("run_id", "session"),
    ),
    # Schema 3: repeats (collect --repeat), short re-measurements of a complete run in fresh processes: when, by
    # which session, on what machine and software; their latency rounds go to latency/rounds (conditions.repeat) …
    "repeats": (
        [
            ("run_id", "VARCHAR"),
            ("repeat", "INTEGER"),
            ("session", "INTEGER"),
            ("started_at", "TIMESTAMP"),
            ("finished_at", "TIMESTAMP"),
            ("machine", "JSON"),
            ("runtimes", "JSON"),
        ],
        ("run_id", "repeat"),
    ),
    # … and the fixed states' Q-values each repeat computed, to compare bit for bit with state_q.
    "repeat_state_q": (
        [
            ("run_id", "VARCHAR"),
            ("runtime_id", "VARCHAR"),
            ("repeat", "INTEGER"),
            ("state_index", "INTEGER"),
            ("q_values", "FLOAT[]"),
            ("action", "INTEGER"),
        ],
        ("run_id", "runtime_id", "repeat", "state_index"),
    ),
    # … and where play's time went: each play process's running totals at the end of each look (collect.play.timing;
    # process 0 is the main process), so a look's share is the difference between two looks' rows.
    "play_time": (
        [
            ("run_id", "VARCHAR"),
            ("session", "INTEGER"),
            ("look", "INTEGER"),
            ("process", "INTEGER"),
            ("component", "VARCHAR"),
            ("calls", "BIGINT"),
            ("seconds", "DOUBLE"),
        ],
        ("run_id", "session", "look", "process", "component"),
    ),
    # … and, per game, each runtime whose decisions its twin (its CUDA-graph capture: ``collect.play.twins``)
    # computed, how many the runtime recomputed itself and how many of those differed in any bit.
    "twins": (
        [
            ("run_id", "VARCHAR"),
            ("runtime_id", "VARCHAR"),
            ("seed", "BIGINT"),
            ("driver", "VARCHAR"),
            ("twin", "VARCHAR"),
            ("decisions", "INTEGER"),
            ("checked", "INTEGER"),
            ("differing", "INTEGER"),
        ],
        ("run_id", "runtime_id", "seed", "driver"),
    ),
    # … and latency rounds measured again because other processes loaded the host while they ran
    # (``rtreport.host_load``): each superseded attempt's samples and conditions, kept as measured; the round in
    # ``rounds`` and ``latency`` is the attempt that counts (its conditions say how many attempts came before it).
    "retaken": (
        [
            ("run_id", "VARCHAR"),
            ("runtime_id", "VARCHAR"),
            ("round", "INTEGER"),
            ("attempt", "INTEGER"),
            ("started_at", "TIMESTAMP"),
            ("conditions", "JSON"),
            ("seconds", "DOUBLE[]"),
        ],
        ("run_id", "runtime_id", "round", "attempt"),
    ),
}
# Tables whose key is not a DuckDB PRIMARY KEY: an index (an ART) over their rows took more room than the rows
# themselves (the H200 file: 19.7 MB with them, 14.7 MB without; its 302,600 latency rows are 2 MB). Their writers
# never insert a key twice (a latency round gets a number no row of the file has; a flip is one step of one episode,
# stored once with it), and ``site_gen.validate`` refuses a file that repeats one, as it does for every table.
UNINDEXED = ("latency", "flips")
# Tables of each older schema version (a file of that version must hold them all).
V1_TABLES = ["meta", "runs", "runtimes", "latency", "state_q", "episodes", "actions"]
V2_TABLES = [
    t
    for t in TABLES
    if t
    not in (
        "repeats",
        "repeat_state_q",
        "play_time",
        "twins",
        "retaken",
        "task_states",
        "baseline_episodes",
        "shadow_differences",
    )
]
OLD_TABLES = {1: V1_TABLES, 2: V2_TABLES}
# Tables added to schema 3 after files of it were published: a file may lack them (``add_missing_tables`` makes
# them when collect writes to it again). Nothing the site shows depends on ``play_time``; a file without ``twins``
# was played with no twin standing in; one without ``retaken`` was made before loaded rounds were measured again;
# one without ``task_states`` and ``baseline_episodes`` is Breakout's, judged by the rules it was made under.
LATER_V3_TABLES = ("play_time", "twins", "retaken", "task_states", "baseline_episodes", "shadow_differences")


def seeds_sha256(seeds) -> str:
    """The seed list's fingerprint (SHA-256 of its JSON), as every run records it."""
    return hashlib.sha256(json.dumps([int(s) for s in seeds]).encode()).hexdigest()


def ddl(keys: bool = True) -> str:
    """CREATE TABLE statements; ``keys=False`` for a reading copy that must keep a damaged file's repeats."""
    out = []
    for table, (columns, key) in TABLES.items():
        cols = [f"{name} {kind}" for name, kind in columns]
        if keys and table not in UNINDEXED:
            cols.append(f"PRIMARY KEY ({', '.join(key)})")
        out.append(f"CREATE TABLE {table} ({', '.join(cols)});")
    return "\n".join(out)


def create_statements() -> dict[str, str]:
    """table -> its CREATE TABLE statement (``ddl`` writes one a line, in ``TABLES``'s order)."""
    return dict(zip(TABLES, ddl().split("\n")))


def add_missing_tables(con) -> list[str]:
    """Tables of this schema version a file lacks (one written while the version was still growing), created
    empty; the file's rows stay as they are. Returns the tables made."""
    have = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    made = []
    for table, statement in create_statements().items():
        if table not in have:
            con.execute(statement)
            made.append(table)
    return made


def upgrade_in_place(con) -> None:
    """A file of a version in ``CONTINUABLE`` brought to this version for writing: schema 3 only added tables."""
    add_missing_tables(con)
    con.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", [str(SCHEMA_VERSION)])


def create(con) -> None:
    con.execute(ddl())
    con.executemany(
        "INSERT INTO meta VALUES (?, ?)", [("application", APPLICATION), ("schema_version", str(SCHEMA_VERSION))]
    )


def repack(source, dest) -> dict[str, int]:
    """Copy every table of the file ``source`` into a new file ``dest`` made with this code's table definitions
    (a file written with an index on a large table gets a compact copy); rows unchanged, so each run's integrity
    checksums still hold. Returns table -> rows copied."""
    import duckdb

    from . import integrity

    def quoted(path) -> str:
        return "'" + str(path).replace("'", "''") + "'"

    con = duckdb.connect()
    try:
        con.execute(f"ATTACH {quoted(source)} AS src (READ_ONLY)")
        # the copy keeps the source's storage format, so whatever DuckDB read the source reads the copy
        tags = con.execute("SELECT tags FROM duckdb_databases() WHERE database_name = 'src'").fetchone()[0] or {}
        version = str(tags.get("storage_version") or "v1.0.0").rstrip("+")
        con.execute(f"ATTACH {quoted(dest)} AS dst (STORAGE_VERSION '{version}')")
        con.execute("USE dst")
        have = [
            t for (t,) in con.execute("SELECT table_name FROM duckdb_tables() WHERE database_name = 'src'").fetchall()
        ]
        for table, statement in create_statements().items():
            if table in have:
                con.execute(statement)
        copied = {}
        for table in have:
            if table == integrity.TABLE:
                con.execute(integrity.CREATE)
            elif table not in TABLES:  # a table this code does not know: its columns as the source has them
                con.execute(f'CREATE TABLE "{table}" AS SELECT * FROM src."{table}" WITH NO DATA')
            con.execute(f'INSERT INTO "{table}" SELECT * FROM src."{table}"')
            copied[table] = con.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0]
        con.execute("USE memory")
        con.execute("DETACH src")
        con.execute("DETACH dst")
    finally:
        con.close()
    return copied
