"""A shard reads its tasks from the round's task table, read once per process and never stale."""

from __future__ import annotations

from flows import stages
from flows.stages import write as write_stage
from warehouse import query
from warehouse.settings import load_settings
from warehouse.store import Store


def _round(path, seed: int, episodes: int = 12):
    settings = load_settings(None, data_dir=path, round={"episodes": episodes, "seed": seed, "shard_size": 4,
                                                        "families": ["F01", "F09"], "adaptive": False})
    store = Store(settings.data_dir)
    rnd, _ = stages.open_or_resume_round(store, settings)
    stages.write_tasks(store, rnd.id, rnd.plan, settings)
    return store, rnd, settings


def test_every_shard_of_a_round_reads_the_tasks_table_once(tmp_path, monkeypatch):
    store, rnd, settings = _round(tmp_path / "d", seed=5)
    opened = []
    real = query.connect
    monkeypatch.setattr(query, "connect", lambda files: opened.append(sorted(files)) or real(files))
    for key in stages.shard_keys(rnd.plan):
        stages.collect_shard(store, rnd.id, key, settings, started=rnd.created_at)
    assert opened == [["tasks"]]  # the first shard read the round's tasks; the others reused them


def test_the_same_round_id_in_two_data_directories_gets_its_own_tasks(tmp_path):
    """Two data directories each with a round r0001 (other seeds): each shard runs its own
    directory's tasks, later sessions (F09) included, as a fresh read of the warehouse finds them."""
    from generators.batch_plan import Plan
    from generators.task_batch import tasks_of_slots

    for name, seed in (("a", 5), ("b", 6), ("a2", 5)):
        store, rnd, settings = _round(tmp_path / name, seed=seed)
        slots = dict(enumerate(Plan.from_dict(rnd.plan).slots))
        fresh = list(query.iter_records(store.duck([rnd.id]), "tasks"))  # what a new connection reads
        got = write_stage.load_tasks(store, rnd.id, slots)
        assert got == tasks_of_slots(slots, fresh) and len(got) == len(slots)
        scenarios = sorted({t.scenario_id for t in got.values() if t.scenario_id})
        later = write_stage.load_later_sessions(store, rnd.id, scenarios)
        assert scenarios and later == {sid: sorted((t for t in fresh if t.scenario_id == sid and t.session > 1),
                                                   key=lambda t: t.session) for sid in scenarios}
