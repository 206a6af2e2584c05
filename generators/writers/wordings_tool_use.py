"""Template wordings of families F04-F06 (three or more per variant)."""

from __future__ import annotations

WORDINGS: dict[str, dict[str, str]] = {
    "F04": {
        "offline_text.direct": "I've just landed. Text {name}: \"{text}\".",
        "offline_text.casual": "Back on the ground! Can you send {name} a text saying \"{text}\"?",
        "offline_text.terse": "SMS {name}: {text}",
        "event_permission.direct": "Add \"{title}\" to my calendar {day_phrase} at {start}.",
        "event_permission.casual": "Can you put {title} in my calendar {day_phrase}, starting {start}?",
        "event_permission.terse": "Calendar: {title}, {day_phrase} {start}",
        "missing_folder.direct": "Save a note titled \"{title}\" in my {folder} folder with this text: {body}",
        "missing_folder.casual": "Jot this down in my {folder} notes as \"{title}\": {body}",
        "missing_folder.terse": "Note in {folder}, \"{title}\": {body}",
    },
    "F05": {
        "ambiguous_contact.direct": "Text {first}: \"{text}\".",
        "ambiguous_contact.casual": "Let {first} know \"{text}\", would you?",
        "ambiguous_contact.terse": "SMS {first}: {text}",
        "infeasible_move.direct": "Move my {title} {day_phrase} to {new_start}.",
        "infeasible_move.casual": "Could you push {title} {day_phrase} to {new_start}?",
        "infeasible_move.terse": "Reschedule {title} ({day_phrase}) -> {new_start}",
        "conflict_book.direct": "Book \"{title}\" {day_phrase} at {start} for an hour.",
        "conflict_book.casual": "Put {title} in for {day_phrase} at {start}, an hour should do.",
        "conflict_book.terse": "New event {title}, {day_phrase} {start}, 60 min",
    },
    "F06": {
        "mail_to_calendar.direct": "Add the appointment from {sender}'s email to my calendar.",
        "mail_to_calendar.casual": "{sender} emailed me my appointment, can you put it in my calendar?",
        "mail_to_calendar.terse": "Calendar the {sender} appointment from my mail.",
        "contact_to_text.direct": "Text {to_name} {about_name}'s email address.",
        "contact_to_text.casual": "{to_name} needs {about_name}'s email, can you send it to them by text?",
        "contact_to_text.terse": "SMS {to_name}: email of {about_name}",
        "code_to_note.direct": "Save the door code {sender} texted me in a note called \"{title}\".",
        "code_to_note.casual": "{sender} sent me a door code by text; put it in a note titled \"{title}\".",
        "code_to_note.terse": "Note \"{title}\": door code from {sender}'s text",
    },
}
