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
        "usual_gym.direct": "Put my gym session in the calendar on {day}, at the time I usually go.",
        "usual_gym.casual": "Can you block my usual gym slot on {day}?",
        "usual_gym.terse": "Calendar: gym, {day}, usual time",
        "usual_playlist.direct": "Play my focus playlist.",
        "usual_playlist.casual": "Time to concentrate, put on the playlist I use for focus?",
        "usual_playlist.terse": "Play: focus playlist",
        "usual_brightness.direct": "Set the screen to the brightness I like for reading.",
        "usual_brightness.casual": "I'm going to read for a bit, can you set the brightness how I like it?",
        "usual_brightness.terse": "Brightness: my reading level",
        "usual_cafe.direct": "Put coffee with {friend} at my favourite cafe in my calendar on {day} at {time}.",
        "usual_cafe.casual": "Meeting {friend} for coffee on {day} at {time}, at my favourite cafe. Can you put it in "
                             "my calendar?",
        "usual_cafe.terse": "Calendar: coffee with {friend}, favourite cafe, {day} {time}",
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
        "sync_event.direct": "Our team call is at {new_value} now. Update that, keeping the history, and move the "
                             "call in my calendar to match.",
        "sync_event.casual": "Team call moved to {new_value} for good. Can you note it (keep the old time on "
                             "record) and fix next week's call?",
        "sync_event.terse": "Team call time now {new_value} (supersede); sync the calendar",
        "forget_alarm.direct": "I've stopped the medication. Forget my medication time and delete its alarm.",
        "forget_alarm.casual": "Done with those pills! You can forget when I take them, and drop the alarm too.",
        "forget_alarm.terse": "Forget: medication time; delete its alarm",
        "sync_school_run.direct": "The school run starts at {new_value} now. Update that, keeping the history, "
                                  "and move my school run alarm to match.",
        "sync_school_run.casual": "We leave for school at {new_value} from now on. Can you note it (keep the old time "
                                  "on record) and fix the school run alarm too?",
        "sync_school_run.terse": "School run time now {new_value} (supersede); sync the alarm",
    },
    "F09": {
        "allergy.direct": "Remember that {full_name} is allergic to {allergen}.",
        "allergy.casual": "Oh, and {name} can't have {allergen}, they're allergic. Please remember that.",
        "allergy.terse": "Remember: {full_name}, allergy: {allergen}",
        "allergy.s2.direct": "Add a to-do to get {name}'s birthday cake, and note in it what it must not contain.",
        "allergy.s2.casual": "Need a cake for {name}'s birthday, put a to-do in, with what they can't have.",
        "allergy.s2.terse": "To-do: birthday cake for {name} (note their allergy)",
        "parking.direct": "I parked at {spot}. Remember where my car is.",
        "parking.casual": "Car's at {spot}, remember that for me?",
        "parking.terse": "Remember parking: {spot}",
        "parking.s2.direct": "Where did I park my car?",
        "parking.s2.casual": "Ugh, where did I leave the car again?",
        "parking.s2.terse": "Parking spot?",
        "call_back.direct": "Remind me to call {full_name} back tomorrow.",
        "call_back.casual": "I owe {name} a call, remind me tomorrow.",
        "call_back.terse": "Intent: call back {full_name}, tomorrow",
        "call_back.s2.direct": "Take care of what I asked you to remind me about today, and close the reminder.",
        "call_back.s2.casual": "Anything I promised to do today? Go ahead and do it, then clear it.",
        "call_back.s2.terse": "Do today's open intent; close it",
        "gate_code.direct": "Remember that the gate code at {full_name}'s building is {value}.",
        "gate_code.casual": "{name}'s gate code is {value}, keep that for me?",
        "gate_code.terse": "Remember: {full_name}, gate code {value}",
        "gate_code.s2.direct": "What's the gate code at {name}'s building?",
        "gate_code.s2.casual": "I'm outside {name}'s place, what was the gate code again?",
        "gate_code.s2.terse": "{name} gate code?",
        "gift_idea.direct": "Remember that {full_name} would love {value} as a present.",
        "gift_idea.casual": "Gift idea for {name}: {value}. Don't let me forget!",
        "gift_idea.terse": "Remember: gift idea for {full_name}: {value}",
        "gift_idea.s2.direct": "{name}'s birthday is coming up. Add a to-do to buy the gift I had in mind, naming it.",
        "gift_idea.s2.casual": "Need to get {name} a birthday present, put a to-do in with that idea I told you.",
        "gift_idea.s2.terse": "To-do: buy {name}'s gift (the remembered idea)",
        "pay_later.direct": "Remind me to pay {full_name} back {amount} tomorrow.",
        "pay_later.casual": "I owe {name} {amount}, remind me to pay them back tomorrow.",
        "pay_later.terse": "Intent: pay {full_name} back {amount}, tomorrow",
        "pay_later.s2.direct": "Take care of what I asked you to remind me about today, and close the reminder.",
        "pay_later.s2.casual": "Anything I promised to do today? Go ahead and do it, then clear it.",
        "pay_later.s2.terse": "Do today's open intent; close it",
    },
    "F10": {
        "group_text.direct": "Send one group text to {names}: \"{text}\".",
        "group_text.casual": "Can you message {names} all at once? Say: {text}",
        "group_text.terse": "Group SMS to {names}: {text}",
        "expense_batch.direct": "Log these cash expenses in one go: {items}.",
        "expense_batch.casual": "I paid cash for a few things today, can you record them all? {items}",
        "expense_batch.terse": "Cash expenses, batch: {items}",
        "focus_macro.direct": "Turn on focus mode, with the media volume at {level}.",
        "focus_macro.casual": "I need to concentrate. Focus mode please, media volume {level}.",
        "focus_macro.terse": "Focus mode, media {level}",
        "expense_from_note.direct": "Log the cash expenses in my note 'Cash spent today', all in one go.",
        "expense_from_note.casual": "I jotted today's cash spending in a note (Cash spent today). Can you record "
                                    "them all at once?",
        "expense_from_note.terse": "Log all items of note 'Cash spent today' (one batch)",
        "group_invite.direct": "Put a team lunch in my calendar on {day} at {time}, and tell {names} in one group "
                               "text.",
        "group_invite.casual": "Team lunch on {day}, {time}! Add it to my calendar and group text {names} about it?",
        "group_invite.terse": "Calendar: Team lunch {day} {time}; one group SMS to {names}",
        "focus_timer.direct": "Turn on focus mode with the media volume at {level}, and start a {minutes}-minute "
                              "timer for the session.",
        "focus_timer.casual": "Deep work time: focus mode (media volume {level}) and a {minutes} minute timer, "
                              "please.",
        "focus_timer.terse": "Focus mode, media {level}; timer {minutes} min",
    },
    "F11": {
        "author_greeting.direct": "Save a skill named {skill} with parameters contact_id and name that texts "
                                  "\"Happy birthday, <name>! Have a great day.\" to the contact; then use it for "
                                  "{names}, in that order.",
        "author_greeting.casual": "Make me a reusable {skill} skill (parameters contact_id, name) that sends "
                                  "\"Happy birthday, <name>! Have a great day.\", and run it for {names} (that order).",
        "author_greeting.terse": "New skill {skill}(contact_id, name): SMS \"Happy birthday, <name>! Have a great "
                                 "day.\"; run for {names} in order",
        "author_expense.direct": "Save a skill named {skill} with one parameter, amount, that records a cash expense "
                                 "of that amount in dining with the note coffee; then log my coffees of {amounts}, "
                                 "in that order.",
        "author_expense.casual": "I keep buying coffee with cash. Make a {skill} skill (parameter: amount; dining, "
                                 "note coffee) and log today's {amounts} with it, in that order.",
        "author_expense.terse": "Skill {skill}(amount): cash expense, dining, note coffee. Run for {amounts} in order",
        "reuse_todos.direct": "Add these to-dos, in this order, using the quick_todo skill: {chores}.",
        "reuse_todos.casual": "Can you put these on my to-do list with the quick to-do skill? In order: {chores}",
        "reuse_todos.terse": "quick_todo x each, in order: {chores}",
        "author_alarm.direct": "Save a skill named {skill} with parameters time and label that sets an alarm with "
                               "that label; then use it for {items}, in that order.",
        "author_alarm.casual": "Make me a reusable skill, {skill} (time, label), that sets a labelled alarm, and "
                               "run it for {items}, in that order.",
        "author_alarm.terse": "Save skill {skill}(time, label) -> labelled alarm; run for {items}, in order",
        "author_note.direct": "Save a skill named {skill} with a parameter topic that creates a note titled "
                              "\"Meeting: <topic>\"; then use it for {items}, in that order.",
        "author_note.casual": "Can you make a skill, {skill} (topic), that starts a note called \"Meeting: "
                              "<topic>\"? Then run it for {items}, in that order.",
        "author_note.terse": "Save skill {skill}(topic) -> note 'Meeting: <topic>'; run for {items}, in order",
        "author_timer.direct": "Save a skill named {skill} with parameters minutes and label that starts a "
                               "labelled timer; then use it for {items}, in that order.",
        "author_timer.casual": "I keep setting kitchen timers. Save a skill, {skill} (minutes, label), and run it "
                               "for {items}, in that order.",
        "author_timer.terse": "Save skill {skill}(minutes, label) -> labelled timer; run for {items}, in order",
    },
    "F12": {
        "gui_setting.direct": "Set the {app} {setting} to {value}.",
        "gui_setting.casual": "Could you switch my {app}'s {setting} to {value}?",
        "gui_setting.terse": "{app}: {setting} -> {value}",
        "vision_receipt.direct": "Log my latest receipt photo as a dining expense, with the total it shows.",
        "vision_receipt.casual": "I just snapped a receipt. Can you put its total in my expenses under dining?",
        "vision_receipt.terse": "Expense (dining): total of newest receipt photo",
        "automation_later.direct": "At {at} today, text {name}: \"{text}\".",
        "automation_later.casual": "Can you send {name} \"{text}\" at {at} today? Not now, at {at}.",
        "automation_later.terse": "Schedule SMS {at} to {name}: {text}",
        "qa_known.direct": "Ask the building help desk: {question} Tell me what they say.",
        "qa_known.casual": "Can you check with the help desk? {question}",
        "qa_known.terse": "Help desk Q: {question}",
        "qa_unknown.direct": "Ask the building help desk: {question} Tell me what they say.",
        "qa_unknown.casual": "Can you check with the help desk? {question}",
        "qa_unknown.terse": "Help desk Q: {question}",
        "vision_wifi.direct": "I took a photo of the cafe's Wi-Fi card just now. Save its password in a note "
                              "called Cafe Wi-Fi.",
        "vision_wifi.casual": "Snapped the Wi-Fi card here, can you put the password in a note for me (Cafe Wi-Fi)?",
        "vision_wifi.terse": "Note 'Cafe Wi-Fi': password from newest photo",
    },
    "F13": {
        "dinner.direct": "Organise dinner with {guests} at my favourite restaurant on {day} at {time}: put it in my "
                         "calendar, send them both one group text with the plan, and have the phone go on "
                         "do-not-disturb when dinner starts.",
        "dinner.casual": "Let's do dinner with {guests} on {day}, {time}, at my favourite place. Calendar it, group "
                         "text them, and make sure my phone goes quiet (do-not-disturb) when we sit down.",
        "dinner.terse": "Dinner {day} {time}, favourite restaurant, guests {guests}: calendar + one group SMS + "
                        "DND at start",
        "pay_back.direct": "My lunch buddy paid for lunch. Read the total off my newest receipt photo, log my half "
                           "as a dining expense first, then pay them back that half.",
        "pay_back.casual": "Lunch was on my usual lunch buddy today. Check the receipt I just took, record my half "
                           "under dining, and then send them my half.",
        "pay_back.terse": "Newest receipt: log half (dining), then pay lunch buddy half",
        "brunch.direct": "Set up brunch with {guests} at my favourite brunch place on {day} at {time}: put it in my "
                         "calendar, send them both one group text with the plan, and have my ringer go silent "
                         "(volume 0) when brunch starts.",
        "brunch.casual": "Brunch with {guests} on {day} at {time}, my usual brunch spot! Calendar it, one group text "
                         "to both, and mute my ringer when we start.",
        "brunch.terse": "Brunch {day} {time}, favourite brunch place, guests {guests}: calendar + one group SMS + "
                        "ring volume 0 at start",
        "movie_night.direct": "Plan a film with {guests} at my favourite cinema on {day} at {time}: put it in my "
                              "calendar, send them both one group text with the plan, and turn on do-not-disturb "
                              "when the film starts.",
        "movie_night.casual": "Movie night with {guests}, {day} at {time}, at my usual cinema. Add it to the "
                              "calendar, group text them, and make sure my phone goes quiet when it starts.",
        "movie_night.terse": "Film {day} {time}, favourite cinema, guests {guests}: calendar + one group SMS + DND at "
                             "start",
        "taxi_share.direct": "My commute buddy paid for our taxi. Read the total off my newest receipt photo, log my "
                             "half as a transport expense first, then pay them back that half.",
        "taxi_share.casual": "The cab this morning was on my commute buddy. Check the receipt I just took, record my "
                             "half under transport, and then send them my half.",
        "taxi_share.terse": "Newest receipt: log half (transport), then pay commute buddy half",
        "groceries_share.direct": "My flatmate paid for the groceries. Read the total off my newest receipt photo, "
                                  "log my half as a groceries expense first, then pay them back that half.",
        "groceries_share.casual": "Groceries were on my flatmate today. Check the receipt I just took, record my "
                                  "half under groceries, and then send them my half.",
        "groceries_share.terse": "Newest receipt: log half (groceries), then pay flatmate half",
    },
}
