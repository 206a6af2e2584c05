"""The model path's logic on fakes: reply parsing, the engine's retries, limits and breaker,
the episode loop's invalid replies and journal replay, endpoint settings."""

from __future__ import annotations

import asyncio
import json
import random
from datetime import UTC, datetime

import pytest

from generators.model_collect import MemoryJournal, ModelPolicy, run_model_episode
from generators.models import ChatReply, EndpointDown, Engine, EngineConfig, FakeEndpoint, TransientFailure
from generators.models.endpoint import ChatRequest, ToolCall
from generators.models.limits import RateLimiter
from generators.phone.families import FAMILIES
from generators.policies.model_chat import conversation, parse_reply
from generators.writers.model_writer import MAX_REPLY_TOKENS
from warehouse.errors import ConfigError
from warehouse.settings import OpenAISettings

WHEN = datetime(2026, 3, 1, tzinfo=UTC)
ALLOWED = {"contacts_search", "contacts_update"}


def _call(name: str, arguments: str) -> list[ToolCall]:
    return [ToolCall(id="c1", name=name, arguments=arguments)]


@pytest.mark.parametrize("content,calls,reason", [
    ("", [], "empty reply"),
    (None, [], "empty reply"),
    ("I will search now.", [], "text where a tool call was required"),
    (None, _call("contacts_delete_all", "{}"), "unknown tool"),
    (None, _call("contacts_search", '{"query": "Ann'), "not valid JSON"),
    (None, _call("contacts_search", '["Ann"]'), "must be a JSON object"),
])
def test_unusable_replies_become_invalid_actions_with_raw_text(content, calls, reason):
    parsed = parse_reply(content, calls, ALLOWED)
    assert parsed.action.kind == "invalid" and reason in parsed.reason
    if calls:
        assert parsed.action.raw == calls[0].arguments


def test_usable_replies_become_actions():
    call = parse_reply("Looking her up.", _call("contacts_search", '{"query": "Ann"}'), ALLOWED)
    assert (call.reason, call.action.kind, call.action.arguments, call.action.text) == \
        ("", "tool_call", {"query": "Ann"}, "Looking her up.")
    assert parse_reply(None, _call("finish", '{"status": "completed"}'), ALLOWED).action.kind == "finish"
    assert parse_reply(None, _call("ask_user", '{"question": "which?"}'), ALLOWED).action.kind == "ask_user"


def _engine(responder, **cfg) -> Engine:
    return Engine(FakeEndpoint(responder), EngineConfig(**{"backoff_s": 0.001, "backoff_max_s": 0.01, **cfg}),
                  rng=random.Random(0))


def _ok(_request=None) -> ChatReply:
    return ChatReply(content="ok", tool_calls=[], prompt_tokens=3, completion_tokens=2)


def _request() -> ChatRequest:
    return ChatRequest(messages=[{"role": "user", "content": "hi"}])


def test_engine_retries_transient_failures_then_succeeds():
    failures = iter([TransientFailure("429", "slow down", 0.001), TransientFailure("500", "oops")])

    def responder(_):
        failure = next(failures, None)
        if failure:
            raise failure
        return _ok()

    async def main():
        engine = _engine(responder, retries=3)
        reply = await engine.complete(_request())
        return reply, engine.stats

    reply, stats = asyncio.run(main())
    assert reply.attempts == 3 and stats.attempts == 3 and dict(stats.failures) == {"429": 1, "500": 1}


def test_engine_gives_up_after_retries_and_times_out_slow_calls():
    async def slow(_):
        await asyncio.sleep(5)

    async def main():
        with pytest.raises(TransientFailure) as info:
            await _engine(slow, retries=1, timeout_s=0.05).complete(_request())
        return info.value

    assert asyncio.run(main()).kind == "timeout"


