"""Review under load: 20 reviewers at once over a 100,000-episode warehouse for three minutes;
p95 episode-open latency (target < 2 s) and every decision stored once.

    python bench/bench_review_load.py            # 20 reviewers, 100,000 episodes, 180 s
    python bench/bench_review_load.py --quick    # 3 reviewers, 2,000 episodes, 15 s (a test runs this)
    python bench/bench_review_load.py --state-url postgresql+psycopg://...   # decisions on PostgreSQL

Each reviewer is a process of its own speaking the app's session protocol: what a page run of the
app calls, without the browser. It reads a page of its queue (at a random place, as reviewers
spread over it), opens an episode (load it, build its step table and its conversation: what the
episode page needs before it draws), decides, and sends the decision twice (a double click);
then the next. Decisions go to one state database (SQLite by default, or --state-url), opens read
the shards.
At the end: the rows in the state database are exactly the distinct decisions the reviewers were
told were saved, and each double click was told of the same row.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sqlmodel import select  # noqa: E402

from bench.bench_review import build  # noqa: E402
from review_app import accounts  # noqa: E402
from warehouse import review_tables as rt  # noqa: E402
from warehouse import state  # noqa: E402
from warehouse.store import Store  # noqa: E402

PASSWORD = "bench-password"
VERDICTS = [("approve", ""), ("reject", "wrong_result"), ("needs_fix", "")]


def reviewer(data_dir: Path, state_url: str | None, name: str, seconds: float, seed: int, start, results) -> None:
    """One reviewer's session until ``seconds`` have passed; puts (name, opens, queue reads, saves)."""
    from review_app.conversation import conversation_turns
    from review_app.decisions import record_decision
    from review_app.episode import load_episode, step_rows
    from review_app.queue import QueueFilter, queue_page

    store = Store(data_dir, state_url)
    user = accounts.User(name, "reviewer")
    rng = random.Random(seed)
    opens, reads, saves = [], [], []
    start.wait()
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        t0 = time.perf_counter()
        page = queue_page(store, user, QueueFilter(), limit=25, offset=rng.randrange(0, 50) * 25)
        reads.append(time.perf_counter() - t0)
        if not page.rows:
            continue
        row = rng.choice(page.rows)
        t0 = time.perf_counter()
        view = load_episode(store, row["episode_id"], row["round_id"])
        step_rows(view)
        conversation_turns(view.episode.instruction, view.steps)
        opens.append(time.perf_counter() - t0)
        decision, reason = rng.choice(VERDICTS)
        kw = dict(reviewer=name, round_id=row["round_id"], episode_id=row["episode_id"], decision=decision,
                  reason_code=reason)
        first, again = record_decision(store, **kw), record_decision(store, **kw)
        saves.append((first.id, again.id))
    results.put((name, opens, reads, saves))


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[18] if len(values) >= 2 else (values[0] if values else 0.0)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="3 reviewers, 2,000 episodes, 15 s (a smoke run)")
    ap.add_argument("--reviewers", type=int, default=None)
    ap.add_argument("--episodes", type=int, default=None)
    ap.add_argument("--seconds", type=float, default=None)
    ap.add_argument("--state-url", default=None, help="the state database (default: SQLite in the data directory)")
    args = ap.parse_args(argv)
    n = args.reviewers or (3 if args.quick else 20)
    episodes = args.episodes or (2_000 if args.quick else 100_000)
    seconds = args.seconds or (15.0 if args.quick else 180.0)
    with tempfile.TemporaryDirectory(prefix="bench-review-load-") as tmp:
        data = Path(tmp) / "d"
        t0 = time.perf_counter()
        store = build(data, episodes, args.state_url)
        names = [f"rev{i:02d}" for i in range(n)]
        hashed = accounts.hash_password(PASSWORD)  # one hash for all: account making is not under test
        with store.session() as s:
            for name in names:
                rt.add_reviewer(session=s, reviewer=rt.Reviewer(name=name, role="reviewer", password_hash=hashed))
        print(f"built {episodes:,} episodes and {n} accounts in {time.perf_counter() - t0:.1f} s", flush=True)
        ctx = mp.get_context("spawn")
        start, results = ctx.Barrier(n), ctx.Queue()
        procs = [ctx.Process(target=reviewer, args=(data, args.state_url, name, seconds, i, start, results))
                 for i, name in enumerate(names)]
        for p in procs:
            p.start()
        got = [results.get(timeout=seconds + 600) for _ in procs]
        for p in procs:
            p.join(timeout=60)
        failed = [p.exitcode for p in procs if p.exitcode != 0]
        if failed:
            print(f"FAILED: {len(failed)} reviewer process(es) exited with {failed}", file=sys.stderr)
            return 1
        with store.session() as s:
            rows = {r.id for r in s.exec(select(state.Review))}
    opens = [x for _, o, _, _ in got for x in o]
    reads = [x for _, _, r, _ in got for x in r]
    saves = [pair for *_, sv in got for pair in sv]
    twice = sum(a != b for a, b in saves)
    told = {a for a, _ in saves} | {b for _, b in saves}
    once = rows == told and twice == 0
    print(f"{n} reviewers for {seconds:.0f} s over {episodes:,} episodes: {len(opens)} episodes opened, "
          f"{len(saves)} decisions sent twice each")
    print(f"queue page  p50 {statistics.median(reads):.3f} s  p95 {p95(reads):.3f} s")
    print(f"episode open  p50 {statistics.median(opens):.3f} s  p95 {p95(opens):.3f} s  (target < 2 s)")
    print(f"stored: {len(rows)} decision rows for {len(told)} distinct decisions; double clicks counted twice: {twice}")
    verdict = "ok" if once and p95(opens) < 2.0 else ("SLOW" if once else "DUPLICATES")
    print(f"episode open p95 {p95(opens):.2f} s with {n} reviewers; every decision stored once: "
          f"{'yes' if once else 'NO'}  {verdict}")
    return 0 if once else 1


if __name__ == "__main__":
    sys.exit(main())
