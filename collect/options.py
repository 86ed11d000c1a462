"""What one ``rtreport collect`` command was asked, in one object: the CLI builds it, ``run_collect`` checks and
resolves it (a resumed run's label and output come from its file), the S3 wrapper re-targets it, and the
``Collector`` reads the GPU and play settings from it. A new option is a field here and a line where it is used."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class CollectOptions:
    model_path: Path | str | None = None  # --model (None: the shipped agent)
    env_id: str | None = None  # --env (None: Breakout, or the run configuration's)
    config: Path | str | None = None  # --config: the run configuration (collect.run_config)
    normalize: Path | str | None = None  # --normalize: the training's VecNormalize (collect.vec_normalize)
    runtime_list: str | None = None  # --runtimes, comma-separated ids (None: every runtime, opt-in ones aside)
    out: Path | str | None = None  # --out (None: data/<label>.duckdb, or the next free name)
    overwrite: bool = False  # --overwrite
    label: str | None = None  # --label (None: <host>-<gpu or cpu>)
    cuda_index: int = 0  # --device cuda:N
    device_named: bool = False  # --device given on the command line (not the default)
    artifacts: Path | str | None = None  # --artifacts (None: artifacts/<label>)
    quick: bool = False  # --quick: the smoke profile
    quiet: bool = False  # --quiet
    play_workers: int | None = None  # --play-workers (None: collect.play.auto_workers)
    play_slots: int | None = None  # --play-slots (None: collect.play.auto_slots)
    play_mps: bool = False  # --play-mps
    play_twins: bool = True  # --no-twins turns it off (collect.play.twins)
    resume: Path | str | None = None  # --resume FILE
    repeat: Path | str | None = None  # --repeat FILE
    rounds: int | None = None  # --rounds (None: the profile's)
    repeats: int | None = None  # --repeats: fresh-process repeats after the run (None: the profile's)
    allow_mixed_onnxruntime: bool = False  # --allow-mixed-onnxruntime
