"""Import Agent Data Protocol trajectories (ADP 1.x standardized records: ``schema_version``,
``id``, ``content[]`` of actions and observations, ``details``), as JSON Lines or a JSON list.

``api_action`` is a tool call (``function``, ``kwargs``, ``tool_call_id``; its ``description``
is the agent's text), ``code_action`` a call of ``execute_code`` with its language and code,
``message_action`` the agent's text; ``text_observation`` from the user or system is a turn of
theirs, and with a ``tool_call_id`` (or right after an action without one, as ADP 1.2 allowed)
the result of that call. A ``message_action`` answered by the environment rather than the user (an
observation from ``environment`` with no ``tool_call_id``, as our export writes an invalid reply
and the harness's notice) was no action: it comes back as the invalid step it was, with the notice
as its error, not as a question to the user. ``details`` may carry the episode's ``reward`` (else the sum of the
per-step rewards, when any), ``rollout``, ``task_id`` and the ``masked_steps`` our ADP export
writes. Shapes as in ADP's published schema (tests/data/adp/SOURCE.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from generators.importers.chat import BAD_SHAPE, Parsed, problem_of, tool_call, tool_result
from warehouse.contract import HARNESS


def _harness_notice(item: Any) -> bool:
    """An environment observation that answers no call (our export's notice after an invalid reply)."""
    return (isinstance(item, dict) and item.get("class_") == "text_observation" and item.get("source") == "environment"
            and not item.get("tool_call_id"))


def _messages(content: list[Any]) -> tuple[list[dict[str, Any]], list[float]]:
    out: list[dict[str, Any]] = []
    rewards: list[float] = []
    open_call: str | None = None  # the action right before, when it has no result yet
    for i, item in enumerate(content):
        kind = item.get("class_") if isinstance(item, dict) else None
        if isinstance(item, dict) and isinstance(item.get("reward"), int | float):
            rewards.append(float(item["reward"]))
        if kind in ("api_action", "code_action"):
            call_id = str(item.get("tool_call_id") or f"call_{i}")
            if kind == "api_action":
                if not isinstance(item.get("function"), str) or not isinstance(item.get("kwargs", {}), dict):
                    raise ValueError(f"content {i}: an api_action needs a function name and kwargs")
                call = tool_call(call_id, item["function"], item.get("kwargs") or {})
            else:
                call = tool_call(call_id, "execute_code", {"language": item.get("language"), "code": item.get("content")})
            out.append({"role": "assistant", "content": item.get("description") or "", "tool_calls": [call]})
            open_call = call_id
        elif kind == "message_action":
            msg = {"role": "assistant", "content": str(item.get("content") or "")}
            nxt = content[i + 1] if i + 1 < len(content) else None
            if _harness_notice(nxt):  # the environment, not the user, answered the agent's text: it was no action
                notice = str(nxt.get("content") or "").removeprefix("[harness] ")
                msg["invalid"] = {"code": "INVALID_ACTION", "message": notice}
            out.append(msg)
            open_call = None
        elif kind == "text_observation" and _harness_notice(item) and out and out[-1].get("invalid"):
            # the notice of the invalid reply just before: kept as our chat exports write one
            out.append({"role": "user", "content": HARNESS + out[-1]["invalid"]["message"]})
        elif kind in ("text_observation", "image_observation", "web_observation"):
            text = item.get("content") if kind == "text_observation" else item.get("axtree") or item.get("html") or ""
            call_id = item.get("tool_call_id") or (open_call if item.get("source") != "user" else None)
            if call_id:
                out.append(tool_result(str(call_id), text if isinstance(text, str) else ""))
            else:
                out.append({"role": "system" if item.get("source") == "system" else "user", "content": str(text or "")})
            open_call = None
        else:
            raise ValueError(f"content {i}: unknown class_ {kind!r}")
    return out, rewards


def records(recs: Iterable[Any]) -> Iterator[Parsed]:
    """One chat record per parsed JSON record (``where``, ``number``, ``value``, ``problem``), or why not, as they
    come."""
    for rec in recs:
        if rec.problem:
            yield rec
            continue
        traj = rec.value
        if not isinstance(traj, dict) or not isinstance(traj.get("content"), list) or "id" not in traj:
            yield Parsed(rec.where, rec.number, None, "an ADP trajectory needs an id and a content list")
            continue
        details = traj.get("details") if isinstance(traj.get("details"), dict) else {}
        try:
            messages, rewards = _messages(traj["content"])
        except BAD_SHAPE as exc:
            yield Parsed(rec.where, rec.number, None, problem_of(exc))
            continue
        reward = details.get("reward", sum(rewards) if rewards else None)
        value = {"messages": messages, "reward": reward, "success": details.get("success"), "rollout": details.get("rollout"),
                 "masked_steps": details.get("masked_steps"), "policy": str(details.get("policy") or "adp"),
                 "model": str(details.get("model") or ""),
                 "task": {"task_id": str(details.get("task_id") or f"adp:{traj['id']}"),
                          **({"split": details["split"]} if details.get("split") else {})}}
        yield Parsed(f"{rec.where} (trajectory {traj['id']})", rec.number, value)
