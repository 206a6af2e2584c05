"""A small real round (tasks, episodes, steps, outcomes, marks) and reviewer accounts for review tests."""

from __future__ import annotations

from datetime import UTC, datetime

from flows.stages import curate_round
from generators.collect import run_episode
from generators.phone.families import FAMILIES
from generators.policies import ScriptedPolicy
from review_app import accounts
from warehouse import state
from warehouse.store import Store

PASSWORD = "correct horse"


def make_round(store: Store, n_tasks: int = 4, families: tuple[str, ...] = ("F01", "F02")) -> list[str]:
    """Commit one round of real episodes with curation marks; return the episode ids."""
    with store.session() as s:
        weights = {f: round(1 / len(families), 6) for f in families}
        rnd = state.open_round(session=s, requested_episodes=n_tasks, seed=1, plan={"weights": weights})
    tasks = [FAMILIES[families[i % len(families)]].make_task(i) for i in range(n_tasks)]
    policy = ScriptedPolicy(seed=3, error_rates={"tool_use": 0.5})
    recs = [
        run_episode(t, policy, rollout=0, round_id=rnd.id, batch_id="b", created_at=datetime.now(UTC)) for t in tasks
    ]
    store.commit_unit(rnd.id, "batch-0000", {"tasks": tasks})
    store.commit_unit(
        rnd.id,
        "s00000",
        {
            "episodes": [r.episode for r in recs],
            "steps": [s for r in recs for s in r.steps],
            "outcomes": [r.outcome for r in recs],
        },
    )
    curate_round(store, rnd.id)  # the real cascade, as a round runs it
    with store.session() as s:
        state.save_batch(session=s, batch=state.Batch(id=f"{rnd.id}-b0", round_id=rnd.id, tasks_tried=n_tasks + 1, tasks_kept=n_tasks))
    return [r.episode.episode_id for r in recs]


def make_accounts(store: Store) -> None:
    accounts.add_reviewer(store, "ann", "reviewer", PASSWORD)
    accounts.add_reviewer(store, "bob", "reviewer", PASSWORD)
    accounts.add_reviewer(store, "lea", "lead", PASSWORD)
