"""A model round through the real flow against a plain asyncio loop, calls per second side by side.

    python bench/bench_model_round.py            # 600 episodes at concurrency 128 (target: ratio >= 1.5)
    python bench/bench_model_round.py --quick    # 40 episodes, a smoke run

The local OpenAI-compatible test server (its own process, 100 ms latency; 20 in --quick)
answers both. The round is `flywheel run --policy openai` from this process: plan, tasks,
shards in parallel (`round.workers`; processes from 500 episodes, threads below, the rate
limits shared), the planner's tool loop in the phone, staging, curation. Its calls per
second are counted at the server, from its first request to its last (so Prefect's start
and curation are not in the figure), with the CPU per call of this process and its
workers over the same seconds. The plain loop sends the same number of calls, one fixed F01 request, at the
same fixed concurrency through the raw ``openai`` client with a semaphore (the round's adaptive
concurrency is off here, as ``openai.adaptive_concurrency = false`` sets it: bench_adaptive measures that): what a careful person
writes by hand, and CPU-bound near 200 calls per second on one core here. The machine is
shared, so the ratio, not the seconds.

Both run ``--repeat`` times (default 3), alternately, each round on a fresh data directory and a
fresh server: on this shared machine the same code's ratio moved from 1.1 to 1.7 between single
runs an hour apart (both sides are wall-clock rates of processes on two cores the host also
gives to others). The ratio is each side's best, as ``timeit`` takes the best of its repeats; every
pair is printed beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_engine import MODEL, _request, measure, plain_loop  # noqa: E402


def server_rate(root: str) -> tuple[int, float]:
    """(chat requests the server answered, requests per second from its first to its latest),
    from the server's own clock."""
    with urllib.request.urlopen(f"{root}/stats", timeout=10) as resp:
        stats = json.loads(resp.read())
    n, span = stats["requests"], (stats["last_at"] or 0) - (stats["first_at"] or 0)
    assert n > 1 and span > 0, "the round sent too few requests to time"
    return n, (n - 1) / span


def server_requests(root: str) -> int:
    with urllib.request.urlopen(f"{root}/stats", timeout=10) as resp:
        return json.loads(resp.read())["requests"]


def round_cpu_seconds() -> float:
    """CPU seconds of this process and of the processes it started (the round's workers, Prefect's
    server), the model server's excepted; a process that ended is not counted."""
    import psutil

    me = psutil.Process()
    total = sum(me.cpu_times()[:2])
    for child in me.children(recursive=True):
        try:
            if "tests.modelserver" not in " ".join(child.cmdline()):
                total += sum(child.cpu_times()[:2])
        except psutil.Error:  # ended meanwhile
            continue
    return total


class CpuWhileCalling:
    """The round's CPU per model call while it calls the model (the phone, the policy, the journal,
    staging and Prefect's work of those seconds, in this process and its workers; not the server's):
    every ``interval`` seconds a thread reads the server's request count and :func:`round_cpu_seconds`."""

    def __init__(self, root: str, interval: float = 0.2):
        self.root, self.interval = root, interval
        self.samples: list[tuple[int, float]] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self.stop.wait(self.interval):
            self.samples.append((server_requests(self.root), round_cpu_seconds()))

    def __enter__(self) -> CpuWhileCalling:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join()

    def ms_per_call(self) -> float | None:
        """CPU milliseconds per call between the first sample that saw a call and the first that saw
        the last one; None when the round was too short to sample."""
        calling = [s for s in self.samples if s[0] > 0]
        if not calling:
            return None
        first, last = calling[0], next(s for s in calling if s[0] == calling[-1][0])
        return (last[1] - first[1]) * 1000 / (last[0] - first[0]) if last[0] > first[0] else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=600)
    parser.add_argument("--concurrency", type=int, default=128)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--runner", default="auto", choices=["auto", "threads", "processes"],
                        help="round.runner (auto: processes from 500 episodes, else threads)")
    parser.add_argument("--quick", action="store_true", help="40 episodes, 20 ms latency, two repeats")
    parser.add_argument("--repeat", type=int, default=3, help="rounds and plain loops, alternately; the best of each counts")
    args = parser.parse_args()
    repeat = 2 if args.quick else max(1, args.repeat)
    episodes = 40 if args.quick else args.episodes
    latency = 20.0 if args.quick else 100.0
    root = Path(tempfile.mkdtemp(prefix="bench-model-round-"))

    from flows.prefect_env import configure_prefect

    configure_prefect(root / "home")
    from flows.round import round_flow
    from tests.conftest import single_session_families
    from tests.modelserver import FaultConfig, serve_in_process
    from warehouse.settings import load_settings

    def settings(base_url: str, name: str, n: int, policy: str = "openai"):
        return load_settings(None, data_dir=root / name, policy=policy,
                             openai={"base_url": base_url, "model": MODEL,
                                     "concurrency": args.concurrency, "timeout_s": 300,
                                     # the same fixed concurrency as the plain loop: this bench weighs the round's
                                     # machinery; how the adaptive limit finds a server's is bench_adaptive's
                                     "adaptive_concurrency": False},
                             round={"episodes": n, "workers": args.workers, "seed": 5, "adaptive": False,
                                    "runner": args.runner,
                                    "shard_size": max(10, n // (2 * args.workers)),
                                    "families": json.loads(single_session_families())})

    runs = []  # per repeat: (round calls/s, its CPU ms per call, plain calls/s, its CPU ms per call, calls, wall, summary)
    for i in range(repeat):
        with serve_in_process(FaultConfig(latency_ms=latency)) as server:
            if i == 0:  # the Prefect server's start is not timed (and the model server sees the round's requests only)
                round_flow(settings(server.base_url, "warmup", 4, policy="scripted"), show_progress=False)
            t0 = time.perf_counter()
            with CpuWhileCalling(server.base_url.removesuffix("/v1")) as cpu:
                summary = round_flow(settings(server.base_url, f"round-{i}", episodes), show_progress=False)
            wall = time.perf_counter() - t0
            calls, round_rate = server_rate(server.base_url.removesuffix("/v1"))
            plain_rate, plain_cpu = measure(plain_loop, server.base_url, _request(), args.concurrency, calls)
        runs.append((round_rate, cpu.ms_per_call(), plain_rate, plain_cpu, calls, wall, summary))
    best_round = max(runs, key=lambda r: r[0])
    best_plain = max(runs, key=lambda r: r[2])
    summary, calls, wall = best_round[6], best_round[4], best_round[5]
    print(f"model round of {summary['episodes']} episodes, {calls} model calls, concurrency {args.concurrency}, "
          f"{summary['workers']} workers ({summary['runner']}), server latency {latency:g} ms; "
          f"the whole round {wall:.1f} s")
    print(f"{'':<34} {'calls/s':>8}   (best of {repeat})")
    print(f"{'plain asyncio loop (raw openai)':<34} {best_plain[2]:>8.1f}   ({best_plain[3]:.2f} ms CPU per call)")
    round_cpu = best_round[1]
    print(f"{'the round (first to last call)':<34} {best_round[0]:>8.1f}   "
          f"({'n/a' if round_cpu is None else f'{round_cpu:.2f}'} ms CPU per call, the round's processes)")
    print("each repeat, round / plain loop: " + ", ".join(f"{r[0]:.1f}/{r[2]:.1f}" for r in runs))
    print(f"ratio round / plain loop: {best_round[0] / best_plain[2]:.2f} (target >= 1.5)")


if __name__ == "__main__":
    main()
