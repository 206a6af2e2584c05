"""Adaptive concurrency against servers that work on 1, 4 and 32 requests at once.

Our local OpenAI-compatible server (in its own process) is given a number of slots: it works
on that many requests at once and queues the rest, as llama.cpp's server does (one per
slot) and vLLM does past its batch. Each reply takes a fixed time plus a time per completion
token. For each server we time the same calls (conversations of several task families) at
fixed concurrency levels and with the engine's defaults (adaptive, ceiling 64, nothing set),
and print calls per second, the ratio of the adaptive default to the best fixed level
(target >= 0.9 for each server), where the limit went and how many calls failed.

    python bench/bench_adaptive.py           # the full run
    python bench/bench_adaptive.py --quick   # a smoke run (tests run it so it cannot rot)
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from generators.models import ChatRequest, Engine, EngineConfig, OpenAIEndpoint  # noqa: E402
from generators.phone.families import FAMILIES  # noqa: E402
from generators.policies.model_chat import conversation, tool_schemas  # noqa: E402
from tests.modelserver import FaultConfig, serve_in_process  # noqa: E402

MODEL = "flywheel-test"
CEILING = EngineConfig().concurrency  # the default ceiling (openai.concurrency)


def requests() -> list[ChatRequest]:
    """First planner requests of several families: prompts and replies of different lengths."""
    out = []
    for family in ("F01", "F02", "F03", "F06", "F10", "F12"):
        task = FAMILIES[family].make_task(1, 1)
        out.append(ChatRequest(messages=conversation(task, []), tools=tool_schemas(task), tool_choice="auto"))
    return out


async def run_calls(base_url: str, config: EngineConfig, calls: int) -> tuple[float, Engine]:
    """Calls per second of ``calls`` calls sent at once through one engine (they queue in it)."""
    engine = Engine(OpenAIEndpoint(base_url=base_url, api_key="bench", model=MODEL, timeout_s=config.timeout_s + 5),
                    config)
    pool = requests()
    start = time.perf_counter()
    await asyncio.gather(*(engine.complete(pool[i % len(pool)]) for i in range(calls)))
    wall = time.perf_counter() - start
    await engine.close()
    return calls / wall, engine


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a small smoke run")
    parser.add_argument("--slots", default="1,4,32", help="comma-separated server slot counts")
    args = parser.parse_args()
    # replies of ~120 ms (~60 ms quick): slow enough that the client's own CPU is never what limits a level
    latency_ms, token_ms = (30.0, 1.0) if args.quick else (60.0, 2.0)
    print(f"adaptive concurrency (default: ceiling {CEILING}, nothing set) vs fixed levels; server: "
          f"{latency_ms:g} ms + {token_ms:g} ms per completion token a reply, N slots, the rest queued")
    print(f"{'slots':>5} {'calls':>6} {'fixed level: calls/s':<46} {'adaptive/s':>10} {'ratio':>6} "
          f"{'limit end/peak':>14} {'failed':>6}")
    worst = float("inf")
    for slots in (int(s) for s in args.slots.split(",")):
        # one call at a time is a level worth trying only against a server of a few slots
        levels = sorted({max(1, slots // 2), slots, 2 * slots, CEILING} | ({1} if slots <= 4 else set()))
        # about sixty round trips of the server's slots (a round's worth: the default starts at one call and
        # ramps up, as it does at a round's start); ten in --quick
        calls = (10 if args.quick else 60) * slots + (40 if args.quick else 100)
        fixed_cfg = dict(timeout_s=600.0, adaptive=False)
        with serve_in_process(FaultConfig(latency_ms=latency_ms, token_ms=token_ms, slots=slots)) as server:
            asyncio.run(run_calls(server.base_url, EngineConfig(concurrency=slots, **fixed_cfg), 2 * slots))  # warm
            fixed: dict[int, float] = {}
            adaptive: list[tuple[float, Engine]] = []
            for _ in range(1 if args.quick else 2):  # alternate, keep each side's best: a shared, noisy host
                for level in levels:
                    rate, _ = asyncio.run(run_calls(server.base_url, EngineConfig(concurrency=level, **fixed_cfg),
                                                    calls))
                    fixed[level] = max(fixed.get(level, 0.0), rate)
                adaptive.append(asyncio.run(run_calls(server.base_url, EngineConfig(), calls)))
        rate, engine = max(adaptive, key=lambda r: r[0])
        best = max(fixed.values())
        ratio = rate / best
        worst = min(worst, ratio)
        shown = " ".join(f"{lvl}:{r:.1f}" for lvl, r in fixed.items())
        failed = sum(engine.stats.failures.values())
        print(f"{slots:>5} {calls:>6} {shown:<46} {rate:>10.1f} {ratio:>6.2f} "
              f"{engine.slots.limit:>6}/{engine.slots.stats.peak:<7} {failed:>6}")
    print(f"worst ratio {worst:.2f} (target >= 0.90)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
