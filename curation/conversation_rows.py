"""Imported conversations as the exports write them: as recorded, not in our phone's action grammar.

An imported episode keeps its conversation (:attr:`warehouse.contract.Episode.messages`): its own
system prompt (none is added), its text turns as text turns, its tool results verbatim, a call
whose result was never recorded without one, and no ``finish`` appended. The exports take their
turns from here; the loss masks still come from the steps (each message covers the steps
:mod:`warehouse.conversation` says), a message getting no loss when any of its steps gets none.
In the chat formats, turns after the agent's last message (a user's "thanks, bye") teach nothing and
are left out; ADP keeps them.
Pure: rows in, values out.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from warehouse.contract import is_harness_notice, message_steps

META = ("finish", "ask_user")  # our phone's action grammar: never offered to an imported conversation
Turns = list[tuple[dict[str, Any], int | None]]


def recorded(ep: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    """The episode's conversation as recorded, or None for our own episodes (and older imports)."""
    text = ep.get("messages")
    if not text:
        return None
    value = json.loads(text) if isinstance(text, str) else text
    return value if isinstance(value, list) and value else None


def conversation_turns(messages: list[dict[str, Any]], masked: set[int], *, trim: bool = True) -> tuple[Turns, set[int]]:
    """(turns, masked): each message with the index of its first step (None for messages that are no
    agent step), and ``masked`` with the first step of every agent message any of whose steps is masked.
    ``trim``: without the turns after the agent's last message (chat rows end on the agent)."""
    turns: Turns = []
    masked = set(masked)
    for msg, steps in zip(messages, message_steps(messages), strict=True):
        agent = msg.get("role") == "assistant"
        first = steps[0] if agent and steps else None
        if first is not None and any(i in masked for i in steps):
            masked.add(first)
        turns.append((_copy(msg), first))
    if not trim:
        return turns, masked
    last = max((i for i, (m, _) in enumerate(turns) if m["role"] == "assistant"), default=len(turns) - 1)
    return turns[: last + 1], masked


def _copy(msg: dict[str, Any]) -> dict[str, Any]:
    out = dict(msg)
    if msg.get("tool_calls"):
        out["tool_calls"] = [{**c, "function": dict(c["function"])} for c in msg["tool_calls"]]
    return out


def conversation_problem(ep: Mapping[str, Any]) -> str | None:
    """Why an imported conversation cannot be a training row (a call's arguments that are not a JSON
    object: formats that carry them as objects could not), or None."""
    for i, msg in enumerate(recorded(ep) or []):
        for call in msg.get("tool_calls") or []:
            try:
                args = json.loads(call["function"]["arguments"] or "{}")
            except (ValueError, RecursionError):
                args = None
            if not isinstance(args, dict):
                return f"message {i}: the arguments of {call['function']['name']!r} are not a JSON object"
    return None


def conversation_tools(ep: Mapping[str, Any], phone_tools: Callable[[Any], list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """The tools an imported conversation's task has (its own, given or inferred; else ``phone_tools`` of the
    names it called, our phone's schemas), with no finish or ask_user added: the agent never had them."""
    text = ep.get("task_tool_schemas")
    if text:
        return list(json.loads(text))
    return [t for t in phone_tools(ep.get("task_tools") or []) if t.get("function", {}).get("name") not in META]


def adp_record(messages: list[dict[str, Any]], masked: set[int], details: dict[str, Any]) -> dict[str, Any]:
    """One ADP 1.2 trajectory of an imported conversation as recorded: system and user turns are
    ``text_observation``s of theirs, the agent's text a ``message_action``, each call an ``api_action``
    (the message's text as the first one's ``description``) and each result a ``text_observation``
    with its call's id and the content verbatim."""
    turns, masked = conversation_turns(messages, masked, trim=False)
    content: list[dict[str, Any]] = []
    for i, (msg, _) in enumerate(turns):
        role = msg["role"]
        if is_harness_notice(messages, i):  # the environment's notice on a reply that was no action
            content.append({"class_": "text_observation", "content": msg["content"], "source": "environment"})
        elif role in ("system", "user"):
            content.append({"class_": "text_observation", "content": msg["content"], "source": role})
        elif role == "tool":
            content.append({"class_": "text_observation", "tool_call_id": msg["tool_call_id"], "content": msg["content"],
                            "source": "environment"})
        elif msg.get("tool_calls"):
            for j, call in enumerate(msg["tool_calls"]):
                action = {"class_": "api_action", "tool_call_id": call["id"], "function": call["function"]["name"],
                          "kwargs": json.loads(call["function"]["arguments"] or "{}")}
                if j == 0 and msg["content"]:
                    action["description"] = msg["content"]
                content.append(action)
        else:
            content.append({"class_": "message_action", "content": msg["content"]})
    return {"schema_version": "1.2.0", "id": details["episode_id"], "content": content,
            "details": {**details, "masked_steps": sorted(masked)}}
