"""The run's row as its first session writes it: the machine, the model and its task, the fixed states and seeds,
and every setting the protocol was decided by (``runs`` in docs/duckdb-schema.md)."""

from __future__ import annotations

from dataclasses import asdict

from rtreport import schema
from rtreport.gates import Gates

from . import fixed_batch, task_states
from .agent.network import sha256_file
from .paths import FIXED_STATES, shown
from .provenance import hardware
from .rounds import ROUND_ORDER_SEED


def first_row(collector, machine: dict) -> dict:
    """``collector``: the ``Collector`` starting the run; ``machine``: ``provenance.machine``."""
    c, task = collector, collector.model.task
    gates = Gates.load()
    # Breakout keeps the margin rule of every file before tasks; any other task's holds on any return scale
    margin = gates.play_margin if task.is_breakout else gates.play_margin_over_random
    margin_rule = {} if task.is_breakout else {"play_margin_rule": "gain-over-random"}
    return {
        "label": c.label,
        "profile": c.profile.name,
        **machine,
        "model_path": shown(c.model.path),
        "model_format": c.model.format,
        "model_sha256": c.model.sha256,
        "num_actions": c.model.num_actions,
        "fixed_states_sha256": sha256_file(FIXED_STATES) if task.is_breakout else task_states.fingerprint(c.states),
        "seeds_sha256": schema.seeds_sha256(c.seeds),
        "reference_runtime": c.reference,
        "eval_epsilon": task.epsilon,
        "protocol": task.protocol(),
        "settings": {
            **asdict(c.profile),
            "cuda_index": c.cuda_index,
            "runtimes_requested": [s.id for s in c.specs],
            "states": len(c.states),
            "seeds": list(c.seeds),
            "play_margin_fraction": margin,
            **margin_rule,
            **({"model_export": c.model.export} if c.model.export else {}),
            **fixed_batch.sweep_limit(c.model),
            "round_order_seed": ROUND_ORDER_SEED,
            "rounds_ends_only": c.ends_only(),
            "hardware": hardware(),  # the machine's kind beside runs.cpu/cpu_count/gpu_name (collect.resume)
        },
    }
