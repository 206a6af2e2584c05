"""The simulated user over a model: it keeps to the persona's facts, goes through the engine and
the journal (no committed user call asked twice), and a reply it may not give is caught."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime

import pytest

from flows.model_setup import StateJournal, engine_for, user_checked
from generators.collect import collect_episodes
from generators.model_user import ModelUser
from generators.models.journal import MemoryJournal
from generators.phone.families import get_family
from generators.phone.user import judge_user_reply, scripted_user_reply
from generators.policies.scripted import ScriptedPolicy
from tests.modelserver import FaultConfig, serve_in_thread
from warehouse.contract import USER_KEY, TaskSpec
from warehouse.errors import ConfigError
from warehouse.settings import OpenAISettings, load_settings
from warehouse.store import Store

NOW = datetime(2026, 12, 1, tzinfo=UTC)
MODEL = "flywheel-test"


def _task(facts: dict, policy: dict | None = None) -> TaskSpec:
    private = {"user_facts": facts, **({"user_policy": policy} if policy is not None else {})}
    return TaskSpec(task_id="t", family="F05", template="x.direct", seed=0, instruction="Book the room.",
                    private_params=private)


def test_a_reply_is_kept_only_when_it_answers_what_was_asked_and_nothing_more():
    task = _task({"room": "4B", "meeting_time|time": "10:30"}, {"confirm": False})
    assert judge_user_reply(task, "Which room?", "It's room 4B.").text == "It's room 4B."
    leak = judge_user_reply(task, "Which room?", "Room 4B, and the meeting is at 10:30.")
    assert leak.text == "4B" and leak.problem.startswith("named a private fact it was not asked (meeting_time)")
    assert leak.raw == "Room 4B, and the meeting is at 10:30."
    # a question about nothing it knows: volunteering a fact is caught too
    assert judge_user_reply(task, "What is your budget?", "No idea, but the room is 4B").problem.startswith("named")
    assert judge_user_reply(task, "What is your budget?", "I don't know.").problem == ""
    assert judge_user_reply(task, "Which room?", "Somewhere upstairs.").problem == "left out the fact it was asked for"
    assert judge_user_reply(task, "Which room?", "  ").problem == "empty reply"
    # confirmations follow the task's policy
    against = judge_user_reply(task, "Should I go ahead and book it?", "Yes, go ahead.")
    assert against.problem == "answered a confirmation against the task's policy" and against.text == "No, please don't."
    assert judge_user_reply(task, "Should I go ahead and book it?", "No, don't.").problem == ""
    assert judge_user_reply(task, "Should I go ahead and book it?", "Hmm.").problem == "neither confirmed nor declined"
    # a fact is matched as a whole value: "14B" does not say "4B"
    assert judge_user_reply(task, "What time?", "10:30, in room 14B.").problem == ""


SECRET = "12 Rue Lepic"  # a fact of the persona that no question of these tasks asks for


def _ask_tasks(n: int) -> list[TaskSpec]:
    """F05 tasks whose reference asks the user (a fact, or a confirmation); their user also knows
    where they live, which nobody asks."""
    fam = get_family("F05")
    out = []
    for seed in range(60):
        t = fam.make_task(seed, 1)
        if any(a.kind == "ask_user" or a.tool == "ask_user" for a in fam.reference_actions(t)):
            t.private_params["user_facts"]["home address|address"] = SECRET
            out.append(t)
        if len(out) == n:
            return out
    raise AssertionError("F05 has too few tasks that ask the user")


def _collect(server, tasks, journal, **cfg):
    """Collect one rollout of each task with a careful scripted planner and the model user."""
    async def run():
        settings = OpenAISettings(retries=cfg.get("retries", 1), backoff_s=0.01, timeout_s=10)
        engine = engine_for(settings, base_url=server.base_url, api_key="none", model=MODEL)
        try:
            user = ModelUser(engine, journal)
            policy = ScriptedPolicy(error_rates={}, seed=0)
            return await collect_episodes([(t, 0) for t in tasks], policy, round_id="r0001", batch_id="b",
                                          created_at=NOW, user=user)
        finally:
            await engine.close()

    return asyncio.run(run())


def _user_requests(server) -> dict[str, int]:
    return {e: v["requests"] for e, v in server.stats()["episodes"].items() if e.startswith(USER_KEY)}


def _asks(record):
    return [s for s in record.steps if s.action.kind == "ask_user" or s.action.tool == "ask_user"]


def test_the_model_user_answers_through_the_engine_and_a_rerun_asks_nothing_again():
    tasks = _ask_tasks(4)
    journal = MemoryJournal()
    with serve_in_thread() as server:
        first = _collect(server, tasks, journal)
        asked = _user_requests(server)
        second = _collect(server, tasks, journal)  # the same episodes again: every answer from the journal
        assert _user_requests(server) == asked
    assert sum(asked.values()) == sum(len(_asks(r)) for r in first) > 0
    for task, record in zip(tasks, first, strict=True):
        assert record.outcome.user_fallbacks == []
        for step in _asks(record):
            assert step.feedback.result["answer"] == scripted_user_reply(task, step.action.arguments["question"])
    assert [r.model_dump() for r in first] == [r.model_dump() for r in second]


def test_a_user_call_committed_before_a_kill_is_never_asked_again(tmp_path):
    """The journal is the state database's: a run that dies right after a user reply is journaled
    leaves it there, and the rerun takes it instead of asking."""
    store = Store(tmp_path / "data")
    tasks = _ask_tasks(2)

    class DiesAfterJournaling(StateJournal):
        async def append(self, key, index, reply):
            await super().append(key, index, reply)
            if key.startswith(USER_KEY):
                raise KeyboardInterrupt("killed")  # as a kill would, right after the commit

    with serve_in_thread() as server:
        with pytest.raises(KeyboardInterrupt):
            _collect(server, tasks[:1], DiesAfterJournaling(store, "r0001"))
        before = _user_requests(server)
        records = _collect(server, tasks[:1], StateJournal(store, "r0001"))
        after = _user_requests(server)
    [(episode, n)] = before.items()
    assert n == 1
    # the rerun asked only the questions after the committed one (this task asks once: nothing)
    assert after[episode] - n == len(_asks(records[0])) - 1
    assert records[0].outcome.user_fallbacks == []


def test_a_scripted_answer_in_place_of_a_missing_reply_is_journaled_and_replayed_after_the_endpoint_heals():
    """The planner went on from the scripted answer: a rerun (a kill, or a shard refused for an endpoint
    that gave up) must replay that answer, not ask the healed user model and put a new reply before
    planner steps that never saw it."""
    tasks = _ask_tasks(2)
    journal = MemoryJournal()
    with serve_in_thread(FaultConfig(rate=1.0, kinds={"500": 1.0})) as server:
        first = _collect(server, tasks, journal, retries=0)
        server.set_faults(FaultConfig())
        asked = _user_requests(server)
        again = _collect(server, tasks, journal, retries=0)
        assert _user_requests(server) == asked  # nothing asked again: the fallbacks were journaled
    assert all(r.outcome.user_fallbacks for r in first)
    assert [r.model_dump() for r in first] == [r.model_dump() for r in again]
    assert all(f["reason"].startswith("no reply: 500") for r in again for f in r.outcome.user_fallbacks)


@pytest.mark.parametrize("fault, reason", [("leak", "named a private fact it was not asked"),
                                           ("empty", "empty reply"), ("500", "no reply: 500")])
def test_an_unusable_user_reply_is_replaced_counted_and_kept_never_a_traceback(fault, reason):
    tasks = _ask_tasks(3)
    with serve_in_thread(FaultConfig(rate=1.0, kinds={fault: 1.0})) as server:
        # the planner's requests are not made here (a scripted planner): only the user's see the fault
        records = _collect(server, tasks, MemoryJournal(), retries=0)
    for task, record in zip(tasks, records, strict=True):
        asks = _asks(record)
        assert asks and len(record.outcome.user_fallbacks) == len(asks)
        for step, fallback in zip(asks, record.outcome.user_fallbacks, strict=True):
            assert fallback["step"] == step.index and fallback["reason"].startswith(reason)
            # the planner got the scripted answer, never the leaked facts
            assert step.feedback.result["answer"] == scripted_user_reply(task, step.action.arguments["question"])
            assert SECRET not in step.feedback.result["answer"]
            if fault == "leak":
                assert SECRET in fallback["raw"]


def test_the_user_section_defaults_to_the_scripted_user_and_says_what_is_missing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert not load_settings().user.enabled
    with pytest.raises(ConfigError, match="the model user needs a model"):
        user_checked(load_settings(user={"base_url": "http://127.0.0.1:9/v1"}))
    with pytest.raises(ConfigError, match="FLYWHEEL_USER__API_KEY"):
        user_checked(load_settings(user={"base_url": "https://api.example.com/v1", "model": "m"}))
    assert user_checked(load_settings(user={"base_url": "http://127.0.0.1:9/v1", "model": "m"})) == ("m", "not-needed")
    # an unreachable model user names its own setting, not the planner's --base-url
    from flows.model_setup import probe_user
    from generators.models import EndpointRefused
    from tests.conftest import free_port

    url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    with pytest.raises(EndpointRefused) as said:
        probe_user(load_settings(user={"base_url": url, "model": "m"}))
    assert str(said.value) == f"the model user: cannot reach the model endpoint {url} (check user.base_url or " \
                              "FLYWHEEL_USER__BASE_URL)"
    # a URL that is none is refused where settings load; an empty one is the scripted user
    monkeypatch.setenv("FLYWHEEL_USER__BASE_URL", "localhost:8000/v1")
    with pytest.raises(ConfigError, match=r"^FLYWHEEL_USER__BASE_URL: user.base_url: not an http\(s\) URL: "
                                          r"'localhost:8000/v1' \(e.g. http://127.0.0.1:8000/v1\)$"):
        load_settings()
    monkeypatch.delenv("FLYWHEEL_USER__BASE_URL")
    assert not load_settings(user={"base_url": "", "model": "m"}).user.enabled


def _journaled_user_answers(store) -> set[tuple[str, int]]:
    from sqlmodel import select

    from warehouse.state import ModelReply

    with store.session() as s:
        return {(r.episode_id, r.step_index) for r in s.exec(select(ModelReply)) if r.episode_id.startswith(USER_KEY)}


@pytest.mark.slow
def test_a_round_killed_after_user_answers_repeats_none_and_reports_bad_replies(tmp_path, prefect_server):
    """A real round (scripted planner, model user) SIGKILLed right after its third committed user
    answer, before its shard commits: the rerun asks none of those again; a user model that answers
    nothing is reported in the round's summary."""
    from tests.conftest import cli_env, flywheel

    with serve_in_thread(FaultConfig(latency_ms=20)) as server:
        env = cli_env(prefect_server, FLYWHEEL_USER__BASE_URL=server.base_url, FLYWHEEL_USER__MODEL=MODEL,
                      FLYWHEEL_ROUND__FAMILIES=json.dumps(["F05"]), FLYWHEEL_ROUND__WORKERS="1",
                      FLYWHEEL_ROUND__SHARD_SIZE="100", FLYWHEEL_OPENAI__CONCURRENCY="1")
        args = ["run", "--episodes", "12", "--rollouts", "1", "--no-progress", "--json"]
        killed = flywheel(*args, env={**env, "FLYWHEEL_KILL_AT": "user.answered:3"}, cwd=tmp_path)
        assert killed.returncode == -9, killed.stderr
        store = Store(tmp_path / "flywheel-data")
        journaled = _journaled_user_answers(store)
        assert len(journaled) == 3 and not store.done_keys("r0001", "episodes")
        rerun = flywheel(*args, env=env, cwd=tmp_path)
        assert rerun.returncode == 0, rerun.stderr
        asked = _user_requests(server)
        # one request per user answer: the three committed before the kill were taken from the journal
        # (with one call in flight at a time, the kill left none half-asked)
        answers = _journaled_user_answers(store)
        assert len(answers) > 3 and journaled <= answers
        assert sum(asked.values()) == len(answers)
        assert json.loads(rerun.stdout)["user_fallbacks"] == []
        # every user answer is in the round's cost, once, the three from before the kill included
        [user] = [r for r in json.loads(rerun.stdout)["model_usage"] if r["role"] == "user"]
        assert (user["model"], user["calls"]) == (MODEL, len(answers)) and user["prompt_tokens"] > 0

        server.set_faults(FaultConfig(rate=1.0, kinds={"empty": 1.0}))
        leaky = flywheel(*args, env={**env, "FLYWHEEL_ROUND__SEED": "7"}, cwd=tmp_path)
        assert leaky.returncode == 0, leaky.stderr
    [counted] = json.loads(leaky.stdout)["user_fallbacks"]
    assert counted["reason"] == "empty reply" and counted["replies"] >= counted["episodes"] > 0
