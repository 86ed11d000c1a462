"""Whether runs measured the same thing: the same model, fixed states, seeds and game protocol. Runs that
differ may still be shown side by side, but never without a notice that says what differs (pure)."""

from __future__ import annotations

import json

# (run column, i18n key of what it is)
BASIS = (
    ("model_sha256", "basis_model"),
    ("fixed_states_sha256", "basis_fixed_states"),
    ("seeds_sha256", "basis_seeds"),
    ("protocol", "basis_protocol"),
)


def _value(run: dict, column: str):
    value = run.get(column)
    if column == "protocol":
        return json.dumps(value, sort_keys=True) if value else None
    return value


def differences(runs: list[dict]) -> list[tuple[str, dict]]:
    """For each basis field on which the runs disagree: (its i18n key, {label: value or None (not recorded)})."""
    out = []
    for column, key in BASIS:
        values = {run.get("display_label", run["label"]): _value(run, column) for run in runs}
        if len(set(values.values())) > 1:
            out.append((key, values))
    return out
