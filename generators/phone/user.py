"""The simulated user: a persona with private facts, who answers only what is asked.

Each task may give its user (in ``private_params``) a ``persona`` (name, style),
``user_facts`` (``{topic: answer}``, topics may list synonyms with ``|``) and a
``user_policy`` (``{"confirm": true|false}``: what the user says when asked to
confirm an action). The scripted user is deterministic: a confirmation question
gets the policy's yes or no, a question naming a topic gets that one fact, anything
else gets "I don't know." It never volunteers a fact it was not asked for.

A model can play the same persona (``generators.model_user``, over the project's
model-call engine). This module holds its pure parts: the prompt (the persona, the facts
and the policy only, never the task's targets) and :func:`judge_user_reply`, which keeps
a reply only if it answers what was asked and nothing more; any other reply is replaced
by the scripted answer and the reason is recorded.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

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


@dataclass(frozen=True)
class UserAnswer:
    """What the user said to one ask_user: ``text``; when a model's reply could not be used,
    ``problem`` says why and ``raw`` keeps what it said (``text`` is then the scripted answer)."""

    text: str
    problem: str = ""
    raw: str = ""


def user_prompt(task: TaskSpec, question: str, options: list[Any] | None = None) -> list[dict[str, str]]:
    """The messages a model user is sent: persona, known facts, confirmation policy, the question."""
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
    ask = str(question) + (f" (options: {', '.join(map(str, options))})" if options else "")
    return [{"role": "system", "content": system}, {"role": "user", "content": ask}]


_YES = re.compile(r"\b(yes|yeah|yep|sure|go ahead|please do|do it|ok|okay|confirmed?|fine)\b")
_NO = re.compile(r"\b(no|nope|don'?t|do not|please don'?t|stop|cancel|decline)\b")


def _says(text: str, value: str) -> bool:
    """Whether ``text`` (lower case) states ``value`` as a whole word or phrase."""
    return re.search(rf"(?<!\w){re.escape(value.lower())}(?!\w)", text) is not None


def judge_user_reply(task: TaskSpec, question: str, text: str, options: list[Any] | None = None) -> UserAnswer:
    """A model user's reply kept, or replaced by the scripted answer with the reason: an empty
    reply; one that names a private fact the question did not ask for (volunteering); one that
    leaves out the fact asked for; a confirmation answered against the task's policy, or neither
    yes nor no."""
    scripted = scripted_user_reply(task, question, options)
    said = str(text or "").strip()
    if not said:
        return UserAnswer(scripted, "empty reply", said)
    low = said.lower()
    asked = fact_for(task, question)
    for topic, value in task.private_params.get("user_facts", {}).items():
        if str(value) != asked and _says(low, str(value)):
            return UserAnswer(scripted, f"named a private fact it was not asked ({topic.split('|')[0]})", said)
    if asked is not None:
        if not _says(low, asked):
            return UserAnswer(scripted, "left out the fact it was asked for", said)
        return UserAnswer(said)
    policy = task.private_params.get("user_policy", {})
    if "confirm" in policy and is_confirmation(question):
        yes, no = bool(_YES.search(low)), bool(_NO.search(low))
        if yes == no:
            return UserAnswer(scripted, "neither confirmed nor declined", said)
        if yes != bool(policy["confirm"]):
            return UserAnswer(scripted, "answered a confirmation against the task's policy", said)
    return UserAnswer(said)
