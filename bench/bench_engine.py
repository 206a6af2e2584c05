"""The collection engine vs a plain asyncio loop over the raw ``openai`` client, side by side.

Both send the same chat completion (a real task's conversation and tool schemas) to our
local OpenAI-compatible server (in its own process, 100 ms latency) at concurrency 8,
32 and 128, and we print calls per second, the ratio engine / plain (target >= 0.9) and
the client's CPU time per call. The engine adds the limits, timeouts, retries and breaker;
this shows what they cost.

With ``--llama`` it adds rows for llama.cpp's real server with the shipped small model
(scripts/llama-server.sh install), where the server, not the client, is the bottleneck:
the same conversation at temperature 0 (so every reply is the same; the server ignores
max_tokens when the model may choose a tool), at concurrency 1 and 2.

    python bench/bench_engine.py            # the full run
    python bench/bench_engine.py --quick    # a smoke run (tests run it so it cannot rot)
    python bench/bench_engine.py --llama    # plus the real llama.cpp server
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import openai  # noqa: E402

from generators.models import ChatRequest, Engine, EngineConfig, OpenAIEndpoint  # noqa: E402
from generators.phone.families import FAMILIES  # noqa: E402
from generators.policies.model_chat import conversation, tool_schemas  # noqa: E402
from tests.modelserver import FaultConfig, serve_in_process  # noqa: E402
from tests.modelserver.llama import MODEL_ALIAS, LlamaServer, default_venv, missing  # noqa: E402

MODEL = "flywheel-test"


def _request() -> ChatRequest:
    task = FAMILIES["F01"].make_task(1, 1)
    return ChatRequest(messages=conversation(task, []), tools=tool_schemas(task), tool_choice="auto")


async def plain_loop(base_url: str, request: ChatRequest, concurrency: int, calls: int, model: str = MODEL) -> None:
    """What a careful person writes by hand: a semaphore around the raw client."""
    client = openai.AsyncOpenAI(base_url=base_url, api_key="bench", max_retries=0, timeout=300)
    gate = asyncio.Semaphore(concurrency)
    extra = {k: v for k, v in {"max_tokens": request.max_tokens, "temperature": request.temperature}.items()
             if v is not None}  # what the engine's endpoint sends too, so both ask for the same reply

    async def one() -> None:
        async with gate:
            await client.chat.completions.create(model=model, messages=request.messages, tools=request.tools,
                                                 tool_choice=request.tool_choice, **extra)

    await asyncio.gather(*(one() for _ in range(calls)))
    await client.close()


async def engine_loop(base_url: str, request: ChatRequest, concurrency: int, calls: int, model: str = MODEL) -> None:
    # a fixed level, as the plain loop holds: this compares what a call costs, not how the limit adapts
    # (bench_adaptive.py measures that)
    engine = Engine(OpenAIEndpoint(base_url=base_url, api_key="bench", model=model, timeout_s=305),
                    EngineConfig(concurrency=concurrency, adaptive=False, timeout_s=300, retries=4, rpm=10_000_000,
                                 tpm=10_000_000_000))
    await asyncio.gather(*(engine.complete(request) for _ in range(calls)))
    await engine.close()


def measure(fn, base_url: str, request: ChatRequest, concurrency: int, calls: int,
            model: str = MODEL) -> tuple[float, float]:
    """(calls per second, CPU milliseconds per call) of one run in a fresh event loop."""
    cpu, wall = time.process_time(), time.perf_counter()
    asyncio.run(fn(base_url, request, concurrency, calls, model))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return calls / wall, cpu * 1000 / calls


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a small smoke run")
    parser.add_argument("--latency-ms", type=float, default=None, help="server latency (default 100, quick 20)")
    parser.add_argument("--levels", default=None, help="comma-separated concurrency levels (default 8,32,128)")
    parser.add_argument("--llama", action="store_true",
                        help="add rows for llama.cpp's server with the shipped small model (scripts/llama-server.sh)")
    args = parser.parse_args()
    levels = (8, 32) if args.quick else (8, 32, 128)
    if args.levels:
        levels = tuple(int(x) for x in args.levels.split(","))
    latency = args.latency_ms if args.latency_ms is not None else (20.0 if args.quick else 100.0)
    request = _request()
    print(f"engine vs plain asyncio loop over the openai client; server latency {latency:g} ms")
    print(f"{'concurrency':>11} {'calls':>6} {'plain/s':>9} {'engine/s':>9} {'ratio':>6} "
          f"{'plain cpu ms/call':>18} {'engine cpu ms/call':>19}")
    worst = float("inf")
    with serve_in_process(FaultConfig(latency_ms=latency)) as server:
        asyncio.run(plain_loop(server.base_url, request, 8, 16))  # warm the server up
        for level in levels:
            calls = level * 3 if args.quick else max(240, level * 8)
            # alternate the two and keep each side's best run, so neither gets the warmer server or
            # the quieter moment of a shared machine
            runs = {"plain": [], "engine": []}
            for _ in range(2 if args.quick else 3):
                runs["plain"].append(measure(plain_loop, server.base_url, request, level, calls))
                runs["engine"].append(measure(engine_loop, server.base_url, request, level, calls))
            plain, engine = max(runs["plain"]), max(runs["engine"])
            ratio = engine[0] / plain[0]
            worst = min(worst, ratio)
            print(f"{level:>11} {calls:>6} {plain[0]:>9.1f} {engine[0]:>9.1f} {ratio:>6.2f} "
                  f"{plain[1]:>18.2f} {engine[1]:>19.2f}")
    print(f"worst ratio {worst:.2f} (target >= 0.90)")
    if args.llama:
        return llama_rows(request, quick=args.quick)
    return 0


def llama_rows(request: ChatRequest, *, quick: bool) -> int:
    """The same comparison against llama.cpp's real server, where the model's own time dominates."""
    venv = Path(os.environ.get("FLYWHEEL_LLAMA_VENV") or default_venv())
    why = missing(venv)
    if why:
        print(f"error: {why}", file=sys.stderr)
        return 1
    small = ChatRequest(messages=request.messages, tools=request.tools, tool_choice=request.tool_choice,
                        max_tokens=16, temperature=0.0)
    print(f"\nllama.cpp server ({MODEL_ALIAS}, chatml-function-calling), the same reply each call (temperature 0)")
    print(f"{'concurrency':>11} {'calls':>6} {'plain/s':>9} {'engine/s':>9} {'ratio':>6} "
          f"{'plain cpu ms/call':>18} {'engine cpu ms/call':>19}")
    with LlamaServer(venv) as server:
        asyncio.run(plain_loop(server.base_url, small, 1, 2, MODEL_ALIAS))  # load the model, fill the prompt cache
        for level in (1, 2):
            calls = 4 if quick else 12
            runs = {"plain": [], "engine": []}
            for _ in range(1 if quick else 2):
                runs["plain"].append(measure(plain_loop, server.base_url, small, level, calls, MODEL_ALIAS))
                runs["engine"].append(measure(engine_loop, server.base_url, small, level, calls, MODEL_ALIAS))
            plain, engine = max(runs["plain"]), max(runs["engine"])
            print(f"{level:>11} {calls:>6} {plain[0]:>9.2f} {engine[0]:>9.2f} {engine[0] / plain[0]:>6.2f} "
                  f"{plain[1]:>18.2f} {engine[1]:>19.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
