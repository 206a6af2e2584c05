"""A scripted round through the real flow: wall time with round.workers = 2 against 1.

    python bench/bench_round.py              # 10,000 episodes (target: ratio <= 0.6)
    python bench/bench_round.py --quick      # 400 episodes, a smoke run

Each configuration runs a fresh round in its own data directory, with the same seed,
on the same Prefect server (set PREFECT_API_URL, or a temporary one is started and
warmed up first so its start-up is not timed). Both rounds must hold the same episodes.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=10_000)
    parser.add_argument("--quick", action="store_true", help="400 episodes")
    args = parser.parse_args()
    episodes = 400 if args.quick else args.episodes
    root = Path(tempfile.mkdtemp(prefix="bench-round-"))

    from flows.prefect_env import configure_prefect

    configure_prefect(root / "home")
    from flows.round import round_flow
    from warehouse.settings import load_settings
    from warehouse.store import Store

    def settings(name: str, n: int, workers: int):
        # processes asked for by name: the automatic choice collects a small round in its own process
        runner = "processes" if workers > 1 else "auto"
        return load_settings(None, data_dir=root / name, round={"episodes": n, "workers": workers, "seed": 3,
                                                                 "shard_size": 100, "adaptive": False,
                                                                 "runner": runner})

    round_flow(settings("warmup", 10, 1), show_progress=False)  # the Prefect server's start is not timed
    rows, ids = [], []
    for workers in (1, 2):
        t0 = time.perf_counter()
        summary = round_flow(settings(f"w{workers}", episodes, workers), show_progress=False)
        rows.append((workers, summary["runner"], summary["episodes"], time.perf_counter() - t0))
        ids.append(sorted(r[0] for r in Store(root / f"w{workers}").duck().execute(
            "SELECT episode_id FROM episodes").fetchall()))
    assert ids[0] == ids[1], "workers changed the episodes"
    base = rows[0][3]
    print(f"scripted round of {episodes} episodes on {os.cpu_count()} cores")
    print(f"{'workers':>7} {'runner':>10} {'episodes':>8} {'seconds':>8} {'eps/s':>8} {'ratio':>6}")
    for workers, runner, n, seconds in rows:
        print(f"{workers:>7} {runner:>10} {n:>8} {seconds:>8.1f} {n / seconds:>8.1f} {seconds / base:>6.2f}")
    print(f"ratio workers=2 / workers=1: {rows[1][3] / base:.2f} (target <= 0.6)")


if __name__ == "__main__":
    main()
