"""The weights inside a PyTorch checkpoint as training loops save it: the layouts rtreport reads a state dict from,
and what a refusal says it found instead."""

from __future__ import annotations

# where common checkpoints keep the weights: a training loop's {"model_state_dict": …, "optimizer_state_dict": …},
# Lightning's and others' {"state_dict": …}, {"model": …}, and any of them inside {"checkpoint": …}
STATE_DICT_KEYS = ("model_state_dict", "state_dict", "model", "net", "network", "q_network", "checkpoint")
# what wrappers put before every key: DataParallel / DistributedDataParallel, torch.compile
KEY_PREFIXES = ("module.", "_orig_mod.")


def unwrap_state_dict(obj):
    """The state dict inside a checkpoint of any common layout (``STATE_DICT_KEYS``), its keys without the prefixes
    of DataParallel, DDP or torch.compile (``KEY_PREFIXES``); anything else as it is."""
    for _ in range(3):  # {"checkpoint": {"state_dict": …}} at most this deep
        if not isinstance(obj, dict) or any(hasattr(v, "shape") for v in obj.values()):
            break
        inner = next((obj[k] for k in STATE_DICT_KEYS if isinstance(obj.get(k), dict)), None)
        if inner is None:
            break
        obj = inner
    if not isinstance(obj, dict) or not obj or not all(isinstance(k, str) for k in obj):
        return obj
    while True:
        prefix = next((p for p in KEY_PREFIXES if all(k.startswith(p) for k in obj)), None)
        if prefix is None:
            return obj
        obj = {k[len(prefix) :]: v for k, v in obj.items()}


def keys_found(obj) -> str:
    if not isinstance(obj, dict):
        return f"a {type(obj).__name__}, not a dict"
    if not obj:
        return "an empty dict"
    keys = [str(k) for k in obj]
    return f"{len(keys)} key{'s' * (len(keys) != 1)}: {', '.join(keys[:6])}{' …' if len(keys) > 6 else ''}"
