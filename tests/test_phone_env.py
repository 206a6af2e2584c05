"""PhoneEnv: notices, budget, ask_user, finish, step labels."""

from generators.phone.env import STOP_GUESSING, PhoneEnv
from generators.phone.families import get_family
from generators.phone.families.base import call, finish
from warehouse.contract import Action


def env_for(fid="F01", seed=0, difficulty=1):
    family = get_family(fid)
    if fid == "F01":  # these tests speak of contacts: the seed-th task of a contact variant
        seed = [s for s in range(300) if family.make_task(s, difficulty).template.startswith(
            ("update_phone", "delete_contact"))][seed]
    task = family.make_task(seed, difficulty)
    env = PhoneEnv(task, get_family(task.family))
    obs = env.reset()
    return task, env, obs


def test_reset_gives_instruction_and_schemas():
    task, _, obs = env_for()
    assert obs["instruction"] == task.instruction
    assert [s["function"]["name"] for s in obs["tools"]][-2:] == ["finish", "ask_user"]


def test_stop_guessing_after_same_failing_call_twice():
    _, env, _ = env_for()
    bad = call("contacts_get", contact_id="c-9999")
    fb1, v1, _ = env.step(bad)
    fb2, v2, _ = env.step(bad)
    assert not fb1.ok and fb1.error.code == "NOT_FOUND" and not fb1.notices
    assert STOP_GUESSING in fb2.notices
    assert v1.label == "recoverable_error"


def test_budget_warning_and_exhaustion():
    task, env, _ = env_for()
    read = call("device_get_settings")
    notices, done, n = [], False, 0
    while not done:
        fb, _, done = env.step(read)
        notices.append(fb.notices)
        n += 1
    assert n == task.step_budget and env.termination == "budget_exhausted"
    assert any("steps left" in x for x in notices[task.step_budget - 3])


def test_finish_ends_and_invalid_finish_does_not():
    _, env, _ = env_for()
    fb, v, done = env.step(Action(kind="finish", tool="finish", arguments={"status": "done?"}))
    assert not done and fb.error.code == "INVALID_ARGUMENT" and v.label == "invalid_call"
    _, _, done = env.step(finish())
    assert done and env.termination == "finished"


def test_ask_user_answers_from_hidden_facts():
    _, env, _ = env_for("F01")
    fb, _, done = env.step(Action(kind="ask_user", tool="ask_user", arguments={"question": "What is their email?"}))
    assert fb.ok and "@" in fb.result["answer"] and not done
    fb, _, _ = env.step(Action(kind="ask_user", tool="ask_user", arguments={"question": "Favourite colour?"}))
    assert fb.result["answer"] == "I don't know."


def test_invalid_action_and_unexposed_tool_are_invalid_calls():
    _, env, _ = env_for("F03")
    _, v, _ = env.step(Action(kind="invalid", raw="garbled"))
    assert v.label == "invalid_call"
    fb, v, _ = env.step(call("contacts_delete", contact_id="c-0001"))
    assert fb.error.code == "UNKNOWN_TOOL" and v.label == "invalid_call"


def test_step_labels_ok_redundant_harmful():
    task, env, _ = env_for("F01", seed=0)
    decoy = task.private_params["decoy_ids"][0]
    _, v, _ = env.step(call("contacts_search", query=task.public_params["name"]))
    assert v.label == "ok"
    _, v, _ = env.step(call("contacts_search", query=task.public_params["name"]))
    assert v.label == "redundant"
    fb, v, _ = env.step(call("contacts_update", contact_id=decoy, phone="+1 000-555-0000"))
    assert fb.ok and fb.state_delta and v.label == "harmful"
