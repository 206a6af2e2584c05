"""The scripted planner behind the test server: the next reply from the conversation. Pure.

The task comes from the ``X-Flywheel-Task`` header (``FAMILY:SEED:DIFFICULTY:ROLLOUT``),
the position in the plan from the number of tool results already in the conversation
(a reply the harness rejected is not counted, so the same action is offered again).
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from generators.phone.families import get_family
from generators.phone.user import UNKNOWN, scripted_user_reply
from generators.policies.scripted import ScriptedPolicy
from warehouse.contract import USER_KEY, Action, TaskSpec
from warehouse.ids import digest


@lru_cache(maxsize=4096)
def _task(family: str, seed: int, difficulty: int) -> TaskSpec:
    return get_family(family).make_task(seed, difficulty)


@lru_cache(maxsize=16384)
def _plan(family: str, seed: int, difficulty: int, rollout: int, policy_seed: int) -> tuple[Action, ...]:
    policy = ScriptedPolicy(seed=policy_seed)
    policy.start(_task(family, seed, difficulty), rollout)
    return tuple(policy.plan)


def parse_task_header(value: str | None) -> tuple[str, int, int, int] | None:
    """(family, seed, difficulty, rollout) from the header, or None when absent or malformed."""
    if not value:
        return None
    parts = value.split(":")
    if len(parts) != 4:
        return None
    try:
        return parts[0], int(parts[1]), int(parts[2]), int(parts[3])
    except ValueError:
        return None


def position(messages: list[dict[str, Any]]) -> int:
    """How many actions of the plan the conversation has already carried out (results of calls
    the harness rejected as invalid do not count: the same action is offered again)."""
    return sum(1 for m in messages if isinstance(m, dict) and m.get("role") == "tool"
               and '"INVALID_ACTION"' not in str(m.get("content")))


def next_action(task_ref: tuple[str, int, int, int] | None, messages: list[dict[str, Any]],
                policy_seed: int = 0) -> Action:
    """The planned action at the conversation's position; finish when there is no task or no plan left."""
    if task_ref is None:
        return Action(kind="finish", tool="finish", arguments={"status": "completed", "summary": "done"})
    family, seed, difficulty, rollout = task_ref
    plan = _plan(family, seed, difficulty, rollout, policy_seed)
    n = position(messages)
    if n >= len(plan):
        return Action(kind="finish", tool="finish", arguments={"status": "partial", "summary": "out of plan"})
    return plan[n]


def estimate_tokens(value: Any) -> int:
    """A rough token count (4 characters a token), for the usage block."""
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return max(1, len(text) // 4)


TEMPLATE_LINE = "The task, as a template says it: "


def writer_reply(messages: list[dict[str, Any]]) -> str:
    """The writer's reply: the template's instruction, reworded. A third of first tries (by the
    text's hash) drop the task's values, so the writer's reject-and-retry loop is exercised."""
    prompt = next((str(m.get("content")) for m in messages if m.get("role") == "user"), "")
    line = next((ln for ln in prompt.splitlines() if ln.startswith(TEMPLATE_LINE)), "")
    text = line[len(TEMPLATE_LINE):].strip()
    first_try = not any(str(m.get("content", "")).startswith("Rejected:") for m in messages)
    if first_try and int(digest(text, 8), 16) % 3 == 0:
        return json.dumps({"instruction": "Could you sort that out on my phone?"})
    return json.dumps({"instruction": f"Hey, {text[:1].lower()}{text[1:]}" if text else "Hello"})


USER_EPISODE_PREFIX = USER_KEY  # the episode header of the simulated user's calls


def user_reply(task_ref: tuple[str, int, int, int] | None, messages: list[dict[str, Any]], fault: str | None) -> str:
    """The simulated user's reply: the scripted user's answer to the question (the last user turn) for
    the task the header names. Faults: ``empty`` says nothing; ``leak`` volunteers every fact its prompt lists."""
    if fault == "empty":
        return ""
    question = next((str(m.get("content")) for m in reversed(messages) if m.get("role") == "user"), "")
    if task_ref is None:
        return UNKNOWN
    task = _task(*task_ref[:3])
    answer = scripted_user_reply(task, question.split(" (options: ")[0])
    if fault == "leak":  # it blurts out every fact its prompt gave it
        system = next((str(m.get("content")) for m in messages if m.get("role") == "system"), "")
        facts = "; ".join(line.split(": ", 1)[1] for line in system.splitlines()
                          if line.startswith("- ") and ": " in line)
        return f"{answer} Also, since you will need it: {facts}." if facts else answer
    return answer
