"""The task writer over a model: words a task's instruction; the template wording is the fallback.

The model gets the template's instruction and the public parameters, and replies with
JSON ``{"instruction": "..."}``. A reply is rejected (and the model told why, at most
``rounds`` times) when it is not that JSON, drops a value the template states, or leaks
a private parameter (a hidden fact, an expected answer). Replies are journaled like the
planner's, so a rerun after a crash does not ask again.
"""

from __future__ import annotations

import json
import re
from typing import Any

from generators.models.endpoint import ChatRequest, RequestRejected, TransientFailure
from generators.models.engine import Engine
from warehouse.contract import WRITER_KEY, TaskSpec

SYSTEM = (
    "You write the instruction a phone user gives their assistant. Vary the wording like real people do "
    "(casual, terse, polite), but keep every given value verbatim and add no facts. "
    'Reply with JSON only: {"instruction": "..."}'
)
MAX_CHARS = 600
# a 600-character instruction in its JSON fits; a model that rambles on cannot hold the round up
MAX_REPLY_TOKENS = 256


def _norm(text: str) -> str:
    return re.sub(r"[^0-9a-z]+", "", str(text).lower())


STRUCTURAL_KEYS = {"variant", "answer_type"}  # private keys that name the task's shape, not a fact


def _leaves(value: Any, skip: set[str] = frozenset()) -> list[Any]:
    if isinstance(value, dict):
        return [leaf for k, v in value.items() if k not in skip for leaf in _leaves(v, skip)]
    if isinstance(value, list):
        return [leaf for v in value for leaf in _leaves(v, skip)]
    return [value]


def required_values(task: TaskSpec, template_text: str) -> list[str]:
    """Public values the template wording states literally: a rewording must keep them."""
    said = _norm(template_text)
    out = []
    for leaf in _leaves(task.public_params):
        if isinstance(leaf, bool) or leaf is None:
            continue
        if _norm(leaf) and _norm(leaf) in said and str(leaf) not in out:
            out.append(str(leaf))
    return out


def _private_values(task: TaskSpec, template_text: str) -> list[Any]:
    """Private values that must not appear: hidden facts and answers (identifiers like variant names aside)."""
    public = {_norm(v) for v in _leaves(task.public_params)} | {_norm(template_text)}
    out = []
    for leaf in _leaves(task.private_params, STRUCTURAL_KEYS):
        if isinstance(leaf, bool) or leaf is None:
            continue
        if isinstance(leaf, str) and ("_" in leaf or len(_norm(leaf)) < 4):
            continue
        n = _norm(leaf)
        if any(n in p for p in public):
            continue
        out.append(leaf)
    return out


GENERIC_WORDS = frozenset({"about", "could", "would", "should", "please", "phone", "there", "their", "these",
                           "those", "thing", "things", "something", "anything", "every", "which", "where"})


def _content_words(text: str) -> set[str]:
    """Words of five letters or more that say something (not "could", "please", "phone")."""
    return {w for w in re.findall(r"[a-z]{5,}", text.lower()) if w not in GENERIC_WORDS}


def check_instruction(reply: str | None, task: TaskSpec, template_text: str) -> tuple[str | None, str]:
    """(the instruction, "") if the reply is acceptable, else (None, why)."""
    text = (reply or "").strip()
    text = re.sub(r"^```(?:json)?\s*|\s*```$", "", text)
    try:
        data = json.loads(text)
    except ValueError:
        return None, 'the reply is not JSON; reply with {"instruction": "..."} only'
    instruction = data.get("instruction") if isinstance(data, dict) else None
    if not isinstance(instruction, str) or not instruction.strip():
        return None, 'the JSON has no non-empty "instruction" string'
    if len(instruction) > MAX_CHARS:
        return None, f"the instruction is longer than {MAX_CHARS} characters"
    said = _norm(instruction)
    required = required_values(task, template_text)
    missing = [v for v in required if _norm(v) not in said]
    if missing:
        return None, f"the instruction drops required value(s): {', '.join(missing)}"
    topic = _content_words(template_text)
    if not required and topic and not topic & _content_words(instruction):
        # no value to check: at least one of the task's own words must remain, or "could you sort
        # that out?" would pass for any task
        return None, "the instruction keeps none of the task's words; say what is to be done"
    for leaf in _private_values(task, template_text):
        if isinstance(leaf, int | float):
            if re.search(rf"(?<![\d.]){re.escape(str(leaf))}(?![\d.])", instruction):
                return None, "the instruction reveals a hidden value (a number the user would not state)"
        elif _norm(leaf) in said:
            return None, "the instruction reveals a hidden fact the user has not given"
    return instruction.strip(), ""


def writer_messages(task: TaskSpec, template_text: str) -> list[dict[str, Any]]:
    required = required_values(task, template_text)
    prompt = (f"The task, as a template says it: {template_text}\n"
              f"Parameters: {json.dumps(task.public_params, ensure_ascii=False, default=str)}\n"
              f"Keep these values verbatim (spacing and punctuation may differ): {'; '.join(required) or '(none)'}")
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": prompt}]


async def word_with_model(task: TaskSpec, engine: Engine, journal: Any, *, rounds: int, writer_name: str) -> TaskSpec:
    """``task`` with a model-worded instruction, or unchanged (template wording) after ``rounds``
    rejected replies or an endpoint failure. Replies are journaled under ``writer:<task id>``."""
    key = f"{WRITER_KEY}{task.task_id}"
    journaled = journal.replies(key)
    messages = writer_messages(task, task.instruction)
    for attempt in range(rounds):
        try:
            reply = await engine.journaled(journal, key, attempt, ChatRequest(messages=list(messages), temperature=0.9,
                                                                                max_tokens=MAX_REPLY_TOKENS),
                                           known=journaled)
        except (TransientFailure, RequestRejected):  # the engine counted it; the template wording stands
            return task
        instruction, why = check_instruction(reply.content, task, task.instruction)
        if instruction:
            return task.model_copy(update={"instruction": instruction, "writer": writer_name})
        messages += [{"role": "assistant", "content": reply.content or ""},
                     {"role": "user", "content": f"Rejected: {why}. Try again."}]
    return task
