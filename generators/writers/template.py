"""The offline writer: words a task's instruction from fixed templates.

A template name is ``<variant>.<wording>`` (e.g. ``update_phone.casual``); the variant
is what the task asks, the wording is how. Splits are decided by template, so every
wording of every variant lands in exactly one split. An LLM writer would implement
the same ``word`` method and paraphrase instead.
"""

from __future__ import annotations

from typing import Any

from generators.writers.wordings_apps import WORDINGS as APP_WORDINGS
from generators.writers.wordings_services import WORDINGS as SERVICE_WORDINGS
from generators.writers.wordings_tool_use import WORDINGS as TOOL_USE_WORDINGS


class UnknownTemplateError(KeyError):
    """No wording exists for this family and template."""


WORDINGS: dict[str, dict[str, str]] = {
    "F01": {
        "update_phone.direct": "Update {name}'s phone number to {new_phone}.",
        "update_phone.casual": "{name} got a new number, it's {new_phone}. Can you fix it in my contacts?",
        "update_phone.terse": "Contacts: {name} -> phone {new_phone}",
        "delete_contact.direct": "Delete the contact {name} from my phone.",
        "delete_contact.casual": "I don't need {name} in my contacts anymore, please remove them.",
        "delete_contact.terse": "Remove contact: {name}",
        "create_contact.direct": "Add a new contact: {name}, phone {phone}{company_part}.",
        "create_contact.casual": "Save {name}'s number for me please: {phone}{company_part}.",
        "create_contact.terse": "New contact {name} / {phone}{company_part}",
    },
    "F02": {
        "count_day.direct": "How many events do I have {day_phrase}?",
        "count_day.casual": "Quick check, how busy am I {day_phrase}? Just tell me the number of events.",
        "count_day.terse": "Number of calendar events {day_phrase}?",
        "first_start.direct": "What time does my first event {day_phrase} start?",
        "first_start.casual": "When do I have to be somewhere first thing {day_phrase}? Give me the start time.",
        "first_start.terse": "Start time of first event {day_phrase}?",
        "company_count.direct": "How many of my contacts work at {company}?",
        "company_count.casual": "I need an exact number: how many people from {company} are in my contacts?",
        "company_count.terse": "Count contacts at {company}.",
    },
    "F03": {
        "flight.direct": "I'm boarding a flight. {steps}.",
        "flight.casual": "Getting on the plane now, could you {steps_lower} for me?",
        "flight.terse": "Flight mode setup, in this order: {steps_list}.",
        "meeting.direct": "I'm going into a meeting. {steps}.",
        "meeting.casual": "Meeting starting, can you {steps_lower}? Order matters.",
        "meeting.terse": "Meeting setup, in order: {steps_list}.",
        "bedtime.direct": "Get my phone ready for the night. {steps}.",
        "bedtime.casual": "Going to bed soon, please {steps_lower}.",
        "bedtime.terse": "Night setup, in order: {steps_list}.",
        "drive.direct": "I'm about to drive. {steps}.",
        "drive.casual": "Heading out in the car, can you {steps_lower}? In that order please.",
        "drive.terse": "Car mode, in order: {steps_list}.",
        "nap.direct": "I'm taking a nap. {steps}.",
        "nap.casual": "Lying down for a nap, could you {steps_lower}?",
        "nap.terse": "Nap setup, in order: {steps_list}.",
        "cinema.direct": "I'm at the cinema. {steps}.",
        "cinema.casual": "Movie's starting, please {steps_lower}, in that order.",
        "cinema.terse": "Cinema setup, in order: {steps_list}.",
        "saver.direct": "My battery is almost dead. {steps}.",
        "saver.casual": "Battery's at 5%, could you {steps_lower}? Keep the order.",
        "saver.terse": "Save battery, in order: {steps_list}.",
    },
}


WORDINGS.update(TOOL_USE_WORDINGS)
for _family, _wordings in APP_WORDINGS.items():  # the variants that put the other apps to work
    WORDINGS.setdefault(_family, {}).update(_wordings)
WORDINGS.update(SERVICE_WORDINGS)


def change_phrase(change: dict[str, Any]) -> str:
    """How a person says one device change, e.g. 'turn on airplane mode'."""
    name, value = change["setting"], change["value"]
    labels = {"wifi": "Wi-Fi", "bluetooth": "Bluetooth", "airplane_mode": "airplane mode",
              "mobile_data": "mobile data", "do_not_disturb": "do not disturb", "battery_saver": "battery saver",
              "flashlight": "the flashlight"}
    if name in labels:
        return f"turn {'on' if value else 'off'} {labels[name]}"
    if name.startswith("volume_"):
        return f"set the {name.removeprefix('volume_')} volume to {value}"
    return f"set the {name} to {value}%"


def _derived(family_id: str, p: dict[str, Any]) -> dict[str, Any]:
    """Extra fields a template needs that are pure functions of the public params."""
    if family_id == "F01":
        return {"company_part": f", works at {p['company']}" if p.get("company") else ""}
    if family_id == "F03":
        phrases = [change_phrase(c) for c in p["changes"]]
        chained = ", then ".join(phrases)
        return {"steps": "First " + chained, "steps_lower": chained, "steps_list": "; ".join(phrases)}
    return {}


class TemplateWriter:
    """The offline default writer."""

    name = "template"

    def templates(self, family_id: str) -> list[str]:
        """The template names this writer knows for a family, sorted."""
        return sorted(WORDINGS.get(family_id, {}))

    def word(self, family_id: str, template: str, public_params: dict[str, Any]) -> str:
        """The instruction for ``template`` filled with ``public_params``."""
        try:
            text = WORDINGS[family_id][template]
        except KeyError:
            raise UnknownTemplateError(f"no wording for {family_id}/{template}") from None
        return text.format(**public_params, **_derived(family_id, public_params))
