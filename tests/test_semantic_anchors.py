"""Two instructions state the same values (or not): what a paraphrase may word differently, and the
near misses that must stay two meanings."""

import pytest

from curation.semantic import anchors_agree, statement

SAME = [
    # an abbreviation is vocabulary, not a name
    ("Send one group text to Omar Miller and Priya Patel: \"drinks at six?\".",
     "Group SMS to Omar Miller and Priya Patel: drinks at six?"),
    ("Ask the building help desk: How much is the visitor parking fee?", "Help desk Q: How much is the visitor parking fee?"),
    # a relative day one leaves implicit
    ("I paid cash today: 17.37 transport (taxi); 39.51 health (pharmacy)",
     "Log these cash expenses: 17.37 transport (taxi); 39.51 health (pharmacy)"),
    # a surname one leaves out
    ("Oh, and Priya can't have gluten, they're allergic. Please remember that.",
     "Remember that Priya Rossi is allergic to gluten."),
    ("Intent: pay Noah Khan back 51.67, tomorrow", "I owe Noah 51.67, remind me to pay them back tomorrow."),
    # a hyphenated value found by its parts
    ("Block a 45-minute focus slot on Monday at 09:00.", "Focus block Monday 09:00, 45 min"),
    ("Set an alarm for 07:30 on Saturday", "On Saturday, alarm at 07:30"),
]

DIFFERENT = [
    ("How many events on Saturday?", "How many events on Sunday?"),
    ("Send it today at 17:30", "Send it tomorrow at 17:30"),
    ("Remember that Priya Rossi is allergic to gluten.", "Remember that Priya Khan is allergic to gluten."),
    ("My neighbour Hannah Haddad sent me a door code.", "My neighbour Arjun Haddad sent me a door code."),
    ("Turn on Wi-Fi and set the brightness to 40%", "Turn on airplane mode and set the brightness to 40%"),
    ("Tell Priya Rossi I am late.", "Tell Priya Khan and Noah I am late."),  # Priya named with another surname
    ("Turn on Wi-Fi, then turn on Bluetooth.", "Turn on Wi-Fi."),  # one more item
    ("Set the brightness to 25%.", "Set the brightness to 18%."),
    ("Block a 45-minute focus slot at 09:00.", "Block a 50-minute focus slot at 09:00."),
    ("Pay Noah Khan 20.00 via SMS link", "Pay Noah Khan 25.00 via SMS link"),
]


@pytest.mark.parametrize(("a", "b"), SAME)
def test_paraphrases_state_the_same_values(a, b):
    assert anchors_agree(statement(a), statement(b)) and anchors_agree(statement(b), statement(a))


@pytest.mark.parametrize(("a", "b"), DIFFERENT)
def test_near_misses_state_other_values(a, b):
    assert not anchors_agree(statement(a), statement(b)) and not anchors_agree(statement(b), statement(a))