def test_a_tpm_below_one_request_is_refused_in_one_line_before_any_call():
    # an F06 request's tool schemas alone are ~1,800 tokens: booked against tpm=1000 it would
    # hold every call for minutes and the round would sit there saying nothing
    task = FAMILIES["F06"].make_task(0, 2)
    request = ChatRequest(messages=conversation(task, []), tools=[{"type": "function", "function": {
        "name": name, "description": "x" * 400, "parameters": {}}} for name in task.tools])
    calls = []

    async def main(tpm):
        engine = _engine(lambda r: calls.append(r) or _ok(), tpm=tpm)
        return await engine.complete(request)

    with pytest.raises(ConfigError, match=r"openai.tpm \(1,000\) is below one request's estimate \(\d"):
        asyncio.run(main(1000))
    assert calls == []
    assert asyncio.run(main(request.estimated_tokens())).content == "ok" and len(calls) == 1  # exactly one fits


def test_backoff_honours_retry_after_and_grows_with_jitter():
    engine = _engine(_ok, backoff_s=1.0, backoff_max_s=8.0)
    assert 2.0 <= engine.backoff(1, 2.0) <= 2.2
    waits = [engine.backoff(n, None) for n in (1, 2, 3, 4, 5, 6)]
    assert 0.5 <= waits[0] <= 1.0 and 2.0 <= waits[2] <= 4.0 and all(w <= 8.0 for w in waits)


def test_breaker_opens_when_the_endpoint_keeps_failing():
    def down(_):
        raise TransientFailure("503", "unavailable")

    async def main():
        engine = _engine(down, retries=100, breaker_failures=5)
        with pytest.raises(EndpointDown, match="model endpoint is down"):
            await engine.complete(_request())
        with pytest.raises(EndpointDown):  # later calls fail at once
            await engine.complete(_request())
        return engine.stats.attempts

    assert asyncio.run(main()) == 5


def test_a_stall_that_times_out_every_call_in_flight_at_once_is_one_failure_not_an_outage():
    # 16 calls in flight when the endpoint stalls once: all time out together; the breaker (6) must
    # stay closed and every call succeed on its retry. An endpoint that stays down still opens it.
    stalled = {"left": 16}

    async def stall_once(_):
        if stalled["left"] > 0:
            stalled["left"] -= 1
            await asyncio.sleep(1.0)
        return _ok()

    async def main():
        # sixteen in flight at once from the start (a fixed limit: the adaptive one starts at one)
        engine = Engine(FakeEndpoint(stall_once), EngineConfig(concurrency=16, adaptive=False, timeout_s=0.05, retries=2,
                                                               backoff_s=0.001, backoff_max_s=0.01,
                                                               breaker_failures=6), rng=random.Random(0))
        replies = await asyncio.gather(*(engine.complete(_request()) for _ in range(16)))
        return engine, replies

    engine, replies = asyncio.run(main())
    assert len(replies) == 16 and engine.stats.failures["timeout"] == 16
    assert not engine.breaker.open and engine.breaker.failures == 0

    def down(_):
        raise TransientFailure("503", "unavailable")

    async def concurrent_down():
        engine = Engine(FakeEndpoint(down), EngineConfig(concurrency=16, retries=100, backoff_s=0.001,
                                                         backoff_max_s=0.01, breaker_failures=6))
        results = await asyncio.gather(*(engine.complete(_request()) for _ in range(16)), return_exceptions=True)
        return engine, results

    engine, results = asyncio.run(concurrent_down())
    assert engine.breaker.open and all(isinstance(r, EndpointDown) for r in results)
    assert "6 failed attempts in a row" in str(results[0])


def test_engine_keeps_to_its_concurrency_limit():
    in_flight, peak = 0, 0

    async def responder(_):
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.01)
        in_flight -= 1
        return _ok()

    async def main():
        engine = _engine(responder, concurrency=3)
        await asyncio.gather(*(engine.complete(_request()) for _ in range(20)))

    asyncio.run(main())
    assert peak == 3


