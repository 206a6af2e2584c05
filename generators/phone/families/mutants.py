"""Broken versions of a reference solution: the generation gate's mutants and the
scripted policy's mistakes. Each is a realistic slip, not random noise."""

from __future__ import annotations

import random
import re
from typing import Any

from generators.phone.tools import tool_kind
from warehouse.contract import Action, TaskSpec

ID_ARGS = ("contact_id", "event_id", "alarm_id", "message_id", "mail_id", "note_id", "todo_id")
# the arguments that carry a task's intent, in the order a mistake is most likely
INTENT_ARGS = ID_ARGS + ("phone", "enabled", "level", "date", "start", "time", "body", "text", "name", "title",
                         "permission")


def first_write_index(actions: list[Action]) -> int | None:
    """Index of the first state-changing tool call, or None."""
    return next((i for i, a in enumerate(actions) if a.kind == "tool_call" and tool_kind(a.tool) == "write"), None)


def wrong_value(name: str, value: Any, task: TaskSpec, rng: random.Random) -> Any:
    """A plausible but wrong value for argument ``name``."""
    decoys = task.private_params.get("decoy_ids", [])
    if name in ID_ARGS and decoys:
        return rng.choice(decoys)  # the near-duplicate row: the classic mix-up
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        if name == "answer":  # an off-by-one count: a missed page or a neighbouring day
            return value + 1 if value < 2 or rng.random() < 0.5 else value - 1
        return value + 20 if value <= 50 else value - 20
    if isinstance(value, str) and re.fullmatch(r"\d\d:\d\d", value):
        return f"{(int(value[:2]) + 1) % 24:02d}{value[2:]}"  # off by an hour
    if isinstance(value, str) and re.search(r"\d$", value):  # a mistyped last digit
        return value[:-1] + str((int(value[-1]) + rng.randint(1, 8)) % 10)
    if isinstance(value, str):
        return value + "s"
    return None


def set_answer(finish_action: Action, answer: Any) -> None:
    """Give a finish action a different answer, keeping its summary consistent with it."""
    finish_action.arguments["answer"] = answer
    finish_action.arguments["summary"] = f"The answer is {answer}."


def with_wrong_argument(task: TaskSpec, actions: list[Action], rng: random.Random) -> list[Action]:
    """The actions with one argument of the first write (else of finish's answer) made wrong."""
    out = [a.model_copy(deep=True) for a in actions]
    i = first_write_index(out)
    if i is None:
        i = len(out) - 1
        if "answer" in out[i].arguments:
            set_answer(out[i], wrong_value("answer", out[i].arguments["answer"], task, rng))
        return out
    args = out[i].arguments
    # the argument that carries the task's intent: an id, else the first value set
    name = next((k for k in INTENT_ARGS if k in args), None) or next(iter(args))
    args[name] = wrong_value(name, args[name], task, rng)
    return out


def with_wrong_argument_in_last_write(task: TaskSpec, actions: list[Action], rng: random.Random,
                                      prefer: tuple[str, ...] = ()) -> list[Action]:
    """The actions with one intent argument of the last write made wrong.

    For tasks whose first writes fix a prerequisite (or are retried after a timeout),
    only the last write decides what lands.
    """
    out = [a.model_copy(deep=True) for a in actions]
    i = max(j for j, a in enumerate(out) if a.kind == "tool_call" and tool_kind(a.tool) == "write")
    args = out[i].arguments
    name = next((k for k in (*prefer, *INTENT_ARGS) if k in args), None) or next(iter(args))
    args[name] = wrong_value(name, args[name], task, rng)
    return out
