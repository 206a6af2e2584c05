"""Rejections by the generation gate are counted by reason and stored with the batch."""

from __future__ import annotations

from flows.stages import write_tasks
from generators.phone import families as families_module
from generators.phone.families.f01_crud import ContactCrud
from generators.planner import plan_round
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
    with store.session() as s:
        (batch,) = state.batches_of(session=s, round_id=rnd.id)
    assert batch.tasks_kept == 6 and batch.tasks_tried == 9
    assert batch.rejections == {"noop_passes": 3}
