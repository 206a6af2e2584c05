"""The stages of a round as plain functions: read what is committed, call the core,
write what is missing. The Prefect flow wraps these; tests can call them directly."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from flows.planning import next_plan
from generators.collect import later_sessions, run_scenario
from generators.phone.families import FAMILIES, get_family
from generators.planner import Plan
from generators.policies.scripted import ScriptedPolicy
from generators.task_batch import MAX_SEED_TRIES, write_slot
from generators.writers.template import TemplateWriter
from warehouse import killpoints, state
from warehouse.contract import Episode, Outcome, Step, TaskSpec
from warehouse.errors import ConfigError
from warehouse.query import iter_records
from warehouse.settings import Settings
from warehouse.store import Store

TASKS_KEY = "batch-0000"
CURATE_KEY = "curate-v1"


def selected_families(settings: Settings) -> list[str]:
    ids = settings.round.families or sorted(FAMILIES)
    for fid in ids:
        try:
            get_family(fid)
        except KeyError as exc:
            raise ConfigError(f"unknown family {fid!r} (known: {', '.join(sorted(FAMILIES))})") from exc
    return ids


def open_or_resume_round(store: Store, settings: Settings) -> tuple[state.Round, bool]:
    """The unfinished round to resume, or a new round with a fresh plan."""
    with store.session() as s:
        last = state.latest_round(session=s)
        if last is not None and last.status != "complete":
            check_same_policy(last, settings)
            return last, True
        number = 1 if last is None else last.number + 1
        r = settings.round
        plan = next_plan(store, settings, selected_families(settings), number)
        plan_data = {**plan.to_dict(), "shard_size": r.shard_size, "policy": policy_of(settings),
                     "writer": settings.writer}
        return state.open_round(session=s, requested_episodes=plan.episodes, seed=plan.seed, plan=plan_data), False


def policy_of(settings: Settings) -> dict[str, str]:
    """Who collects a round, stored with its plan so a resumed round keeps its policy."""
    if settings.policy == "openai":
        return {"name": "openai", "model": settings.openai.model or ""}
    return {"name": "scripted", "model": ""}


def check_same_policy(rnd: state.Round, settings: Settings) -> None:
    """A round is finished by the policy that started it; anything else would mix two policies."""
    started = rnd.plan.get("policy", {"name": "scripted", "model": ""})
    wanted = policy_of(settings)
    if started != wanted:
        was = started["name"] + (f" --model {started['model']}" if started["model"] else "")
        raise ConfigError(f"round {rnd.id} was started with --policy {was}; rerun with the same policy to finish it")


def write_tasks(store: Store, round_id: str, plan_data: dict, settings: Settings | None = None) -> list[TaskSpec]:
    """The round's tasks: loaded if committed, else written (seeds a family rejects are
    replaced by the next seed) and committed as one shard."""
    if TASKS_KEY in store.done_keys(round_id, "tasks"):
        return load_tasks(store, round_id)
    plan = Plan.from_dict(plan_data)
    writer = TemplateWriter()
    tasks: list[TaskSpec] = []
    tried = 0
    rejections: dict[str, int] = {}
    for slot in plan.slots:
        written = write_slot(get_family(slot.family), slot, writer)
        tried += written.tried
        for reason, n in written.rejections.items():
            rejections[reason] = rejections.get(reason, 0) + n
        if written.task is None:
            raise ConfigError(
                f"family {slot.family} at level {slot.difficulty} failed the generation gate {MAX_SEED_TRIES} times "
                f"in a row ({', '.join(f'{k} {v}' for k, v in sorted(written.rejections.items()))}); "
                f"see 'flywheel gate --family {slot.family}'"
            )
        tasks.append(written.task)
    kept = len(tasks)  # the gate keeps or rejects a scenario as a whole; its later sessions are stored too and
    # collection runs them right after their first session
    tasks += [t for task in list(tasks) for t in get_family(task.family).scenario(task, writer)[1:]]
    if plan_data.get("writer") == "openai":
        from flows.model_shard import word_tasks_with_model

        tasks = word_tasks_with_model(store, round_id, tasks, settings)
    # The batch's gate counts are saved before the tasks are committed: once the tasks
    # are committed a rerun skips this function, so the counts must already be there.
    # (Saved twice after a kill in between, they are the same row with the same counts.)
    with store.session() as s:
        state.save_batch(
            session=s,
            batch=state.Batch(
                id=f"{round_id}-b0", round_id=round_id, tasks_tried=tried, tasks_kept=kept, rejections=rejections
            ),
        )
    killpoints.reached("tasks.gated")
    store.commit_unit(round_id, TASKS_KEY, {"tasks": tasks})
    return tasks


def load_tasks(store: Store, round_id: str) -> list[TaskSpec]:
    con = store.duck([round_id])
    return list(iter_records(con, "tasks"))


def shard_keys(plan_data: dict) -> list[str]:
    """The collection units of a round; their size was fixed when the round was planned."""
    shard_size = plan_data["shard_size"]
    n = len(Plan.from_dict(plan_data).episode_slots())
    return [f"s{i:05d}" for i in range((n + shard_size - 1) // shard_size)]


def _shard_slots(plan_data: dict, key: str) -> list[tuple[int, int]]:
    i = int(key[1:])
    shard_size = plan_data["shard_size"]
    return Plan.from_dict(plan_data).episode_slots()[i * shard_size : (i + 1) * shard_size]


def collect_shard(store: Store, round_id: str, key: str, settings: Settings, started: datetime) -> int:
    """Run the episodes of one shard and commit them (episodes, steps, outcomes) at once."""
    with store.session() as s:
        rnd = s.get(state.Round, round_id)
    every = load_tasks(store, round_id)
    later = later_sessions(every)
    tasks = [t for t in every if t.session == 1]  # slots index the first sessions; later ones follow them
    if rnd.plan.get("policy", {}).get("name") == "openai":
        from flows.model_shard import collect_model_shard

        # each session replays alone, so the sessions of a scenario may run concurrently
        jobs = [(t, rollout) for i, rollout in _shard_slots(rnd.plan, key)
                for t in [tasks[i], *later.get(tasks[i].scenario_id, [])]]
        records = collect_model_shard(store, round_id, jobs, settings, started)
        store.commit_unit(round_id, key, {"episodes": [r.episode for r in records],
                                          "steps": [s for r in records for s in r.steps],
                                          "outcomes": [r.outcome for r in records]})
        return len(records)
    policy = ScriptedPolicy(error_rates=settings.scripted.error_rates or None, seed=rnd.seed)
    episodes: list[Episode] = []
    steps: list[Step] = []
    outcomes: list[Outcome] = []
    for task_index, rollout in _shard_slots(rnd.plan, key):
        task = tasks[task_index]
        for rec in run_scenario(task, later.get(task.scenario_id, []) if task.scenario_id else [], policy,
                                rollout=rollout, round_id=round_id, batch_id=f"{round_id}-b0", created_at=started):
            episodes.append(rec.episode)
            steps.extend(rec.steps)
            outcomes.append(rec.outcome)
    store.commit_unit(round_id, key, {"episodes": episodes, "steps": steps, "outcomes": outcomes})
    return len(episodes)


def curate_round(store: Store, round_id: str, settings: Settings | None = None) -> int:
    """The curation cascade's marks for every episode of the round (see curation.cascade);
    exact duplicates also against earlier rounds. Returns the number of marks written."""
    if CURATE_KEY in store.done_keys(round_id, "marks"):
        return 0
    from flows.curate_stage import curate_round_cascade

    return curate_round_cascade(store, round_id, CURATE_KEY, settings)["marks"]


def finish_round(store: Store, round_id: str) -> None:
    with store.session() as s:
        state.finish_round(session=s, round_id=round_id)


def round_counts(store: Store, round_id: str) -> dict[str, Any]:
    con = store.duck([round_id])
    episodes, successes, prompt_tokens, completion_tokens = con.execute(
        "SELECT count(*), count(*) FILTER (WHERE success), coalesce(sum(o.prompt_tokens), 0), "
        "coalesce(sum(o.completion_tokens), 0) FROM outcomes o JOIN episodes e USING (episode_id)"
    ).fetchone()
    # once per way a round's episodes were cut off, with the server's messages (an episode whose task
    # was already done when it was cut off succeeded, so it has no failure detail of its own)
    model_errors = [{"termination": t, "message": " | ".join(m[:3]) + (f" (+{len(m) - 3} more)" if len(m) > 3 else ""),
                     "episodes": n} for t, m, n in con.execute(
        "SELECT o.termination, list_sort(list_distinct(list(json_extract_string(o.failure, '$.detail')) "
        "FILTER (WHERE o.failure IS NOT NULL AND json_extract_string(o.failure, '$.detail') <> ''))), count(*) "
        "FROM outcomes o WHERE o.termination IN ('request_rejected', 'endpoint_error') GROUP BY 1 ORDER BY 3 DESC"
    ).fetchall()]
    with store.session() as s:
        batches = state.batches_of(session=s, round_id=round_id)
    return {
        "model_errors": model_errors,
        "episodes": episodes,
        "successes": successes,
        "tasks_kept": sum(b.tasks_kept for b in batches),
        "tasks_tried": sum(b.tasks_tried for b in batches),
        "prompt_tokens": int(prompt_tokens),
        "completion_tokens": int(completion_tokens),
    }
