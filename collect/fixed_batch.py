"""A model whose input fixes the batch size: an ONNX file exported without a dynamic batch axis (its input
(1, …)), or a module whose code takes one observation (e.g. ``x.reshape(1, -1)``).

The agent decides one observation at a time, so such a model is measured where it can be: batch-1 latency, the
fixed states fed one at a time, play; every runtime is told the one batch size (``Runner.fixed_batch``, set by
``registry.make_runner``), the batch sweep stops there, and the run's settings say why (``batch_sweep_limit``, shown
under the throughput chart). The INT8 runtimes calibrate in batches of that size. TensorRT (its own runner and ONNX
Runtime's TensorRT EP) builds its engine for every batch size of the sweep ahead, so it is left out on such a model
with the re-export in its reason; an ONNX input fixed at a batch other than 1 is refused in one line.
"""

from __future__ import annotations

# Why the batch sweep of a model whose input fixes the batch stops there (the run file's settings keep it)
FIXED_BATCH_REASON = "the model's input fixes the batch size at {batch}"
REEXPORT = (
    'export it with a dynamic batch: torch.onnx.export(..., dynamic_axes={"observation": {0: "batch"}}), or '
    "dynamo=True with a dynamic batch dimension"
)


def takes_a_batch(module, task) -> bool:
    """Whether ``module`` decides a batch of two observations, one row each (a module whose code fixes the batch
    at 1 does not)."""
    import torch

    example = torch.zeros((2, *task.observation.shape), dtype=getattr(torch, task.observation.dtype))
    try:
        with torch.inference_mode():
            out = module(example)
    except Exception:
        return False
    return isinstance(out, torch.Tensor) and out.dim() == 2 and out.shape[0] == 2


def refusal(model, runtime: str) -> str | None:
    """Why ``runtime`` (one that builds for every batch size of the sweep ahead) cannot run ``model``, or None."""
    from .measure import MAX_BATCH

    batch = getattr(model, "fixed_batch", None)
    if batch is None:
        return None
    return f"{FIXED_BATCH_REASON.format(batch=batch)}, and {runtime} builds for batches 1 to {MAX_BATCH}: {REEXPORT}"


def sweep_limit(model) -> dict:
    """Where the batch sweep stops short of its sizes, and why, as the run's settings keep it; {} for a model that
    takes any batch size."""
    batch = getattr(model, "fixed_batch", None)
    if batch is None:
        return {}
    return {"batch_sweep_limit": {"batch": batch, "reason": FIXED_BATCH_REASON.format(batch=batch)}}
