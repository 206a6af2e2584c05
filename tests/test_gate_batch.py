"""Rejections by the generation gate are counted by reason and stored with the batch."""

from __future__ import annotations

from flows.stages import write_tasks
from generators.batch_plan import plan_round
from generators.phone import families as families_module
from generators.phone.families.f01_crud import ContactCrud
from generators.task_batch import seeds_to_try
from warehouse import state
from warehouse.store import Store


class HalfBroken(ContactCrud):
    """Planted: on even seeds its only check is one that doing nothing passes."""

    id = "F01"
    apart = ()  # only the contact variants, whose hooks this class overrides

    def requirements(self, task, changes):
        reqs = super().requirements(task, changes)
        return [r for r in reqs if r.noop_passes] if task.seed % 2 == 0 else reqs


def test_write_tasks_stores_rejections_by_reason_with_the_batch(tmp_path, monkeypatch):
    monkeypatch.setitem(families_module.FAMILIES, "F01", HalfBroken())
    store = Store(tmp_path / "data")
    plan = plan_round(episodes=6, rollouts=1, families=["F01"], difficulty=1, seed=10)
    with store.session() as s:
        rnd = state.open_round(session=s, requested_episodes=6, seed=10, plan=plan.to_dict())
    tasks = write_tasks(store, rnd.id, plan.to_dict())
    assert len(tasks) == 6 and all(t.seed % 2 == 1 for t in tasks)  # each even seed was replaced by the next try
    family = families_module.FAMILIES["F01"]  # the even seeds each slot tried before its first odd one
    even = sum(next(i for i, seed in enumerate(seeds_to_try(family, slot)) if seed % 2) for slot in plan.slots)
    with store.session() as s:
        (batch,) = state.batches_of(session=s, round_id=rnd.id)
    assert even and batch.tasks_kept == 6 and batch.tasks_tried == 6 + even
    assert batch.rejections == {"noop_passes": even}


def test_tasks_gated_in_worker_processes_are_the_tasks_gated_here(tmp_path, monkeypatch):
    """A big batch is gated in worker processes (in chunks smaller than a family's run of slots):
    the same tasks in the same order, and the same gate counts, as gated in one process."""
    from flows.stages import write as write_stage
    from warehouse.settings import load_settings

    monkeypatch.setitem(families_module.FAMILIES, "F01", HalfBroken())  # the workers gate with it too
    plan = plan_round(episodes=40, rollouts=1, families=["F01", "F02", "F04", "F06"], difficulty=1,
                      seed=20).to_dict()  # F01's slots get even seeds: the gate rejects each once

    def written(name: str, workers: int):
        store = Store(tmp_path / name)
        with store.session() as s:
            rnd = state.open_round(session=s, requested_episodes=40, seed=20, plan=plan)
        settings = load_settings(None, data_dir=tmp_path / name, round={"workers": workers})
        tasks = write_tasks(store, rnd.id, plan, settings)
        with store.session() as s:
            (batch,) = state.batches_of(session=s, round_id=rnd.id)
        return [t.model_dump_json() for t in tasks], (batch.tasks_kept, batch.tasks_tried, batch.rejections)

    here = written("here", 1)
    monkeypatch.setattr(write_stage, "GATE_PARALLEL_FROM", 2)
    monkeypatch.setattr(write_stage, "GATE_CHUNK", 3)
    spread = written("spread", 2)
    assert spread == here
    assert len(here[0]) >= 40 and here[1][1] > here[1][0]  # the gate rejected some: the counts are compared too


def test_a_family_goes_to_a_gate_worker_without_its_kept_worlds():
    """The gate's workers get the caller's families pickled with every chunk: after a round has run
    in this process, a family's kept worlds (megabytes) must not travel with them."""
    import pickle
    from datetime import datetime

    from generators.collect import run_episode
    from generators.phone.families import get_family
    from generators.policies import ScriptedPolicy

    family = get_family("F02")
    for seed in range(40):
        run_episode(family.make_task(seed, 2), ScriptedPolicy(seed=1), rollout=0, round_id="r", batch_id="b",
                    created_at=datetime(2026, 1, 1))
    assert len(family.__dict__.get("_worlds", {})) >= 40  # this process keeps them
    shipped = pickle.loads(pickle.dumps(family))
    assert "_worlds" not in vars(shipped) and len(pickle.dumps(family)) < 10_000
    task = family.make_task(3, 2)
    assert shipped.initial_world(task).world.state_hash() == family.initial_world(task).world.state_hash()
