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
    "F08": {
        "correct_in_place.direct": "You have my shoe size wrong. It's {new_value}; fix it.",
        "correct_in_place.casual": "Btw my shoe size is {new_value}, not what you have. Can you correct that?",
        "correct_in_place.terse": "Correct my shoe size: {new_value}",
        "switch_habit.direct": "I've switched to {new_value} milk in my coffee. Remember that, but keep the old one "
                               "on record.",
        "switch_habit.casual": "New thing: {new_value} milk in my coffee from now on. Note the change (keep the "
                               "history).",
        "switch_habit.terse": "Coffee milk is now {new_value} (supersede the old one)",
        "sync_alarm.direct": "I get up at {new_value} on weekdays now. Update that, keeping the history, and move "
                             "my wake-up alarm to match.",
        "sync_alarm.casual": "New routine: up at {new_value} on weekdays. Can you note it (keep the old one) and fix "
                             "my wake-up alarm too?",
        "sync_alarm.terse": "Weekday wake-up now {new_value} (supersede); sync the alarm",
        "forget.direct": "Forget my gym days, I quit the gym.",
        "forget.casual": "I'm not going to the gym anymore, you can forget my gym days.",
        "forget.terse": "Forget: gym days",
    },
}
