"""What a machine page says of an agent other than the shipped Breakout one: which agent it is, and, for continuous
actions, what agreeing means and how far each runtime's actions were from the reference's."""

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
        bounds = t("agent_actions_sep").join(f"[{a:g}, {b:g}]" for a, b in zip(low, high))
        decide = t("agent_continuous", bounds=bounds)
    elif protocol.get("outputs") == "logits":
        decide = t("agent_greedy_logits")
    else:
        decide = t("agent_greedy_q", epsilon=f"{float(protocol.get('eval_epsilon') or 0):g}")
    return t(
        ("agent_line_continuous_1" if len(actions) == 1 else "agent_line_continuous")
        if protocol.get("action_kind") == "continuous"
        else "agent_line",
        model=run.get("model_path") or "?",
        kind=kind,
        env=env,
        n=len(actions),
        actions=t("agent_actions_sep").join(map(str, actions)),
        decide=decide,
    )


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
