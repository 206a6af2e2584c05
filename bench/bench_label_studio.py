"""Label Studio sync speed against a real server: push and pull of a small and a large
warehouse, side by side (Label Studio's own UI export is known to time out near 5,000 tasks;
ours pages through the task list instead).

    python bench/bench_label_studio.py            # 500 vs 5,000 episodes
    python bench/bench_label_studio.py --quick    # 20 vs 100 (a smoke run for the tests)

The server is the one in FLYWHEEL_TEST_LS_URL / FLYWHEEL_TEST_LS_TOKENS (as .ci/run sets
them), or one started here from the Label Studio venv (tests/label_studio/server.py).
Episodes are bench_review's synthetic copies of a real record; every tenth task gets an
annotation through the API before the pull, so the pull reads every task and applies some.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_review import build  # noqa: E402
from review_app import accounts  # noqa: E402
from review_app.label_studio import config  # noqa: E402
from review_app.label_studio.sdk_client import connect  # noqa: E402
from review_app.label_studio.sync import pull, push  # noqa: E402
from warehouse.settings import LabelStudioSettings  # noqa: E402


def _server(stack: list) -> tuple[str, dict[str, str]]:
    if os.environ.get("FLYWHEEL_TEST_LS_URL"):
        return os.environ["FLYWHEEL_TEST_LS_URL"], json.loads(os.environ["FLYWHEEL_TEST_LS_TOKENS"])
    from tests.label_studio import server

    venv = server.default_venv()
    if not server.venv_ready(venv):
        raise SystemExit(f"no Label Studio venv at {venv}: python -m tests.label_studio.server install")
    started = server.start(venv, Path(tempfile.mkdtemp(prefix="bench-ls-")))
    stack.append(lambda: server.stop(started.pid))
    return started.url, started.tokens


def run(episodes: int, url: str, tokens: dict[str, str]) -> dict[str, float]:
    """Seconds for: push (creates every task), push again (nothing to do), pull, pull again."""
    from label_studio_sdk import LabelStudio

    admin_token = next(iter(tokens.values()))
    annotator = LabelStudio(base_url=url, api_key=tokens["ann@example.com"])
    ls = LabelStudioSettings(url=url, token=admin_token, project=f"bench {uuid.uuid4().hex[:8]}", page_size=500)
    with tempfile.TemporaryDirectory() as tmp:
        store = build(Path(tmp) / "d", episodes)
        # the annotator's Label Studio user counts as the account that holds its e-mail
        accounts.add_reviewer(store, "ann", "reviewer", "bench-password", email="ann@example.com")
        client = connect(url, admin_token, page_size=ls.page_size)
        out = {}
        t0 = time.perf_counter()
        first = push(store, client, ls, round_ids=None, everything=True)
        out["push"] = time.perf_counter() - t0
        assert first.created == episodes, first
        t0 = time.perf_counter()
        again = push(store, client, ls, round_ids=None, everything=True)
        out["push again"] = time.perf_counter() - t0
        assert again.created == 0 and again.unchanged == episodes, again
        tasks = [t for i, t in enumerate(client.tasks(first.project_id, annotations=False)) if i % 10 == 0]
        result = [{"from_name": config.DECISION, "to_name": config.TRAJECTORY, "type": "choices",
                   "value": {"choices": ["approve"]}}]
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(lambda t: annotator.annotations.create(id=t.id, result=result), tasks))
        t0 = time.perf_counter()
        pulled = pull(store, client, ls)
        out["pull"] = time.perf_counter() - t0
        assert pulled.tasks == episodes and pulled.new == len(tasks), pulled
        t0 = time.perf_counter()
        pull(store, client, ls)
        out["pull again"] = time.perf_counter() - t0
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="20 vs 100 episodes (a smoke run)")
    args = parser.parse_args()
    small, large = (20, 100) if args.quick else (500, 5_000)
    stack: list = []
    try:
        url, tokens = _server(stack)
        rows = {n: run(n, url, tokens) for n in (small, large)}
    finally:
        for stop in stack:
            stop()
    print(f"{'step':<12}{small:>10,} eps{large:>10,} eps{'ms/episode':>12}{'ratio/episode':>15}")
    for step in rows[small]:
        a, b = rows[small][step], rows[large][step]
        ratio = (b / large) / (a / small)
        print(f"{step:<12}{a:>12.2f} s{b:>12.2f} s{1000 * b / large:>12.2f}{ratio:>15.2f}")
    print(f"(ratio/episode near 1 or below: the time per episode does not grow with the warehouse; "
          f"{large:,} episodes pushed in {rows[large]['push']:.1f} s and pulled in {rows[large]['pull']:.1f} s)")


if __name__ == "__main__":
    main()
