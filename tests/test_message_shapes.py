"""Requests every common server takes, and refusals that are not outages.

Conversations the planner sends are checked against the rules real servers keep
(tests.modelserver.strict: llama.cpp's schemas plus OpenAI's id rules) with the
model's own bad habits thrown in (null content, repeated, empty and long call ids,
prose and broken JSON). Refusals are classified by status and body, counted by the
engine without retrying or opening the breaker, and end only the episode they hit, with
the server's message, against the test server's llama.cpp-like strict mode.
"""

from __future__ import annotations

import asyncio
import json
import random
from datetime import UTC, datetime

import pytest

from generators.model_collect import MemoryJournal, ModelPolicy, run_model_episode, run_model_episodes
from generators.models import ChatReply, Engine, EngineConfig, FakeEndpoint, OpenAIEndpoint, RequestRejected
from generators.models.endpoint import ChatRequest, ToolCall, TransientFailure
from generators.models.openai_endpoint import is_refusal
from generators.phone.families import FAMILIES
from generators.policies.model_chat import call_id_for, conversation
from tests.modelserver.faults import FaultConfig
from tests.modelserver.run import serve_in_thread
from tests.modelserver.strict import message_errors

WHEN = datetime(2026, 3, 1, tzinfo=UTC)


def _engine(endpoint, **cfg) -> Engine:
    return Engine(endpoint, EngineConfig(**{"backoff_s": 0.001, "backoff_max_s": 0.01, **cfg}), rng=random.Random(0))


def _sloppy_responder(task):
    """The reference plan, replied the way small models and some servers do: content null next to a
    call, the same id every time or none at all, an over-long id, plus prose and broken JSON once."""
    plan = FAMILIES[task.family].reference_actions(task)
    ids = ["call_0", "call_0", "", "x" * 80, "call_0"]
    turn = {"n": 0}

    def responder(request: ChatRequest) -> ChatReply:
        assert not message_errors(request.messages), message_errors(request.messages)
        n = turn["n"]
        turn["n"] += 1
        if n == 1:
            return ChatReply(content="I will look that up now.", tool_calls=[])
        if n == 2:
            return ChatReply(content=None, tool_calls=[ToolCall(id="call_0", name=plan[0].tool,
                                                                arguments='{"query": ')])
        a = plan[min(len(plan) - 1, max(0, n - 3))]
        return ChatReply(content=None, tool_calls=[ToolCall(id=ids[n % len(ids)], name=a.tool or a.kind,
                                                            arguments=json.dumps(a.arguments))])

    return responder


@pytest.mark.parametrize("family", ["F01", "F02", "F04"])
def test_every_request_of_a_sloppy_episode_keeps_every_servers_rules(family):
    task = FAMILIES[family].make_task(2, 1)
    endpoint = FakeEndpoint(_sloppy_responder(task))

    async def main():
        return await run_model_episode(task, ModelPolicy(model="fake", max_invalid_replies=3), _engine(endpoint),
                                       MemoryJournal(), rollout=0, round_id="r", batch_id="b", created_at=WHEN)

    rec = asyncio.run(main())
    assert len(endpoint.requests) >= 4  # the rules were checked on every request after the first reply
    messages = conversation(task, rec.steps)
    assert message_errors(messages) == []
    assistant = [m for m in messages if m["role"] == "assistant"]
    assert all(isinstance(m["content"], str) for m in assistant)
    ids = [c["id"] for m in assistant for c in m.get("tool_calls", [])]
    assert len(ids) == len(set(ids)) and all(0 < len(i) <= 40 for i in ids)
    tools = [m for m in messages if m["role"] == "tool"]
    by_id = {c["id"]: c["function"]["name"] for m in assistant for c in m.get("tool_calls", [])}
    assert tools and all(by_id[m["tool_call_id"]] == m["name"] for m in tools)
    # what the model got wrong is kept, raw, as invalid steps
    invalid = [s.action for s in rec.steps if s.action.kind == "invalid"]
    assert [(a.tool, a.raw) for a in invalid] == [("", "I will look that up now."), (invalid[1].tool, '{"query": ')]
    assert rec.outcome.termination == "finished"


