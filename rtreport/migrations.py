"""Older run files read in the current schema (``upgrade`` copies a file's rows through these into an
in-memory database): schema 1 (files written before 2026-12) and schema 2 (before the repeats' tables)."""

from __future__ import annotations

import json

from .schema import APPLICATION, SCHEMA_VERSION, V2_TABLES, ddl, seeds_sha256

# -- schema 1 (files written before 2026-12) ------------------------------------------------------------

# Schema 1 kept the report order in rtreport's own code; these were its runtimes, in that order.
V1_ORDER = [
    "torch-cpu-fp32",
    "ort-cpu-fp32",
    "torch-cuda-fp32",
    "torch-cuda-fp32-graph",
    "torch-cuda-fp16",
    "torch-cuda-fp16-graph",
    "torch-cuda-fp32-compile",
    "torch-cuda-fp16-compile",
    "ort-cuda-fp32",
    "ort-cuda-fp32-graph",
    "ort-cuda-fp16",
    "ort-cuda-fp16-graph",
    "trt-fp32",
    "trt-fp32-graph",
    "trt-fp16",
    "trt-fp16-graph",
    "ort-trt-fp32",
    "ort-trt-fp16",
]
V1_LIBRARY_KEYS = ("torch", "onnxruntime", "tensorrt", "triton", "cuda", "cudnn")


def numerics_from_v1(details: dict) -> dict:
    """Schema 1 said a runtime's TF32 state in runner-specific shapes, some of them prose; schema 2 names it."""
    tf32 = details.get("tf32")
    if isinstance(tf32, dict) and "use_tf32" in tf32:
        return {"tf32": "on" if str(tf32["use_tf32"]) == "1" else "off", "switches": {"use_tf32": tf32["use_tf32"]}}
    if isinstance(tf32, dict) and {"matmul", "cudnn"} <= set(tf32):
        return {
            "tf32": "on" if tf32["matmul"] or tf32["cudnn"] else "off",
            "switches": {"matmul": tf32["matmul"], "cudnn": tf32["cudnn"]},
        }
    if isinstance(tf32, str):
        if "CPU" in tf32:
            return {"tf32": "not-applicable"}
        if tf32.startswith("off"):
            return {"tf32": "off", "switches": {"BuilderFlag.TF32": "cleared"}}
        if tf32.startswith("strongly typed"):
            return {"tf32": "by-types"}
        if "default" in tf32:
            return {"tf32": "default"}
    return {}


def _from_v1(mem) -> None:
    environment = {
        "torch": "torch_version",
        "onnxruntime": "onnxruntime_version",
        "tensorrt": "tensorrt_version",
        "ale-py": "ale_py_version",
        "gymnasium": "gymnasium_version",
        "numpy": "numpy_version",
    }
    env_sql = "json_object(" + ", ".join(f"'{k}', {v}" for k, v in environment.items()) + ")"
    mem.execute(f"""
        INSERT INTO runs SELECT run_id, label, started_at, finished_at, status, status_detail, profile, host, os, cpu,
            cpu_count, gpu_name, gpu_driver, cuda_version, python_version, {env_sql}, rtreport_version, code_version,
            NULL, model_path, model_format, model_sha256, num_actions, NULL, NULL, reference_runtime, eval_epsilon,
            protocol, settings FROM src.runs""")
    for run_id, settings in mem.execute("SELECT run_id, settings FROM runs").fetchall():  # derivable: the seed list
        seeds = json.loads(settings or "{}").get("seeds")
        if seeds is not None:
            mem.execute("UPDATE runs SET seeds_sha256 = ? WHERE run_id = ?", [seeds_sha256(seeds), run_id])
    rows = mem.execute(
        "SELECT run_id, runtime_id, title, framework, device, precision, variant, status, reason, "
        "artifact_path, artifact_bytes, prepare_seconds, details FROM src.runtimes"
    ).fetchall()
    for r in rows:
        details = json.loads(r[12]) if r[12] else {}
        libraries = {k: details.pop(k) for k in V1_LIBRARY_KEYS if details.get(k) is not None}
        numerics = numerics_from_v1(details)
        details.pop("tf32", None)
        position = V1_ORDER.index(r[1]) if r[1] in V1_ORDER else len(V1_ORDER)
        mem.execute(
            "INSERT INTO runtimes VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                r[0],
                r[1],
                position,
                *r[2:12],
                json.dumps(libraries, sort_keys=True),
                json.dumps(numerics, sort_keys=True),
                json.dumps(details, sort_keys=True),
            ],
        )
    mem.execute(
        "INSERT INTO latency SELECT run_id, runtime_id, kind, batch_size, 0, iteration, seconds FROM src.latency"
    )
    mem.execute("INSERT INTO state_q SELECT run_id, runtime_id, state_index, q_values, action FROM src.state_q")
    mem.execute("""
        INSERT INTO episodes SELECT e.run_id, e.runtime_id, e.seed, e.score, e.steps, e.truncated, e.step_cap,
            e.seconds, a.actions, NULL, NULL
        FROM src.episodes e LEFT JOIN (
            SELECT run_id, runtime_id, seed, list(TRY_CAST(action AS UTINYINT) ORDER BY step) AS actions
            FROM src.actions GROUP BY ALL) a USING (run_id, runtime_id, seed)""")
    mem.execute(
        "INSERT INTO sessions SELECT run_id, 0, started_at, finished_at, status, status_detail, NULL, "
        "rtreport_version, host FROM src.runs"
    )


def _from_v2(mem) -> None:
    """Schema 2 is schema 3 without the repeats' tables, ``play_time`` and ``twins``."""
    for table in V2_TABLES:
        if table != "meta":
            mem.execute(f"INSERT INTO {table} SELECT * FROM src.{table}")


MIGRATIONS = {1: _from_v1, 2: _from_v2}


def upgrade(path: str, version: int):
    """An in-memory database of the current schema holding the file's rows (read-only ``ATTACH``)."""
    import duckdb

    if version not in MIGRATIONS:
        raise ValueError(f"no migration from schema version {version}")
    mem = duckdb.connect()
    mem.execute(ddl(keys=False))
    mem.execute(f"ATTACH '{str(path).replace(chr(39), chr(39) * 2)}' AS src (READ_ONLY)")
    try:
        MIGRATIONS[version](mem)
    finally:
        mem.execute("DETACH src")
    mem.executemany(
        "INSERT INTO meta VALUES (?, ?)",
        [("application", APPLICATION), ("schema_version", str(SCHEMA_VERSION)), ("migrated_from", str(version))],
    )
    return mem
