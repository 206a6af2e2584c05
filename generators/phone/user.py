"""The simulated user: a persona with private facts, who answers only what is asked.

Each task may give its user (in ``private_params``) a ``persona`` (name, style),
``user_facts`` (``{topic: answer}``, topics may list synonyms with ``|``) and a
``user_policy`` (``{"confirm": true|false}``: what the user says when asked to
confirm an action). The scripted user is deterministic: a confirmation question
gets the policy's yes or no, a question naming a topic gets that one fact, anything
else gets "I don't know." It never volunteers a fact it was not asked for.

``ModelUser`` plays the same persona through a model endpoint (its calls go through
the project's model-call engine); it is given only the facts and the policy, and a
reply that names a fact it was not given falls back to the scripted answer.
"""

from __future__ import annotations

import re
from typing import Any, Protocol

from warehouse.contract import TaskSpec

UNKNOWN = "I don't know."
_CONFIRM = re.compile(r"\b(confirm|go ahead|proceed|ok to|okay to|shall i|should i|do you want me to|is it ok|"
                      r"may i|can i go)\b")


def is_confirmation(question: str) -> bool:
    """Whether a question asks the user to confirm an action (rather than for a fact)."""
    return bool(_CONFIRM.search(str(question).lower()))


def fact_for(task: TaskSpec, question: str) -> str | None:
    """The one hidden fact whose topic the question names, or None."""
    q = str(question).lower()
    for topic, answer in task.private_params.get("user_facts", {}).items():
        if any(t.replace("_", " ").lower() in q for t in topic.split("|") if t):
            return str(answer)
    return None


def scripted_user_reply(task: TaskSpec, question: str, options: list[Any] | None = None) -> str:
    """The user's answer: the fact the question names; else, for a confirmation, the policy's yes or no;
    else "I don't know." (A fact wins: "should I use the 9:00 or the 10:00 slot?" asks for a fact.)"""
    fact = fact_for(task, question)
    if fact is not None:
        return fact
    policy = task.private_params.get("user_policy", {})
    if "confirm" in policy and is_confirmation(question):
        return "Yes, go ahead." if policy["confirm"] else "No, please don't."
    return UNKNOWN


class UserModel(Protocol):
    """A chat model the model-backed user talks through (e.g. a thin wrapper over the engine)."""

    def complete(self, messages: list[dict[str, str]]) -> str: ...


class ModelUser:
    """A model plays the user, from the persona, facts and policy only (never the task's targets)."""

    def __init__(self, model: UserModel):
        self.model = model

    def prompt(self, task: TaskSpec, question: str) -> list[dict[str, str]]:
        """The messages sent to the model: persona, known facts, confirmation policy, the question."""
        p = task.private_params
        persona = p.get("persona", {})
        facts = "\n".join(f"- {k.split('|')[0].replace('_', ' ')}: {v}" for k, v in p.get("user_facts", {}).items())
        policy = p.get("user_policy", {})
        rule = ("" if "confirm" not in policy else
                f"If asked to confirm an action, answer {'yes' if policy['confirm'] else 'no'}.\n")
        system = (f"You are {persona.get('name', 'the phone owner')}, talking to your phone assistant. "
                  f"{persona.get('style', 'You answer briefly.')}\nYou know only these facts:\n{facts or '- none'}\n"
                  f"{rule}Answer only what is asked, in one short sentence. If the question is not about one of "
                  f"these facts, say \"{UNKNOWN}\" Never volunteer anything else.")
        return [{"role": "system", "content": system}, {"role": "user", "content": str(question)}]

    def reply(self, task: TaskSpec, question: str, options: list[Any] | None = None) -> str:
        """The model's answer, kept only if it does not reveal a fact the question did not ask for."""
        scripted = scripted_user_reply(task, question, options)
        try:
            text = self.model.complete(self.prompt(task, question)).strip()
        except Exception:  # an endpoint failure must not end the episode: the scripted user answers
            return scripted
        asked = fact_for(task, question)
        for answer in map(str, task.private_params.get("user_facts", {}).values()):
            if answer != asked and answer.lower() in text.lower():
                return scripted  # it volunteered a fact: not allowed
        return text or scripted