def test_the_old_shapes_break_the_rules():
    """The checker is not vacuous: a null content, a nameless result, a reused id are each refused."""
    call = {"id": "call_1", "type": "function", "function": {"name": "contacts_search", "arguments": "{}"}}
    base = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    good = base + [{"role": "assistant", "content": "", "tool_calls": [call]},
                   {"role": "tool", "tool_call_id": "call_1", "name": "contacts_search", "content": "{}"}]
    assert message_errors(good) == []
    assert message_errors([*good[:2], {"role": "assistant", "tool_calls": [call]}, good[3]]) == []  # omitted: fine
    null = [*good[:2], {**good[2], "content": None}, good[3]]
    assert [e["loc"][-1] for e in message_errors(null)] == ["content"]
    nameless = [*good[:3], {k: v for k, v in good[3].items() if k != "name"}]
    assert [e["loc"][-1] for e in message_errors(nameless)] == ["name"]
    reused = good + [good[2], good[3]]
    assert any("unique" in e["msg"] for e in message_errors(reused))
    orphan = [*good[:2], {"role": "tool", "tool_call_id": "call_9", "name": "x", "content": "{}"}]
    assert any("earlier" in e["msg"] for e in message_errors(orphan))


@pytest.mark.parametrize("model_id,used,expected", [
    ("call_abc", set(), "call_abc"),
    ("call_abc", {"call_abc"}, "call00003"),
    ("", set(), "call00003"),
    ("y" * 41, set(), "call00003"),
    ("y" * 40, set(), "y" * 40),
    ("call 1/2", set(), "call00003"),
    ("", {"call00003"}, "c00100003"),
])
def test_call_ids_are_short_and_unique_per_conversation(model_id, used, expected):
    got = call_id_for(model_id, 3, used)
    assert got == expected
    if got != model_id:
        assert got.isalnum() and len(got) == 9  # the shape Mistral's templates insist on


@pytest.mark.parametrize("status,message,error_type,refused", [
    (400, "context length exceeded", "", True),
    (422, "bad field", "", True),
    (413, "too large", "", True),
    (429, "slow down", "", False),
    (408, "request timeout", "", False),
    (409, "conflict", "", False),
    (500, "[{'type': 'string_type', 'loc': ('body', 'messages', 2, 'typed-dict', 'content'), "
          "'msg': 'Input should be a valid string', 'input': None}]", "internal_server_error", True),
    (500, "1 validation error for Request", "", True),
    (500, "whatever", "invalid_request_error", True),
    (500, "The server had an error while processing your request.", "server_error", False),
    (500, "CUDA out of memory", "internal_server_error", False),  # near miss: a 500 that is the server's fault
    (502, "Input should be a valid string", "", False),  # only a 500 carries llama.cpp's validation errors
    (503, "service unavailable", "", False),
])
def test_refusal_or_outage_by_status_and_body(status, message, error_type, refused):
    assert is_refusal(status, message, error_type) is refused


def test_a_refusals_message_keeps_what_is_wrong():
    from generators.models.openai_endpoint import short

    noise = "".join(f"{{'type': 'literal_error', 'loc': ('body', 'messages', 2, 'Msg{i}', 'role'), 'msg': "
                    f"\"Input should be 'system'\", 'input': 'assistant'}} " for i in range(8))
    real = ("{'type': 'string_type', 'loc': ('body', 'messages', 2, 'ChatCompletionRequestAssistantMessage', "
            "'content'), 'msg': 'Input should be a valid string', 'input': None}")
    said = short("14 validation errors: " + noise + real)
    assert said.startswith("14 validation errors: ") and "'content'" in said and "literal_error" not in said
    assert len(said) <= 300
    assert short("plain message") == "plain message"


def test_refusals_are_not_retried_counted_once_per_message_and_leave_the_breaker_closed():
    def refuse(_):
        raise RequestRejected("500: Input should be a valid string", 500)

    async def main():
        engine = _engine(FakeEndpoint(refuse), retries=4, breaker_failures=3)
        for _ in range(10):
            with pytest.raises(RequestRejected):
                await engine.complete(ChatRequest(messages=[{"role": "user", "content": "hi"}]))
        return engine

    engine = asyncio.run(main())
    assert engine.stats.attempts == 10  # one attempt per call: nothing retried
    assert not engine.breaker.open and engine.breaker.failures == 0
    assert engine.stats.rejections == {"500: Input should be a valid string": 10}


