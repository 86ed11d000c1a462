"""Two real ``rtreport collect`` processes at once, with one ``--label`` and the default artifacts folder, on two
different models: each run exports its ONNX model into a folder of its own (``artifacts/<label>/<run id>``), and
its play processes load that one, never the other run's, so ONNX Runtime agrees with each run's own reference on
every fixed state and every decision of play."""

from __future__ import annotations

import subprocess
import sys
from datetime import datetime

import duckdb
import numpy as np
import torch

from rtreport.labels import slug

LABEL = "two at once"
CANDIDATE = "ort-cpu-fp32"


def _models(folder):
    """Two CartPole MLPs that never choose the same action: the second is the first with its output negated, so a
    runtime that loaded the other run's model disagrees with its reference on every decision."""
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.Tanh(), torch.nn.Linear(16, 2))
    paths = []
    for name, sign in (("a", 1.0), ("b", -1.0)):
        with torch.no_grad():
            flipped = torch.nn.Sequential(net[0], net[1], torch.nn.Linear(16, 2))
            flipped[2].weight.copy_(sign * net[2].weight)
            flipped[2].bias.copy_(sign * net[2].bias)
        path = folder / f"{name}.pt"
        torch.jit.save(torch.jit.script(flipped), str(path))
        paths.append(path)
    return paths


def _rows(path) -> dict:
    con = duckdb.connect(str(path), read_only=True)
    try:
        run_id, reference, started, finished = con.execute(
            "SELECT run_id, reference_runtime, started_at, finished_at FROM runs"
        ).fetchone()
        q = {
            rid: np.array(
                [
                    list(v)
                    for (v,) in con.execute(
                        "SELECT q_values FROM state_q WHERE runtime_id = ? ORDER BY state_index", [rid]
                    ).fetchall()
                ]
            )
            for rid in (reference, CANDIDATE)
        }
        actions = dict(
            con.execute(
                "SELECT runtime_id, list(action ORDER BY state_index) FROM state_q GROUP BY runtime_id"
            ).fetchall()
        )
        decisions, same = con.execute(
            "SELECT sum(decisions), sum(same) FROM shadow WHERE runtime_id = ? AND driver = ?", [CANDIDATE, reference]
        ).fetchone()
        artifact = con.execute("SELECT artifact_path FROM runtimes WHERE runtime_id = ?", [CANDIDATE]).fetchone()[0]
        workers = con.execute("SELECT json_extract(settings, '$.play_workers')::INT FROM runs").fetchone()[0]
    finally:
        con.close()
    return {
        "run_id": run_id,
        "reference": reference,
        "span": (started, finished),
        "q": q,
        "actions": actions,
        "play": (decisions, same),
        "artifact": artifact,
        "workers": workers,
    }


def _when(value) -> datetime:
    return value if isinstance(value, datetime) else datetime.fromisoformat(str(value))


def test_two_collects_at_once_with_one_label_never_read_each_others_artifacts(tmp_path):
    models = _models(tmp_path)
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "rtreport", "collect", "--quick", "--repeats", "0", "--rounds", "1"]
            + ["--env", "CartPole-v1", "--model", str(model), "--runtimes", f"torch-cpu-fp32,{CANDIDATE}"]
            + ["--play-workers", "2", "--label", LABEL, "--out", f"{model.stem}.duckdb"],
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for model in models
    ]  # both started before either is waited for
    outputs = [proc.communicate(timeout=600)[0] for proc in procs]
    for proc, output in zip(procs, outputs):
        assert proc.returncode == 0, output
    runs = [_rows(tmp_path / f"{model.stem}.duckdb") for model in models]
    (a_start, a_end), (b_start, b_end) = (tuple(map(_when, run["span"])) for run in runs)
    assert a_start < b_end and b_start < a_end, "the two runs did not overlap in time"
    assert runs[0]["run_id"] != runs[1]["run_id"]
    for run in runs:  # each run's ONNX Runtime computed its own model, in the main process and in play
        assert run["reference"] == "torch-cpu-fp32" and run["workers"] == 2
        reference, candidate = run["q"]["torch-cpu-fp32"], run["q"][CANDIDATE]
        assert len(reference) == 8 and np.allclose(candidate, reference, atol=1e-5)
        assert run["actions"][CANDIDATE] == run["actions"]["torch-cpu-fp32"]
        decisions, same = run["play"]
        assert decisions > 0 and same == decisions, run["play"]  # every decision, in both play processes
    folders = [tmp_path / "artifacts" / slug(LABEL) / run["run_id"] for run in runs]
    for run, folder in zip(runs, folders):
        assert (tmp_path / run["artifact"]).resolve() == (folder / "model.onnx").resolve()  # what the run loaded
    assert (folders[0] / "model.onnx").read_bytes() != (folders[1] / "model.onnx").read_bytes()
