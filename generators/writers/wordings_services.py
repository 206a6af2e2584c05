"""Template wordings of families F07-F13 (memory, skills, sub-agents, long errands)."""

from __future__ import annotations

WORDINGS: dict[str, dict[str, str]] = {
    "F07": {
        "usual_coffee.direct": "{friend} is picking up coffee for me. Text them my usual order.",
        "usual_coffee.casual": "{friend}'s grabbing coffee, can you send them my usual?",
        "usual_coffee.terse": "SMS {friend}: my usual coffee order",
        "usual_alarm.direct": "Set an alarm for my usual weekday wake-up time.",
        "usual_alarm.casual": "Can you set my alarm for when I normally get up on weekdays?",
        "usual_alarm.terse": "Alarm: usual weekday wake-up",
        "usual_restaurant.direct": "Put dinner at my favourite restaurant in my calendar on {day} at {time}.",
        "usual_restaurant.casual": "Let's do dinner at my favourite place on {day}, {time}. Add it to my calendar?",
        "usual_restaurant.terse": "Calendar: dinner, favourite restaurant, {day} {time}",
    },
}
