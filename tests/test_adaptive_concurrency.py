"""Adaptive concurrency: the engine sends as many calls at once as the server keeps up with.

The limit's arithmetic against a model of a server with N slots (pure), then the engine against
our test server with a queue of its own: at the defaults, a one-slot server that answers in
time is never timed out by calls queued behind each other (a fixed 64 is, the same calls), a
server's /props seeds the limit, and a server that dies after it answered is named as such,
with the last telling line of its log.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from generators.models import ChatReply, ChatRequest, Engine, EngineConfig, FakeEndpoint, OpenAIEndpoint
from generators.models.adaptive import ConcurrencyLimit
from generators.models.endpoint import TransientFailure
from generators.models.openai_endpoint import last_log_line
from tests.modelserver import FaultConfig, serve_in_process, serve_in_thread
from tests.modelserver.run import free_port

ROOT = Path(__file__).resolve().parents[1]


def settle(limit: ConcurrencyLimit, slots: int, replies: int = 4000, tokens: int = 20) -> list[int]:
    """Drive ``limit`` with the replies of a server of ``slots`` slots (each reply takes 10 ms a token;
    with more in flight than slots, replies wait in line in proportion); the limit after each reply."""
    seen = []
    for _ in range(replies):
        limit.record(limit.generation, 10.0 * (tokens + 1) * max(1.0, limit.limit / slots), tokens)
        seen.append(limit.limit)
    return seen


@pytest.mark.parametrize("slots", [1, 4, 32])
def test_the_limit_settles_where_the_server_keeps_up_without_a_long_queue(slots):
    limit = ConcurrencyLimit(64)
    seen = settle(limit, slots)
    late = seen[len(seen) // 2:]
    # never fewer in flight than the server works on (no lost throughput), never a queue of more than half again
    assert min(late) >= slots and max(late) <= max(2, slots * 3 // 2), (slots, sorted(set(late)))


def round_trips(limit: ConcurrencyLimit, slots: int, trips: int, tokens: int = 20) -> list[int]:
    """Each round trip, as many calls as the limit allows go out and all come back (slower when more are
    in flight than the server has slots); the limit after each round trip."""
    seen = []
    for _ in range(trips):
        in_flight, generation = limit.limit, limit.generation
        for _ in range(in_flight):
            limit.record(generation, 10.0 * (tokens + 1) * max(1.0, in_flight / slots), tokens)
        seen.append(limit.limit)
    return seen


def test_the_limit_starts_small_and_doubles_every_round_trip_while_latency_stays_flat():
    limit = ConcurrencyLimit(64)
    assert limit.limit == 1
    seen = round_trips(limit, slots=10_000, trips=12)
    # the first three replies set the uncongested latency; from there each fast reply adds one
    assert seen[:8] == [1, 1, 2, 4, 8, 16, 32, 64], seen
    assert limit.limit == 64 and limit.stats.peak == 64
    assert settle(ConcurrencyLimit(64), slots=10_000, replies=80)[-1] == 64  # one by one, in any order


@pytest.mark.parametrize("slots", [4, 32])
def test_slow_start_stops_within_one_round_trip_of_the_servers_slots(slots):
    limit = ConcurrencyLimit(64)
    seen = round_trips(limit, slots=slots, trips=30)
    # replies that queued add nothing: the ramp stops near the slots (at most one doubling past them)
    assert max(seen) <= 2 * slots and min(seen[-10:]) >= slots, seen


def test_latency_is_compared_per_completion_token():
    limit = ConcurrencyLimit(64)
    for tokens in (5, 50, 500):  # longer replies take longer: no queue in that
        limit.record(limit.generation, 10.0 * (tokens + 1), tokens)
    assert limit.limit == 2


def test_overload_halves_once_a_wave_and_replies_of_an_older_limit_are_not_evidence():
    limit = ConcurrencyLimit(64, start=32)
    wave = limit.generation
    for _ in range(10):  # ten calls of the same moment time out
        limit.overloaded(wave)
    assert limit.limit == 16 and limit.stats.shrunk_overload == 1
    for _ in range(50):  # slow replies of calls sent under 32 say nothing of 16
        limit.record(wave, 1e6, 1)
    assert limit.limit == 16
    limit.overloaded(limit.generation)
    assert limit.limit == 8 and not limit.slow_start


def test_a_fixed_limit_never_moves_and_the_ceiling_holds():
    fixed = ConcurrencyLimit(8, adaptive=False)
    settle(fixed, slots=1, replies=200)
    fixed.overloaded(fixed.generation)
    assert fixed.limit == 8
    seeded = ConcurrencyLimit(8)
    seeded.seed(32)
    assert seeded.limit == 8  # what the server says never passes openai.concurrency


def test_calls_in_flight_never_pass_the_limit():
    peak = now = 0

    async def reply(_request):
        nonlocal peak, now
        now += 1
        peak = max(peak, now)
        await asyncio.sleep(0.002)
        now -= 1
        return ChatReply(content="ok", tool_calls=[], completion_tokens=3)

    async def main():
        engine = Engine(FakeEndpoint(reply), EngineConfig(concurrency=5))
        await asyncio.gather(*(engine.complete(ChatRequest(messages=[])) for _ in range(300)))
        return engine

    engine = asyncio.run(main())
    assert peak == engine.slots.stats.peak == 5  # grew to the ceiling on a fast server, and not past it


def _calls(base_url: str, config: EngineConfig, n: int) -> Engine:
    async def main():
        engine = Engine(OpenAIEndpoint(base_url=base_url, api_key="t", model="flywheel-test",
                                       timeout_s=config.timeout_s + 5), config)
        request = ChatRequest(messages=[{"role": "user", "content": "Say hello."}])
        try:
            results = await asyncio.gather(*(engine.complete(request) for _ in range(n)), return_exceptions=True)
        finally:
            await engine.close()
        engine.errors = [r for r in results if isinstance(r, Exception)]
        return engine

    return asyncio.run(main())


@pytest.fixture(scope="module")
def one_slot_server():
    # one request at a time, 40 ms each: 60 calls sent at once take 2.4 s in all, in line
    with serve_in_process(FaultConfig(latency_ms=40, slots=1)) as server:
        yield server


def test_at_the_defaults_calls_queued_at_a_one_slot_server_do_not_time_out(one_slot_server):
    engine = _calls(one_slot_server.base_url, EngineConfig(timeout_s=1.0, retries=0), 60)
    assert not engine.errors and not engine.stats.failures
    # a short line at most: slow start adds one a fast reply, and replies that queued are not fast
    # (on a busy host a noisy first latency may let it pass the one slot by a few before a window shows it)
    assert engine.slots.stats.peak <= 6


def test_a_fixed_concurrency_times_out_the_same_calls(one_slot_server):
    # what the defaults did before: every call sent at once, the ones at the back of the server's line
    # waited past their timeout (the guard above would pass for any engine if this did not fail)
    engine = _calls(one_slot_server.base_url, EngineConfig(timeout_s=1.0, retries=0, adaptive=False), 60)
    assert engine.errors and engine.stats.failures["timeout"] > 0


def test_the_servers_own_slot_count_seeds_the_limit():
    with serve_in_thread(FaultConfig(latency_ms=50, slots=6, report_slots=True)) as server:
        engine = _calls(server.base_url, EngineConfig(), 24)
        assert not engine.errors
        assert server.stats()["peak_working"] == 6  # six at once from the first calls (no slow start from one)
    with serve_in_thread(FaultConfig(latency_ms=50, slots=6)) as server:  # no /props: starts at one
        assert asyncio.run(OpenAIEndpoint(base_url=server.base_url, api_key="t",
                                          model="flywheel-test").server_slots()) is None


def test_a_server_that_dies_after_answering_is_named_with_its_logs_telling_line(tmp_path):
    log = tmp_path / "llama.log"
    log.write_text("llama_model_loader: loaded meta data\nINFO: 127.0.0.1 - POST /v1/chat/completions 200\n"
                   "Fatal Python error: Segmentation fault\n\nCurrent thread 0x00007f (most recent call first):\n"
                   '  File "/venv/lib/python3.11/site-packages/llama_cpp/llama.py", line 640 in eval\n')
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "tests.modelserver", "--port", str(port)], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 30
        while not _answers(base_url):
            assert proc.poll() is None and time.monotonic() < deadline, "the test server did not start"
            time.sleep(0.05)  # polling until the port answers

        async def main():
            endpoint = OpenAIEndpoint(base_url=base_url, api_key="t", model="flywheel-test", server_log=log)
            request = ChatRequest(messages=[{"role": "user", "content": "hi"}])
            await endpoint.complete(request)
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            try:
                await endpoint.complete(request)
            except TransientFailure as exc:
                return exc
            finally:
                await endpoint.close()

        failure = asyncio.run(main())
    finally:
        if proc.poll() is None:
            proc.kill()
    assert failure is not None and failure.kind == "connection"
    message = str(failure)
    assert message.startswith(f"the model server at {base_url} stopped answering")
    assert "may have crashed" in message and message.endswith("its log ends: Fatal Python error: Segmentation fault")

    async def never_answered():
        endpoint = OpenAIEndpoint(base_url=base_url, api_key="t", model="flywheel-test", server_log=log)
        try:
            await endpoint.complete(ChatRequest(messages=[{"role": "user", "content": "hi"}]))
        except TransientFailure as exc:
            return str(exc)
        finally:
            await endpoint.close()

    assert asyncio.run(never_answered()).startswith(f"cannot reach {base_url}")  # never answered: not "crashed"


def _answers(base_url: str) -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen(f"{base_url}/models", timeout=2) as resp:
            return resp.status == 200
    except OSError:
        return False


def test_a_logs_telling_line_is_the_error_not_the_stack_after_it(tmp_path):
    log = tmp_path / "x.log"
    assert last_log_line(None) == "" and last_log_line(tmp_path / "none.log") == ""
    log.write_text("started\nserving on 127.0.0.1:8080\n")
    assert last_log_line(log) == "serving on 127.0.0.1:8080"  # nothing telling: the last line
    log.write_text("x" * 20_000 + "\nKilled\n")
    assert last_log_line(log) == "Killed"


def test_the_smoke_test_fails_in_one_line_on_a_server_that_crashes_on_a_real_prompt(tmp_path):
    """The install's smoke test against a server that answers /v1/models and then dies in its first
    decode (what a build for another CPU did): one line naming the crash and how to rebuild, exit 1."""
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "llama_smoke.py"), "--python", sys.executable,
                          "--module", "tests.crashing_llama", "--model", "unused.gguf", "--timeout", "60",
                          "--rebuild-hint", "scripts/llama-server.sh install --rebuild"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 1, out
    assert out.stdout == "" and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert "crashed on a chat completion with tools (killed by SIGSEGV)" in out.stderr
    assert "Fatal Python error: Segmentation fault" in out.stderr
    assert out.stderr.strip().endswith("Rebuild it: scripts/llama-server.sh install --rebuild")
    assert "Traceback" not in out.stderr


def test_the_smoke_test_passes_a_server_that_answers_with_tools(tmp_path):
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "llama_smoke.py"), "--python", sys.executable,
                          "--module", "tests.crashing_llama", "--model", "healthy", "--timeout", "60"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("smoke test passed: a chat completion with tools")


def _script(*args: str, **env: str) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("FLYWHEEL_LLAMA", "CMAKE_ARGS"))}
    return subprocess.run(["bash", str(ROOT / "scripts" / "llama-server.sh"), *args], capture_output=True, text=True,
                          env={**environ, **env}, timeout=60)


def test_the_build_is_portable_by_default_and_its_wheel_is_kept_under_its_flags():
    portable = _script("key")
    assert portable.returncode == 0, portable.stderr
    key, build, flags = portable.stdout.split(" ", 2)
    assert build == "portable:" and "-DGGML_NATIVE=OFF" in flags and "-DGGML_CUDA=OFF" in flags
    if os.uname().machine == "x86_64":
        assert "AVX512" not in flags  # never the build machine's widest instructions
    native = _script("key", FLYWHEEL_LLAMA_BUILD="native")
    assert "-DGGML_NATIVE=ON" in native.stdout and native.stdout.split()[0] != key
    extra = _script("key", CMAKE_ARGS="-DGGML_BLAS=ON")
    assert extra.stdout.split()[0] not in (key, native.stdout.split()[0]) and "-DGGML_BLAS=ON" in extra.stdout
    assert _script("key").stdout.split()[0] == key  # stable
    bad = _script("key", FLYWHEEL_LLAMA_BUILD="fast")
    assert bad.returncode == 1 and "takes portable (the default) or native" in bad.stderr


def test_an_install_with_other_flags_is_not_taken_for_this_one(tmp_path):
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(sys.executable)
    (venv / ".flywheel-build").write_text(_script("key", FLYWHEEL_LLAMA_BUILD="native").stdout.split()[0] + "\n")
    status = _script("status", FLYWHEEL_LLAMA_VENV=str(venv))
    assert status.returncode == 1 and "other build flags than the portable build" in status.stdout
    none = _script("status", FLYWHEEL_LLAMA_VENV=str(tmp_path / "none"))
    assert none.returncode == 1 and "not installed" in none.stdout


def test_the_request_the_smoke_test_sends_is_a_few_hundred_tokens_with_tools():
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import llama_smoke
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    words = len(llama_smoke.SYSTEM.split()) + len(json.dumps(llama_smoke.TOOLS).split())
    assert 250 <= words <= 1200 and len(llama_smoke.TOOLS) == 3
