"""Does the flywheel make the next batch better? Rounds to a target score, side by side.

Each strategy runs its own data directory through the real product path, round after
round: plan, write and gate tasks, collect (scripted policy), curate, a simulated reviewer
account approves verified successes and rejects failures through the review app's own
decision function, a simulated lead approves a release (the dataset and the next round's
plan) through the release gate's own function, a toy learner (bench/toy_learner.py)
trains on exactly the release's approved episodes, and its per-task results come back
through ``flywheel feedback``'s import. No switch skips the human gate.

Strategies differ only in the plan the lead approves:
- competence-aware: the competence planner's proposal, unedited (as the release page shows it);
- uniform: every family an equal share, the level cycling 1, 2, 3 over rounds;
- failure-only: shares by failure rate in the newest feedback, at the hardest level.

Competence-aware runs first; the two baselines then run side by side in a process each
(they share nothing, and they need only enough rounds to show the ratio).
Prints the rounds each strategy needs until the learner reaches the target success at the
hardest level on every family, per family and overall, and the ratio to uniform.
Target: competence-aware needs at most 0.6 of uniform's rounds and reaches every family.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from flows import stages
from flows.planning import refresh_proposal
from flows.stages.feedback import import_feedback
from generators.phone.families import get_family
from review_app import accounts, decisions, release
from review_app.data import Overlap
from review_app.plan_proposal import plan_from_rows, proposal_rows
from warehouse.contract import variant_of
from warehouse.settings import load_settings
from warehouse.store import Store

try:  # as a script (bench/ is on the path) or as part of the bench package
    from toy_learner import ToyLearner
except ImportError:  # pragma: no cover
    from bench.toy_learner import ToyLearner

FAMILIES = ["F01", "F02", "F03", "F04", "F05", "F06"]
START = {"F01": 2.6, "F02": 2.0, "F03": 1.4, "F04": 0.9, "F05": 0.4, "F06": -0.3}  # F06: too hard at first
TARGET = 0.8
RATIO = 0.6  # the most competence-aware may need of the uniform mix's rounds
STRATEGIES = ("competence-aware", "uniform", "failure-only")
PASSWORD = "bench-password-123"


def _plan_for(strategy: str, store: Store, settings, round_number: int, episodes: int) -> dict:
    """The sampling plan the lead approves for the next round."""
    top = {f: get_family(f).max_difficulty for f in FAMILIES}
    if strategy == "competence-aware":
        proposal = refresh_proposal(store, settings, FAMILIES)
        return plan_from_rows(proposal_rows(proposal), episodes, proposal)
    if strategy == "uniform":
        level = round_number % 3 + 1
        return {"episodes": episodes, "families": {f: round(1 / len(FAMILIES), 6) for f in FAMILIES},
                "difficulties": {f: min(level, top[f]) for f in FAMILIES}}
    rows = store.duck().execute(
        "SELECT family, avg(CASE WHEN success THEN 0.0 ELSE 1.0 END) FROM feedback "
        "WHERE batch = (SELECT batch FROM feedback ORDER BY recorded_at DESC LIMIT 1) GROUP BY 1").fetchall()
    fail = {f: 0.5 for f in FAMILIES} | {f: r for f, r in rows}
    total = sum(max(v, 0.02) for v in fail.values())
    return {"episodes": episodes, "families": {f: round(max(fail[f], 0.02) / total, 6) for f in FAMILIES},
            "difficulties": top}


def simulated_review(store: Store, round_id: str) -> None:
    """The simulated reviewer: approve verified successes, reject failures (the app's own function)."""
    rows = store.duck([round_id]).execute(
        "SELECT e.episode_id, o.success FROM episodes e JOIN outcomes o USING (episode_id) ORDER BY 1").fetchall()
    for eid, ok in rows:
        decisions.record_decision(store, reviewer="sim-reviewer", round_id=round_id, episode_id=eid,
                                  decision="approve" if ok else "reject", reason_code="" if ok else "wrong_result")


def _feedback(store: Store, learner: ToyLearner, round_id: str, path: Path) -> None:
    """The trainer's per-task results on the round's tasks, imported as a trainer's file is."""
    tasks = store.duck([round_id]).execute(
        "SELECT task_id, family, template, difficulty FROM tasks ORDER BY task_id").fetchall()
    path.write_text("".join(json.dumps({"task_id": t, "success": learner.attempt(f, variant_of(w), d)}) + "\n"
                            for t, f, w, d in tasks))
    import_feedback(store, path, model="toy-learner")


def run_strategy(strategy: str, *, rounds: int, episodes: int, seed: int, workdir: Path) -> dict:
    settings = load_settings(data_dir=workdir / strategy, round={
        "episodes": episodes, "rollouts": 1, "families": FAMILIES, "seed": seed, "shard_size": max(episodes, 1)})
    store = Store(settings.data_dir)
    accounts.add_reviewer(store, "sim-reviewer", "reviewer", PASSWORD)
    accounts.add_reviewer(store, "sim-lead", "lead", PASSWORD)
    learner = ToyLearner(START, seed=seed)
    reached: dict[str, int] = {}
    scores: list[dict[str, float]] = []
    for r in range(1, rounds + 1):
        rnd, _ = stages.open_or_resume_round(store, settings)
        stages.write_tasks(store, rnd.id, rnd.plan, settings)
        for key in stages.shard_keys(rnd.plan):
            stages.collect_shard(store, rnd.id, key, settings, started=rnd.created_at)
        stages.curate_round(store, rnd.id, settings)
        stages.finish_round(store, rnd.id)
        simulated_review(store, rnd.id)
        rel = release.approve_release(store, lead="sim-lead", dataset_version=f"v{r}", round_ids=[rnd.id],
                                      sampling_plan=_plan_for(strategy, store, settings, r, episodes),
                                      overlap=Overlap(0.0, 2))
        approved = release.release_episode_ids(store, rel) or []
        kinds = store.duck([rnd.id]).execute(
            "SELECT e.family, t.template, t.difficulty FROM episodes e JOIN tasks t USING (task_id) "
            "WHERE list_contains(?, e.episode_id) AND t.split <> 'challenge'", [approved]).fetchall()
        learner.train((f, variant_of(t), d) for f, t, d in kinds)
        _feedback(store, learner, rnd.id, workdir / f"{strategy}-fb{r}.jsonl")
        score = {f: learner.p_success(f, get_family(f).max_difficulty) for f in FAMILIES}
        scores.append(score)
        for f, p in score.items():
            if p >= TARGET and f not in reached:
                reached[f] = r
        if len(reached) == len(FAMILIES):
            break
    done = max(reached.values()) if len(reached) == len(FAMILIES) else None
    return {"strategy": strategy, "rounds": done, "reached": reached, "last": scores[-1], "ran": len(scores)}


def _timed(strategy: str, rounds: int, episodes: int, seed: int, workdir: Path) -> dict:
    start = time.perf_counter()
    res = run_strategy(strategy, rounds=rounds, episodes=episodes, seed=seed, workdir=workdir)
    return res | {"seconds": time.perf_counter() - start, "cap": rounds}


def _over(result: dict) -> str:
    return f">{result['cap']}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=40, help="the most rounds a strategy may take")
    parser.add_argument("--episodes", type=int, default=60, help="episodes per round")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="a tiny smoke run (2 rounds of 12 episodes)")
    args = parser.parse_args(argv)
    rounds, episodes = (2, 12) if args.quick else (args.rounds, args.episodes)
    with tempfile.TemporaryDirectory(prefix="bench-flywheel-") as tmp:
        first = _timed(STRATEGIES[0], rounds, episodes, args.seed, Path(tmp))
        # Once competence-aware is done in A rounds, a baseline needs only A / RATIO rounds to show
        # the ratio: one not done by then needs more, so the ratio is met either way.
        cap = min(rounds, math.ceil(first["rounds"] / RATIO)) if first["rounds"] else rounds
        # the baselines do not depend on each other: one process each, side by side
        with ProcessPoolExecutor(len(STRATEGIES) - 1, mp_context=multiprocessing.get_context("spawn")) as pool:
            baselines = [pool.submit(_timed, s, cap, episodes, args.seed, Path(tmp)) for s in STRATEGIES[1:]]
            results = [first, *(b.result() for b in baselines)]
    print(f"Rounds until the toy learner reaches {TARGET:.0%} at the hardest level ({episodes} episodes a round; "
          f"a strategy stops after the rounds shown as >N)")
    print(f"{'family':<8}" + "".join(f"{r['strategy']:>18}" for r in results))
    for f in FAMILIES:
        print(f"{f:<8}" + "".join(f"{r['reached'].get(f, _over(r))!s:>18}" for r in results))
    print(f"{'all':<8}" + "".join(f"{(r['rounds'] or _over(r))!s:>18}" for r in results))
    print(f"{'seconds':<8}" + "".join(f"{r['seconds']:>18.0f}" for r in results))
    aware, uniform = results[0]["rounds"], results[1]
    if aware and uniform["rounds"]:
        ratio = aware / uniform["rounds"]
        print(f"competence-aware / uniform rounds: {ratio:.2f} (target <= {RATIO:.2f}): "
              f"{'met' if ratio <= RATIO else 'NOT met'}")
    elif aware and aware / uniform["cap"] <= RATIO:
        print(f"competence-aware / uniform rounds: < {aware / uniform['cap']:.2f} (uniform not done in "
              f"{uniform['cap']}; target <= {RATIO:.2f}): met")
    elif aware:
        print(f"competence-aware took {aware}; uniform not done in {uniform['cap']}: the ratio is not shown "
              f"(run with more --rounds)")
    else:
        stalled = ", ".join(f for f in FAMILIES if f not in results[0]["reached"])
        print(f"competence-aware did not reach {stalled} within {rounds} rounds: target NOT met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