def test_outages_still_open_the_breaker_after_refusals():
    calls = {"n": 0}

    def refuse_then_fail(_):
        calls["n"] += 1
        if calls["n"] <= 5:
            raise RequestRejected("400: bad request", 400)
        raise TransientFailure("503", "unavailable")

    async def main():
        engine = _engine(FakeEndpoint(refuse_then_fail), retries=1, breaker_failures=4)
        outcomes = []
        for _ in range(8):
            try:
                await engine.complete(ChatRequest(messages=[{"role": "user", "content": "hi"}]))
            except Exception as exc:  # noqa: BLE001 - the kinds are what is checked
                outcomes.append(type(exc).__name__)
        return outcomes

    outcomes = asyncio.run(main())
    assert outcomes[:5] == ["RequestRejected"] * 5
    assert "EndpointDown" in outcomes[5:]


def old_shapes(messages):
    """The shapes the planner sent before: content null beside a call, tool results without a name."""
    out = []
    for m in messages:
        m = dict(m)
        if m["role"] == "assistant" and m.get("tool_calls") and not m.get("content"):
            m["content"] = None
        if m["role"] == "tool":
            m.pop("name", None)
        out.append(m)
    return out


class OldShapes(OpenAIEndpoint):
    async def complete(self, request):
        request = ChatRequest(**{**request.__dict__, "messages": old_shapes(request.messages)})
        return await super().complete(request)


@pytest.mark.parametrize("old", [False, True], ids=["shapes-now", "shapes-before"])
def test_against_a_strict_server_old_shapes_are_refused_per_episode_not_as_an_outage(old):
    tasks = [FAMILIES[f].make_task(s, 1) for f in ("F01", "F03") for s in range(3)]
    with serve_in_thread(FaultConfig(strict=True)) as server:
        async def main():
            cls = OldShapes if old else OpenAIEndpoint
            endpoint = cls(base_url=server.base_url, api_key="none", model="flywheel-test")
            engine = Engine(endpoint, EngineConfig(concurrency=4, retries=3, backoff_s=0.001, breaker_failures=3))
            try:
                recs = await run_model_episodes([(t, 0) for t in tasks], ModelPolicy(model="flywheel-test"), engine,
                                                MemoryJournal(), round_id="r", batch_id="b", created_at=WHEN)
            finally:
                await engine.close()
            return recs, engine.stats

        recs, stats = asyncio.run(main())
        refused = server.stats()["faults"].get("refused", 0)
    terminations = {r.outcome.termination for r in recs}
    if not old:
        assert refused == 0 and not stats.rejections
        assert terminations <= {"finished", "budget_exhausted", "invalid_replies"}
        return
    # every episode was refused at its second request, once, and the round was not stopped as an outage
    assert terminations == {"request_rejected"} and refused == len(tasks)
    assert stats.attempts == 2 * len(tasks) and not stats.failures
    assert len(stats.rejections) == 1 and "Input should be a valid string" in next(iter(stats.rejections))
    for rec in recs:
        assert len(rec.steps) == 1
        failure = rec.outcome.failure
        if failure is None:  # one write already met the task (e.g. F01's set_timer): a success, nothing to blame
            assert rec.outcome.success
            continue
        assert failure.side == "harness" and failure.type == "request_rejected"
        assert failure.detail.startswith("500: ") and "Input should be a valid string" in failure.detail


def test_llama_server_script_has_help_and_refuses_bad_input_in_one_line(tmp_path):
    import subprocess
    from pathlib import Path

    script = Path(__file__).resolve().parents[1] / "scripts" / "llama-server.sh"
    ok = subprocess.run(["bash", str(script), "--help"], capture_output=True, text=True)
    assert ok.returncode == 0 and "install" in ok.stdout and "serve" in ok.stdout
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "FLYWHEEL_LLAMA_VENV": str(tmp_path / "none")}
    for args, code, said in ((["bogus"], 2, "unknown command"), (["serve"], 1, "not installed")):
        bad = subprocess.run(["bash", str(script), *args], capture_output=True, text=True, env=env)
        lines = [line for line in bad.stderr.splitlines() if line.strip()]
        assert bad.returncode == code and len(lines) == 1 and said in lines[0], bad.stderr
