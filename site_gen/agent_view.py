"""What a machine page says of an agent other than the shipped Breakout one: which agent it is and the training's
preprocessing it plays behind (observation normalisation, the model's folder), and, for continuous actions, what
agreeing means and how far each runtime's actions were from the reference's."""

from __future__ import annotations

from rtreport import action_difference

from .analysis import RunResult
from .i18n import Translator


def agent_text(res: RunResult, t: Translator) -> str | None:
    """Which agent the run judged, for every task but Breakout (whose pages name it throughout)."""
    run = res.rows.run
    protocol = run.get("protocol") or {}
    if protocol.get("family") is None:
        return None  # Breakout under the Atari protocol: the shipped agent's task
    env = protocol.get("gym_id", "?")
    actions = protocol.get("action_meanings") or []
    export = (run.get("settings") or {}).get("model_export") or {}
    kind = {
        "pytorch": t("agent_kind_qnetwork"),
        "torchscript": t("agent_kind_torchscript"),
        "onnx": t("agent_kind_onnx"),
        "sb3": t("agent_kind_sb3", algorithm=export.get("algorithm", "?")),
    }.get(run.get("model_format"), run.get("model_format") or "?")
    if protocol.get("action_kind") == "continuous":
        low, high = protocol.get("action_low") or [], protocol.get("action_high") or []
        pairs = [f"[{a:g}, {b:g}]" for a, b in zip(low, high)]
        bounds = (
            t("agent_bounds_each", bounds=pairs[0])
            if len(pairs) > 1 and len(set(pairs)) == 1
            else t("agent_actions_sep").join(pairs)
        )
        decide = t("agent_continuous", bounds=bounds)
    elif protocol.get("outputs") == "logits":
        decide = t("agent_greedy_logits")
    else:
        decide = t("agent_greedy_q", epsilon=f"{float(protocol.get('eval_epsilon') or 0):g}")
    line = t(
        ("agent_line_continuous_1" if len(actions) == 1 else "agent_line_continuous")
        if protocol.get("action_kind") == "continuous"
        else "agent_line",
        model=_name(run.get("model_path")),  # the file's name: the page does not publish the user's folders
        kind=kind,
        env=env,
        n=len(actions),
        actions=t("agent_actions_sep").join(map(str, actions)),
        decide=decide,
    )
    wrappers = [w.get("name", "?") for w in protocol.get("wrappers") or []]
    if wrappers:
        line = t("agent_then", line=line, more=t("prep_wrappers", wrappers=t("agent_actions_sep").join(wrappers)))
    for said in preprocessing_lines(protocol.get("preprocessing"), t):
        line = t("agent_then", line=line, more=said)
    if protocol.get("family") == "atari":  # another game than Breakout: its protocol belongs to the agent's line
        line = t("agent_then", line=line, more=atari_protocol_text(res, t))
    if run.get("agent_base"):  # another model of this file's name was measured under the label (agents.tell_apart)
        named = t("agent_told_apart", file=(run.get("model_path") or "?").replace("\\", "/").rsplit("/", 1)[-1])
        line = t("agent_then", line=line, more=named)
    return line


PREP_SOURCES = {
    "beside the model": "prep_source_beside",
    "rl-zoo folder": "prep_source_zoo",
    "hugging-face folder": "prep_source_hub",
    "--normalize": "prep_source_flag",
    "run configuration": "prep_source_config",
}


def _name(path) -> str:
    """A recorded path as the page names it: its last part (``/home/me/logs/ppo/HalfCheetah-v5_1`` ->
    ``HalfCheetah-v5_1``); the run file keeps the whole path."""
    return str(path).replace("\\", "/").rstrip("/").rsplit("/", 1)[-1] if path else "?"


def preprocessing_lines(prep: dict | None, t: Translator) -> list[str]:
    """What the run file says of the training's preprocessing (``protocol.preprocessing``): the model folder the
    agent came from, and whether its observations were normalised, with what and found where."""
    if not prep:
        return []
    lines = []
    folder = prep.get("model_folder")
    if folder and folder.get("layout") in ("rl-zoo", "hugging-face"):
        lines.append(
            t(
                "prep_folder_zoo" if folder["layout"] == "rl-zoo" else "prep_folder_hub",
                folder=_name(folder.get("folder")),
                model=folder.get("model_file", "?"),
                env_from=folder.get("env_id_from") or "?",
            )
        )
    stack = (folder or {}).get("frame_stack")
    if stack and stack > 1:
        lines.append(t("prep_frame_stack", n=stack))
    norm = prep.get("normalization") or {}
    if norm.get("applied"):
        lines.append(
            t(
                "prep_norm_applied",
                file=_name(norm.get("file")),
                source=t(PREP_SOURCES.get(norm.get("source"), "prep_source_beside")),
                sha=str(norm.get("sha256", ""))[:12],
                clip=f"{float(norm.get('clip', 0)):g}",
                epsilon=f"{float(norm.get('epsilon', 0)):g}",
            )
        )
    elif norm.get("reason") == "reward-only":
        lines.append(
            t(
                "prep_norm_reward_only",
                file=_name(norm.get("file")),
                source=t(PREP_SOURCES.get(norm.get("source"), "prep_source_beside")),
                sha=str(norm.get("sha256", ""))[:12],
            )
        )
    elif norm:
        lines.append(t("prep_norm_none"))
    return lines


def continuous_view(res: RunResult, t: Translator) -> dict | None:
    """For continuous actions: what "the same action" means here, and how far each runtime's actions were from
    the reference's, in play and on the fixed states (decisions per bin of the difference)."""
    protocol = res.rows.run.get("protocol") or {}
    if protocol.get("action_kind") != "continuous":
        return None
    tolerance = float(protocol.get("action_tolerance") or 0)
    head = [t("runtime"), t("continuous_where"), *action_difference.bin_labels()]
    rows = []
    for r in res.runtimes:
        if r.is_reference:
            continue
        if r.rows.shadow_differences:
            rows.append([r.rows.title, t("continuous_played"), *(f"{n:,}" for n in r.rows.shadow_differences)])
        if r.agreement and r.agreement.get("continuous"):
            rows.append([r.rows.title, t("continuous_fixed"), *(f"{n:,}" for n in r.agreement["counts"])])
    return {
        "text": t("continuous_intro", tolerance=f"{tolerance * 100:g} %"),
        "table": {"head": head, "rows": rows} if rows else None,
    }


def atari_protocol_text(res: RunResult, t: Translator) -> str | None:
    """The Atari protocol an Atari run played (a file without ``protocol.atari`` played rtreport's own)."""
    protocol = res.rows.run.get("protocol") or {}
    if protocol.get("family", "atari") != "atari":
        return None
    sb3 = protocol.get("atari") or {}
    if sb3.get("preprocessing") == "stable-baselines3":
        return t(
            "atari_protocol_sb3",
            sticky=f"{float(sb3.get('sticky_action_probability', 0)):g}",
            noops=sb3.get("noop_max", 0),
            fire=t("atari_fire_yes") if sb3.get("fire_on_reset") else t("atari_fire_no"),
        )
    return t(
        "atari_protocol_rtreport",
        sticky=f"{float(protocol.get('sticky_action_probability', 0.25)):g}",
        epsilon=f"{float(protocol.get('eval_epsilon', 0.01)):g}",
    )