def test_rate_limiter_spaces_requests_after_a_burst():
    now = [100.0]
    limiter = RateLimiter(per_minute=60, burst_s=1.0, clock=lambda: now[0])  # one a second
    waits = [limiter.reserve(1) for _ in range(4)]
    assert waits == [0.0, 0.0, 1.0, 2.0]
    now[0] += 10  # a quiet spell saves up no more than one burst
    assert [limiter.reserve(1) for _ in range(3)] == [0.0, 0.0, 1.0]


def _scripted_responder(task, plan):
    def responder(request: ChatRequest) -> ChatReply:
        n = sum(1 for m in request.messages if m["role"] == "tool" and "INVALID_ACTION" not in m["content"])
        a = plan[min(n, len(plan) - 1)]
        return ChatReply(content=None, tool_calls=_call(a.tool, json.dumps(a.arguments)), prompt_tokens=10,
                         completion_tokens=4, latency_ms=1.5)
    return responder


def test_episode_replays_its_journal_without_asking_again():
    task = FAMILIES["F01"].make_task(3, 1)
    plan = FAMILIES["F01"].reference_actions(task)
    journal = MemoryJournal()
    policy = ModelPolicy(model="fake")

    async def run(responder):
        engine = _engine(responder)
        return await run_model_episode(task, policy, engine, journal, rollout=0, round_id="r", batch_id="b",
                                       created_at=WHEN)

    first = asyncio.run(run(_scripted_responder(task, plan)))
    assert first.outcome.success and first.outcome.termination == "finished"
    assert first.outcome.prompt_tokens == 10 * len(first.steps) and first.steps[0].cost.latency_ms == 1.5

    def never(_):
        raise AssertionError("a journaled reply was requested again")

    again = asyncio.run(run(never))
    assert again.model_dump_json() == first.model_dump_json()


def test_unusable_replies_in_a_row_end_the_episode_with_a_reason():
    task = FAMILIES["F02"].make_task(1, 1)

    async def main():
        engine = _engine(lambda _: ChatReply(content="Let me think about it.", tool_calls=[]))
        return await run_model_episode(task, ModelPolicy(model="fake", max_invalid_replies=3), engine,
                                       MemoryJournal(), rollout=0, round_id="r", batch_id="b", created_at=WHEN)

    rec = asyncio.run(main())
    assert rec.outcome.termination == "invalid_replies" and not rec.outcome.success
    assert [s.verification.label for s in rec.steps] == ["invalid_call"] * 3
    assert rec.steps[0].action.raw == "Let me think about it."
    msgs = conversation(task, rec.steps)
    assert msgs[-1]["role"] == "user" and "[harness]" in msgs[-1]["content"]


def test_max_steps_ends_an_episode_early_as_budget_exhausted_saying_why():
    task = FAMILIES["F01"].make_task(2, 1)  # six steps of the reference plan, a budget of twelve
    plan = FAMILIES["F01"].reference_actions(task)

    async def main(max_steps):
        return await run_model_episode(task, ModelPolicy(model="fake", max_steps=max_steps),
                                       _engine(_scripted_responder(task, plan)), MemoryJournal(), rollout=0,
                                       round_id="r", batch_id="b", created_at=WHEN)

    capped = asyncio.run(main(2))
    assert len(capped.steps) == 2 and capped.outcome.termination == "budget_exhausted"
    assert not capped.outcome.success and "stopped at openai.max_steps (2)" in capped.outcome.failure.detail
    whole = asyncio.run(main(len(plan)))  # a cap the episode does not reach changes nothing
    assert whole.outcome.termination == "finished" and whole.outcome.success


def test_endpoint_failure_ends_the_episode_as_endpoint_error():
    task = FAMILIES["F03"].make_task(2, 1)

    def failing(_):
        raise TransientFailure("500", "oops")

    async def main():
        engine = _engine(failing, retries=1, breaker_failures=100)
        return await run_model_episode(task, ModelPolicy(model="fake"), engine, MemoryJournal(), rollout=0,
                                       round_id="r", batch_id="b", created_at=WHEN)

    rec = asyncio.run(main())
    assert rec.outcome.termination == "endpoint_error" and rec.outcome.failure.side == "harness"


