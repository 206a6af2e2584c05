"""Episodes as conversations: turns, folding of tool calls, and which episodes are shown as a chat."""

from __future__ import annotations

import json

from generators.importers.openai_chat import episode_from_record
from review_app.conversation import conversation_turns, is_conversation
from tests.review_fixtures import airline_conversation
from warehouse.contract import Action, Feedback, Step


def _imported(record):
    from datetime import UTC, datetime

    return episode_from_record(record, batch_id="b", created_at=datetime.now(UTC))


def test_airline_conversation_turns_fold_calls_under_the_turn_that_made_them():
    rec = _imported(airline_conversation())
    turns = conversation_turns(rec.episode.instruction, rec.steps)
    assert [t.role for t in turns] == ["user", "agent", "user", "agent", "user", "agent"]
    lookup = turns[1]
    assert lookup.text == "Let me find your booking." and lookup.after.endswith("Which one?")
    assert [(c.step, c.tool, c.ok) for c in lookup.calls] == [(0, "find_reservation", False),
                                                              (1, "find_reservation", True)]
    assert lookup.calls[0].bad and "NOT_FOUND" in lookup.calls[0].error and lookup.bad
    assert turns[2].text == "The one on the 3rd, please."
    assert [c.tool for c in turns[3].calls] == ["change_flight"] and turns[3].after.startswith("Done")
    assert turns[5].text == "You're welcome, have a good trip."
    assert sorted(s for t in turns for s in t.steps) == list(range(len(rec.steps)))  # the user's turns are steps too
    assert is_conversation(rec.episode, rec.steps)


def test_single_turn_import_and_a_collected_clarifying_question_keep_the_step_table():
    one_turn = airline_conversation()
    one_turn["messages"] = one_turn["messages"][:6] + [{"role": "assistant", "content": "Found two bookings."}]
    rec = _imported(one_turn)
    assert not is_conversation(rec.episode, rec.steps)  # the user spoke once: a single-user task
    # a collected phone task that asked the (scripted) user once is still a single-user task
    collected = rec.episode.model_copy(update={"source": "collected"})
    ask = Step(episode_id="e", index=0, action=Action(kind="ask_user", tool="ask_user",
                                                      arguments={"question": "Which Ana?"}),
               feedback=Feedback(ok=True, result={"answer": "Ana Ruiz"}))
    assert not is_conversation(collected, [ask])
    # a step by the (simulated) user makes it a conversation whatever the source
    said = Step(episode_id="e", index=1, actor="user", action=Action(kind="tool_call", text="Actually, the other Ana."),
                feedback=Feedback(ok=True))
    assert is_conversation(collected, [ask, said])
    turns = conversation_turns("Call Ana", [ask, said])
    assert [(t.role, t.text) for t in turns] == [("user", "Call Ana"), ("agent", "Which Ana?"),
                                                ("user", "Ana Ruiz"), ("user", "Actually, the other Ana.")]


def test_failed_finish_is_an_error_on_its_turn():
    bad = Step(episode_id="e", index=0, action=Action(kind="finish", tool="finish", arguments={"status": "done"}),
               feedback=Feedback.model_validate({"ok": False, "error": {"code": "INVALID_ARGUMENT",
                                                                        "message": "status must be one of ..."}}))
    (_, turn) = conversation_turns("x", [bad])
    assert turn.error.startswith("INVALID_ARGUMENT") and turn.bad
    assert json.dumps(turn.steps) == "[0]"
