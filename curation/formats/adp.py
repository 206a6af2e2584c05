"""Agent Data Protocol 1.2 trajectories, so ADP's converters carry our episodes to other agent
frameworks (ADP's own SFT converters, OpenHands, SWE-agent, ...).

Each step is an ``api_action`` (``function``, ``kwargs``, the agent's text as ``description``,
``tool_call_id``) followed by the ``text_observation`` with the same ``tool_call_id`` holding the
tool's reply as our chat exports write it (``{"ok": ..., "data"/"error": ...}``); ``ask_user`` and
``finish`` are calls too, as they are in our tool list. A reply that could not be parsed is a
``message_action`` with the raw text, then the harness's notice. Every action carries a per-step
``reward``: the progress our verifier credited that step with. ``details`` names the episode
(ids, split, rollout), its reward and success, and the ``masked_steps`` left out of training.
"""

from __future__ import annotations

from typing import Any

from curation.formats.openai_chat import tool_content
from warehouse.contract import Step

SCHEMA_VERSION = "1.2.0"


def step_rewards(steps: list[Step], final: float) -> list[float]:
    """Per step, what the verifier's running progress gained (or lost) at that step; the last step
    closes to the episode's final progress, so the rewards add up to the episode's reward."""
    out, last = [], 0.0
    for i, s in enumerate(steps):
        progress = final if i == len(steps) - 1 else float(s.verification.progress or 0.0)
        out.append(round(progress - last, 6))
        last = progress
    return out


def to_adp(instruction: str, steps: list[Step], masked: set[int], details: dict[str, Any]) -> dict[str, Any]:
    """One ADP trajectory for an episode's planner steps."""
    steps = sorted((s for s in steps if s.actor == "planner"), key=lambda s: s.index)
    content: list[dict[str, Any]] = [{"class_": "text_observation", "content": instruction, "source": "user"}]
    for step, reward in zip(steps, step_rewards(steps, float(details.get("reward") or 0.0)), strict=True):
        a = step.action
        if a.kind == "invalid":
            content.append({"class_": "message_action", "content": a.raw or a.text or "", "reward": reward})
            error = step.feedback.error.message if step.feedback.error else "invalid call"
            content.append({"class_": "text_observation", "content": f"[harness] {error}", "source": "environment"})
            continue
        call_id = a.call_id or f"call_{step.index}"
        action = {"class_": "api_action", "tool_call_id": call_id, "function": a.tool, "kwargs": a.arguments,
                  "reward": reward}
        if a.text:
            action["description"] = a.text
        content.append(action)
        content.append({"class_": "text_observation", "tool_call_id": call_id, "content": tool_content(step),
                        "source": "environment"})
        if a.kind == "finish":
            break
    return {"schema_version": SCHEMA_VERSION, "id": details["episode_id"], "content": content,
            "details": {**details, "masked_steps": sorted(masked)}}
