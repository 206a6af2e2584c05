"""Stage 2, write tasks: each family samples its tasks from the plan's seeds, the
generation gate keeps the sound ones, a writer words them; committed as one shard."""

from __future__ import annotations

import asyncio
from functools import partial

import pyarrow as pa
import pyarrow.compute as pc
from prefect import task
from prefect.cache_policies import NO_CACHE

from flows.model_setup import StateJournal, log_refusals, make_model_engine
from flows.stages.context import SettingsDoc, open_settings, open_store, run_log, workers
from generators.batch_plan import Plan, TaskSlot
from generators.collect import later_sessions
from generators.phone.families import get_family
from generators.task_batch import MAX_SEED_TRIES, of_slots, slot_seeds, tasks_of_slots, write_slots
from generators.writers.model_writer import word_with_model
from generators.writers.template import TemplateWriter
from warehouse import killpoints, state
from warehouse.contract import TaskSpec
from warehouse.errors import ConfigError
from warehouse.parallel import map_chunks
from warehouse.query import iter_records, records
from warehouse.settings import Settings
from warehouse.store import Store
from warehouse.task_table import round_task_table

TASKS_KEY = "batch-0000"
GATE_PARALLEL_FROM = 500  # slots below which the gate runs here: starting worker processes costs seconds
GATE_CHUNK = 64  # slots a worker gates at a time


def write_tasks(store: Store, round_id: str, plan_data: dict, settings: Settings | None = None) -> list[TaskSpec]:
    """The round's tasks: loaded if committed, else written (seeds a family rejects are
    replaced by the next seed) and committed as one shard; a scenario's later sessions come
    after every first session."""
    if TASKS_KEY in store.done_keys(round_id, "tasks"):
        return list(iter_records(store.duck([round_id]), "tasks"))
    plan = Plan.from_dict(plan_data)
    writer = TemplateWriter()
    tasks: list[TaskSpec] = []
    tried = 0
    rejections: dict[str, int] = {}
    families = {f: get_family(f) for f in sorted({slot.family for slot in plan.slots})}
    gated = map_chunks(partial(write_slots, families=families), plan.slots, workers=workers(settings) if settings else 1,
                       chunk=GATE_CHUNK, least=GATE_PARALLEL_FROM)
    for slot, written in zip(plan.slots, gated, strict=True):
        tried += written.tried
        for reason, n in written.rejections.items():
            rejections[reason] = rejections.get(reason, 0) + n
        if written.task is None and sum(written.rejections.values()) < MAX_SEED_TRIES:
            raise ConfigError(
                f"family {slot.family} made no task of the split {' or '.join(slot.splits)} from "
                f"{len(slot_seeds(slot))} seeds (round.splits); add a split it has, or leave it out (round.families)")
        if written.task is None:
            raise ConfigError(
                f"family {slot.family} at level {slot.difficulty} failed the generation gate {MAX_SEED_TRIES} times "
                f"in a row ({', '.join(f'{k} {v}' for k, v in sorted(written.rejections.items()))}); "
                f"see 'flywheel gate --family {slot.family}'"
            )
        tasks.append(written.task)
    kept = len(tasks)  # the gate keeps or rejects a scenario as a whole; its later sessions are stored too and
    # collection runs them with their first session
    tasks += [t for task in list(tasks) for t in get_family(task.family).scenario(task, writer)[1:]]
    if plan_data.get("writer") == "openai":
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


def load_tasks(store: Store, round_id: str, slots: dict[int, TaskSlot]) -> dict[int, TaskSpec]:
    """The committed first sessions of ``slots`` (slot index -> slot), each found by the seeds its
    slot writes from: a shard converts only the tasks it runs, not every task of the round."""
    table = round_task_table(store, round_id)
    # later sessions are not slots: they run with their first session
    seeds = of_slots(table["seed"].to_numpy(zero_copy_only=False), slots.values())
    mask = pc.and_(pc.equal(table["session"], 1), pa.array(seeds))
    return tasks_of_slots(slots, records(table.filter(mask), "tasks"))


def load_later_sessions(store: Store, round_id: str, scenario_ids: list[str]) -> dict[str, list[TaskSpec]]:
    """Per scenario id, its committed sessions after the first, in order."""
    if not scenario_ids:
        return {}
    table = round_task_table(store, round_id)
    mask = pc.and_(pc.greater(table["session"], 1),
                   pc.is_in(table["scenario_id"], value_set=pa.array(sorted(set(scenario_ids)), pa.string())))
    return later_sessions(records(table.filter(mask), "tasks"))


def word_tasks_with_model(store: Store, round_id: str, tasks: list[TaskSpec], settings: Settings) -> list[TaskSpec]:
    """The tasks with model-worded instructions (template wording where the model's is rejected)."""
    journal = StateJournal(store, round_id)
    cfg = settings.openai

    async def run() -> list[TaskSpec]:
        engine = make_model_engine(settings, store)
        try:
            return list(await asyncio.gather(*(word_with_model(t, engine, journal, rounds=cfg.writer_rounds,
                                                               writer_name=f"openai:{cfg.model}") for t in tasks)))
        finally:
            log_refusals(engine, "the task writer")
            await engine.close()

    return asyncio.run(run())


@task(name="write-tasks", cache_policy=NO_CACHE)
def write_tasks_task(round_id: str, settings: SettingsDoc) -> int:
    """Write and gate the round's batch (or find it committed); returns the number of tasks."""
    cfg = open_settings(settings)
    store = open_store(cfg)
    with store.session() as s:
        rnd = s.get(state.Round, round_id)
    n = len(write_tasks(store, round_id, rnd.plan, cfg))
    with store.session() as s:
        batch = s.get(state.Batch, f"{round_id}-b0")
    if batch is not None:
        rejected = ", ".join(f"{k} {v}" for k, v in sorted(batch.rejections.items())) or "none"
        run_log().info(f"{round_id}: {batch.tasks_kept} of {batch.tasks_tried} tasks kept by the gate "
                       f"(rejected: {rejected})")
    return n