def test_api_keys_placeholders_are_refused_and_never_shown():
    with pytest.raises(ConfigError, match="placeholder"):
        OpenAISettings(api_key="changethis", base_url="https://api.example.com/v1").checked_key()
    with pytest.raises(ConfigError, match="no API key"):
        OpenAISettings(base_url="https://api.example.com/v1").checked_key()
    assert OpenAISettings(base_url="http://127.0.0.1:8000/v1").checked_key() == "not-needed"
    cfg = OpenAISettings(api_key="sk-live-abc123", base_url="https://api.example.com/v1")
    assert cfg.checked_key() == "sk-live-abc123"
    assert "sk-live-abc123" not in repr(cfg) + str(cfg.model_dump())


def _writer_run(task, replies):
    from generators.writers.model_writer import word_with_model

    queue = list(replies)
    seen: list[ChatRequest] = []

    def responder(request):
        seen.append(request)
        return ChatReply(content=queue.pop(0), tool_calls=[])

    async def main():
        return await word_with_model(task, _engine(responder), MemoryJournal(), rounds=3, writer_name="openai:fake")

    return asyncio.run(main()), seen


def test_model_writer_retries_with_the_reason_then_accepts():
    task = FAMILIES["F01"].make_task(13, 1)  # an update_phone task: "<name> got a new number, it's ..."
    name, phone = task.public_params["name"], task.public_params["new_phone"]
    leaked_fact = task.private_params["user_facts"]["email"]
    good = json.dumps({"instruction": f"Pls change {name}'s number to {phone}"})
    worded, seen = _writer_run(task, ["Sure! Here you go.", json.dumps({"instruction": f"Update {name}"}),
                                      good])
    assert worded.instruction == f"Pls change {name}'s number to {phone}" and worded.writer == "openai:fake"
    assert "not JSON" in seen[1].messages[-1]["content"]
    assert "drops required value" in seen[2].messages[-1]["content"] and phone in seen[2].messages[-1]["content"]
    assert {r.max_tokens for r in seen} == {MAX_REPLY_TOKENS}  # a rambling model cannot hold the round up

    leak = json.dumps({"instruction": f"Change {name} ({leaked_fact}) to {phone}"})
    fallback, _ = _writer_run(task, [leak, leak, leak])
    assert fallback.instruction == task.instruction and fallback.writer == "template"


def test_model_writer_refuses_a_leaked_answer():
    from generators.writers.model_writer import check_instruction

    task = next(t for t in (FAMILIES["F02"].make_task(s, 1) for s in range(20))
                if t.private_params.get("variant") == "company_count")
    n = task.private_params["n_targets"]
    company = task.public_params["company"]
    ok, why = check_instruction(json.dumps({"instruction": f"how many contacts at {company}? I think {n}"}),
                                task, task.instruction)
    assert ok is None and "hidden value" in why
    ok, why = check_instruction(json.dumps({"instruction": f"Count my {company} contacts"}), task, task.instruction)
    assert ok == f"Count my {company} contacts" and why == ""


def test_model_writer_refuses_an_instruction_with_none_of_the_tasks_words_when_it_has_no_values():
    from generators.writers.model_writer import check_instruction, required_values

    tasks = [t for f in ("F12", "F13") for t in (FAMILIES[f].make_task(s, 1) for s in range(30))]
    bare = next(t for t in tasks if not required_values(t, t.instruction))
    ok, why = check_instruction(json.dumps({"instruction": "Could you sort that out on my phone?"}), bare,
                                bare.instruction)
    assert ok is None and "none of the task's words" in why
    ok, why = check_instruction(json.dumps({"instruction": "Hey, " + bare.instruction}), bare, bare.instruction)
    assert ok and why == ""
