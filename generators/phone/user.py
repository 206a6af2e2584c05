"""The scripted user: answers questions from the task's hidden facts, nothing more."""

from __future__ import annotations

from typing import Any

from warehouse.contract import TaskSpec

UNKNOWN = "I don't know."


def scripted_user_reply(task: TaskSpec, question: str, options: list[Any] | None = None) -> str:
    """The user's answer: the first hidden fact the question names, else "I don't know."

    Facts live in ``task.private_params["user_facts"]`` as ``{topic: answer}``; a
    question names a topic when the topic's words appear in it; a topic may list
    synonyms separated by ``|`` ("conflict|overlap|clash").
    """
    q = str(question).lower()
    for topic, answer in task.private_params.get("user_facts", {}).items():
        if any(t.replace("_", " ").lower() in q for t in topic.split("|") if t):
            return str(answer)
    return UNKNOWN
