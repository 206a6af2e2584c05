"""Review app speed: time to first render of the queue, of a 60-step episode and of an episode
whose instruction is a 200 kB message, for a small warehouse and a large one, side by side
(targets at a million episodes: queue < 0.5 s, episode < 1 s, the 200 kB one too: it shows the
text's start; below a million: queue < 1 s, episode < 1.5 s).

    python bench/bench_review.py            # 100 vs 1,000,000 episodes
    python bench/bench_review.py --quick    # 100 vs 2,000 (a smoke run for the tests)
    python bench/bench_review.py --sizes 100,100000

A render is one full run of the Streamlit script under AppTest (the server side of a
page load: settings, queries, every element), for a signed-in reviewer, measured on a
fresh session after one warm-up run. Streamlit's scan of the installed packages for components,
which a server makes once when it starts, is made once here too. Episodes are synthetic copies of real records
(one real scripted episode per template, with fresh ids), written as real shards.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from generators.collect import run_episode  # noqa: E402
from generators.phone.families import FAMILIES  # noqa: E402
from generators.policies import ScriptedPolicy  # noqa: E402
from review_app import accounts  # noqa: E402
from review_app.episode import step_position  # noqa: E402
from warehouse import review_tables, state  # noqa: E402
from warehouse.contract import CurationMark  # noqa: E402
from warehouse.schemas import TABLES, to_row  # noqa: E402
from warehouse.shards import ShardFile, write_arrow_shard  # noqa: E402
from warehouse.store import Store  # noqa: E402

APP = str(ROOT / "review_app" / "app.py")
SHARD_EPISODES = 10_000
STEPS_PER_EPISODE = 6
LONG_STEPS = 60
LONG_ID = "e-long-episode-60"
HUGE_ID = "e-00000001"  # its instruction is a 200 kB message
HUGE_TEXT = "A long pasted message, line after line: ünïcode, `code`, **stars** <b>tags</b>.\n" * 2_500


def _templates() -> dict[str, dict]:
    task = FAMILIES["F01"].make_task(7)
    rec = run_episode(task, ScriptedPolicy(seed=1), rollout=0, round_id="r0001", batch_id="b", created_at=datetime.now(UTC))
    mark = CurationMark(episode_id="x", round_id="r0001", check="verified", mark="verified", passed=True)
    return {
        "tasks": to_row(TABLES["tasks"], task),
        "episodes": to_row(TABLES["episodes"], rec.episode),
        "steps": to_row(TABLES["steps"], rec.steps[0]),
        "outcomes": to_row(TABLES["outcomes"], rec.outcome),
        "marks": to_row(TABLES["marks"], mark),
    }


def _table(name: str, template: dict, n: int, overrides: dict[str, list]) -> pa.Table:
    schema = TABLES[name].schema
    cols = [pa.array(overrides[f.name], f.type) if f.name in overrides else pa.array([template[f.name]] * n, f.type) for f in schema]
    return pa.Table.from_arrays(cols, schema=schema)


def build(data_dir: Path, episodes: int, state_url: str | None = None) -> Store:
    """A round of ``episodes`` synthetic episodes (one of them 60 steps long) with marks; the state
    database is SQLite in ``data_dir`` unless ``state_url`` names another."""
    store = Store(data_dir, state_url)
    with store.session() as s:
        state.open_round(session=s, requested_episodes=episodes, seed=0, plan={})
    tpl = _templates()
    fams = ["F01", "F02", "F03", "F04", "F05"]
    caps = [["tool_use", "crud"], ["tool_use", "query"], ["ordering"], ["disambiguation"], ["aggregation"]]
    n_tasks = max(1, episodes // 4)
    shards: list[state.Shard] = []
    shards.append(write_arrow_shard(data_dir, ShardFile("tasks", "r0001", "batch-0000"), _table("tasks", tpl["tasks"], n_tasks, {
        "task_id": [f"t{i}" for i in range(n_tasks)],
        "family": [fams[i % 5] for i in range(n_tasks)],
        "capabilities": [caps[i % 5] for i in range(n_tasks)],
    })))
    for start in range(0, episodes, SHARD_EPISODES):
        idx = range(start, min(episodes, start + SHARD_EPISODES))
        eids = [LONG_ID if i == 0 else f"e-{i:08d}" for i in idx]
        n = len(eids)
        lengths = [LONG_STEPS if e == LONG_ID else STEPS_PER_EPISODE for e in eids]
        key = f"s{start // SHARD_EPISODES:05d}"
        ep = _table("episodes", tpl["episodes"], n, {
            "episode_id": eids, "task_id": [f"t{(i // 4) % n_tasks}" for i in idx],
            "family": [fams[((i // 4) % n_tasks) % 5] for i in idx],
            "instruction": [HUGE_TEXT if e == HUGE_ID else f"Delete the contact number {i} from my phone."
                            for i, e in zip(idx, eids, strict=True)],
        })
        out = _table("outcomes", tpl["outcomes"], n, {
            "episode_id": eids, "success": [i % 3 != 0 for i in idx], "steps": lengths,
            "progress": [1.0 if i % 3 else 0.5 for i in idx],
        })
        step_eids = [e for e, k in zip(eids, lengths, strict=True) for _ in range(k)]
        steps = _table("steps", tpl["steps"], len(step_eids), {
            "episode_id": step_eids, "index": [j for k in lengths for j in range(k)],
        })
        marks = _table("marks", tpl["marks"], n, {
            "episode_id": eids, "mark": ["verified" if i % 3 else "not_verified" for i in idx],
            "passed": [i % 3 != 0 for i in idx],
        })
        for name, table in (("episodes", ep), ("outcomes", out), ("steps", steps), ("marks", marks)):
            shards.append(write_arrow_shard(data_dir, ShardFile(name, "r0001", key), table))
    with store.session() as s:
        state.record_shards(session=s, shards=shards)
    return store


def first_render(data_dir: Path, page: str, repeats: int) -> float:
    """Median seconds of the first script run of a fresh session on ``page``."""
    import logging

    from streamlit.testing.v1 import AppTest

    # AppTest outside a server logs a harmless "missing ScriptRunContext" per element; keep the output to the numbers.
    # (a filter, because AppTest resets Streamlit's log levels on every run).
    logging.getLogger("streamlit.runtime.scriptrunner_utils.script_run_context").addFilter(
        lambda record: "missing ScriptRunContext" not in record.getMessage()
    )

    os.environ["FLYWHEEL_DATA_DIR"] = str(data_dir)  # the app's settings come from the environment, as in a deployment
    store = Store(data_dir)
    with store.session() as s:  # the session's account must exist: the app reads it again on every run
        known = review_tables.get_reviewer(session=s, name="bench") is not None
    user = accounts.User("bench", "reviewer") if known else accounts.add_reviewer(store, "bench", "reviewer", "bench-pass")
    times = []
    components = None
    for i in range(repeats + 1):
        at = AppTest.from_file(APP, default_timeout=120)
        # A server scans the installed packages for Streamlit components once, at start; AppTest does it for
        # every new AppTest (~0.3 s here, whatever the warehouse). Share the first scan, as a server does.
        at._bidi_component_manager = components
        at.session_state["user"] = user
        at.session_state["signed_in_at"] = datetime.now(UTC)
        if page in ("episode", "huge"):
            at.session_state["episode_id"] = LONG_ID if page == "episode" else HUGE_ID
            at.session_state["episode_round"] = "r0001"
            at.session_state["nav_to"] = "Episode"
        t0 = time.perf_counter()
        at.run()
        elapsed = time.perf_counter() - t0
        components = at._bidi_component_manager
        if at.exception:
            raise RuntimeError(f"{page} page failed: {at.exception[0].message}")
        if page == "episode" and step_position(0, LONG_STEPS) not in " ".join(c.value for c in at.caption):
            raise RuntimeError("the 60-step episode did not render")
        if page == "huge" and not any(t.label.startswith("Show all") for t in at.toggle):
            raise RuntimeError("the episode with a 200 kB message did not render its start and a 'Show all'")
        if i:  # the first run warms imports and caches, as a running server already is
            times.append(elapsed)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a small smoke run (100 vs 2,000 episodes)")
    parser.add_argument("--repeats", type=int, default=3, help="timed renders per page and size")
    parser.add_argument("--sizes", default="100,1000000", help="the small and the large warehouse, in episodes")
    args = parser.parse_args(argv)
    sizes = [100, 2_000] if args.quick else [int(n) for n in args.sizes.split(",")]
    repeats = 1 if args.quick else args.repeats
    with tempfile.TemporaryDirectory(prefix="bench-review-") as tmp:
        results = {}
        for n in sizes:
            t0 = time.perf_counter()
            build(Path(tmp) / f"d{n}", n)
            built = time.perf_counter() - t0
            q = first_render(Path(tmp) / f"d{n}", "queue", repeats)
            e = first_render(Path(tmp) / f"d{n}", "episode", repeats)
            h = first_render(Path(tmp) / f"d{n}", "huge", repeats)
            results[n] = (q, e, h)
            print(f"built {n:>7,} episodes in {built:5.1f} s", flush=True)
    small, big = sizes
    (qs, es, hs), (qb, eb, hb) = results[small], results[big]
    queue_target, episode_target = (0.5, 1.0) if big >= 1_000_000 else (1.0, 1.5)
    print(f"{'first render':<22}{small:>10,}{big:>12,}{'ratio':>8}{'target':>9}")
    for name, s, b, target in (("queue", qs, qb, queue_target), ("episode (60 steps)", es, eb, episode_target),
                               ("episode (200 kB text)", hs, hb, episode_target)):
        print(f"{name:<22}{s:>9.3f}s{b:>11.3f}s{b / s:>8.2f}{'< ' + str(target) + 's':>9}  {'ok' if b < target else 'SLOW'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
