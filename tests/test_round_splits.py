"""``round.splits``: a round draws only tasks of the splits asked for (for example ``["train"]``, so a
round spends its episodes on trainable data and the held-out variants stay for evals)."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from flows.planning import next_plan
from flows.stages import open_or_resume_round, write_tasks
from generators.batch_plan import Plan, plan_round
from generators.phone import families as families_module
from generators.phone.families.f03_device_order import DeviceOrder
from warehouse import state
from warehouse.errors import ConfigError
from warehouse.settings import load_settings
from warehouse.store import Store

FAMILIES = ["F01", "F03", "F07", "F08"]


def _tasks(tmp_path, name: str, plan: Plan):
    store = Store(tmp_path / name)
    with store.session() as s:
        rnd = state.open_round(session=s, requested_episodes=plan.episodes, seed=plan.seed, plan=plan.to_dict())
    return write_tasks(store, rnd.id, plan.to_dict())


def _plan(tmp_path, name: str, **round_settings) -> Plan:
    settings = load_settings(None, data_dir=tmp_path / name, round={"episodes": 80, "rollouts": 1,
                                                                     "families": FAMILIES, **round_settings})
    return next_plan(Store(tmp_path / name), settings, FAMILIES, 1)


def test_a_round_of_train_splits_draws_only_train_templates_of_every_family(tmp_path):
    every = Counter(t.split for t in _tasks(tmp_path, "every", _plan(tmp_path, "every")))
    assert every["train"] and every["dev"] and every["test"]  # by default a round draws every split

    tasks = _tasks(tmp_path, "train", _plan(tmp_path, "train", splits=["train"]))
    firsts = [t for t in tasks if t.session == 1]
    assert len(firsts) == 80 and {t.split for t in tasks} == {"train"}
    assert set(Counter(t.family for t in firsts)) == set(FAMILIES)  # no family dropped for it
    assert len({t.template for t in firsts}) > len(FAMILIES)  # every train variant, not one per family


def test_held_out_and_train_only_rounds_never_share_a_template(tmp_path):
    train = {t.template for t in _tasks(tmp_path, "train", _plan(tmp_path, "train", splits=["train"]))}
    held = _tasks(tmp_path, "held", _plan(tmp_path, "held", splits=["dev", "test"]))
    assert {t.split for t in held} == {"dev", "test"}
    assert not train & {t.template for t in held}


def test_a_rare_split_is_found_for_every_slot():
    """F01's one challenge variant is about 1 template in 25: each slot still gets a task of it."""
    plan = plan_round(episodes=40, rollouts=1, families=["F01"], difficulty=1, seed=7, splits=["challenge"])
    assert len(plan.slots) == 40
    tasks = _tasks_of(plan)
    assert len(tasks) == 40 and {t.split for t in tasks} == {"challenge"}


def _tasks_of(plan: Plan):
    from generators.task_batch import write_slots

    return [r.task for r in write_slots(plan.slots, {f: families_module.FAMILIES[f] for f in {s.family for s in plan.slots}})
            if r.task is not None]


def test_reference_demonstrations_of_a_failure_curriculum_keep_the_splits():
    """plan_round given a curriculum of a held-out variant (the planner no longer makes one): the splits win."""
    plan = plan_round(episodes=8, rollouts=1, families=["F08"], difficulty=1, seed=3, reference_share=0.5,
                      curricula={"F08": {"kind": "failure", "variants": ["sync_alarm"]}}, splits=["train"])
    assert plan.demonstrations["F08"]["episodes"] == 4
    assert all(slot.splits == ["train"] for slot in plan.slots)
    assert Plan.from_dict(plan.to_dict()).slots == plan.slots  # a resumed round reads the same slots
    stored = plan.to_dict()
    for slot in stored["slots"]:
        del slot["splits"]  # a plan stored before round.splits existed resumes as a round of every split
    assert all(slot.splits == [] for slot in Plan.from_dict(stored).slots)


def test_a_curriculum_of_held_out_variants_falls_back_to_train_variants(tmp_path):
    plan = plan_round(episodes=6, rollouts=1, families=["F08"], difficulty=1, seed=5,
                      curricula={"F08": {"kind": "failure", "variants": ["sync_alarm"]}}, splits=["train"])
    tasks = _tasks(tmp_path, "cur", plan)
    assert tasks and {t.split for t in tasks} == {"train"}
    assert not any(t.template.startswith("sync_alarm") for t in tasks)


class OnlyTrain(DeviceOrder):
    """Planted: a family whose every template is a train template."""

    def split_of(self, template: str) -> str:
        return "train"


def test_a_family_without_the_split_is_refused_before_a_plan_is_stored(tmp_path, monkeypatch):
    monkeypatch.setitem(families_module.FAMILIES, "F03", OnlyTrain())
    settings = load_settings(None, data_dir=tmp_path / "refused", round={"families": FAMILIES, "splits": ["dev", "test"]})
    with pytest.raises(ConfigError) as err:
        open_or_resume_round(Store(tmp_path / "refused"), settings)  # what flywheel run does first
    message = str(err.value)
    assert message.startswith('round.splits = ["dev", "test"]: no template of it in F03 train;') and "\n" not in message
    with Store(tmp_path / "refused").session() as s:
        assert not state.list_rounds(session=s)  # nothing stored: the fixed setting plans afresh
    assert _plan(tmp_path, "refused", splits=["train", "dev"]).slots


def test_a_family_with_no_task_of_the_split_is_a_clear_error_not_a_gate_failure(tmp_path, monkeypatch):
    monkeypatch.setitem(families_module.FAMILIES, "F03", OnlyTrain())
    plan = plan_round(episodes=2, rollouts=1, families=["F03"], difficulty=1, seed=1, splits=["test"])
    with pytest.raises(ConfigError) as err:
        _tasks(tmp_path, "none", plan)
    message = str(err.value)
    assert "F03" in message and "no task of the split test" in message and "round.splits" in message
    assert "\n" not in message and "generation gate" not in message


def test_a_split_that_does_not_exist_is_refused_when_the_settings_are_read(tmp_path):
    with pytest.raises(ConfigError, match="splits"):
        load_settings(None, data_dir=tmp_path, round={"splits": ["validation"]})


def test_flywheel_plan_says_which_splits_the_next_round_draws_and_refuses_an_unknown_one(tmp_path):
    from tests.conftest import cli_env, flywheel

    with Store(tmp_path / "data").session():
        pass
    (tmp_path / "flywheel.toml").write_text('[round]\nsplits = ["train"]\nfamilies = ["F01", "F07"]\n')
    env = cli_env(None)
    shown = flywheel("plan", "--data-dir", str(tmp_path / "data"), env=env, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "of train variants" in " ".join(shown.stdout.split())
    data = json.loads(flywheel("plan", "--json", "--data-dir", str(tmp_path / "data"), env=env, cwd=tmp_path).stdout)
    assert data["splits"] == ["train"]
    (tmp_path / "flywheel.toml").write_text('[round]\nsplits = ["validation"]\n')
    bad = flywheel("plan", "--data-dir", str(tmp_path / "data"), env=env, cwd=tmp_path)
    assert bad.returncode != 0 and "Traceback" not in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1 and "round.splits" in bad.stderr, bad.stderr


def test_a_round_of_train_variants_collects_every_planned_episode(tmp_path):
    """Collection finds each slot's task again by the seeds the slot may have drawn (more of them with splits)."""
    from datetime import UTC, datetime

    from flows import stages

    settings = load_settings(None, data_dir=tmp_path / "d", round={"episodes": 30, "rollouts": 2, "shard_size": 8,
                                                                   "families": FAMILIES, "splits": ["train"]})
    store = Store(settings.data_dir)
    rnd, _ = stages.open_or_resume_round(store, settings)
    stages.write_tasks(store, rnd.id, rnd.plan)
    for key in stages.shard_keys(rnd.plan):
        stages.collect_shard(store, rnd.id, key, settings, started=datetime.now(UTC))
    firsts = store.duck([rnd.id]).execute(
        "SELECT e.split, count(*) FROM episodes e JOIN tasks t USING (task_id) WHERE t.session = 1 GROUP BY 1").fetchall()
    assert firsts == [("train", 30)]


def test_a_round_gives_every_variant_of_a_family_its_share(tmp_path):
    """75 episodes of F01's 22 train variants: each variant gets 3 or 4 tasks of its own (by seed alone,
    some got none), and the plan says so per variant."""
    from flows.planning import plan_data, planned_from

    settings = load_settings(None, data_dir=tmp_path / "even", round={"episodes": 75, "rollouts": 1,
                                                                       "families": ["F01"], "splits": ["train"]})
    store = Store(tmp_path / "even")
    plan = next_plan(store, settings, ["F01"], 1)
    variants = families_module.FAMILIES["F01"].variants(["train"])
    assert len(variants) == 22 and "add_song" in variants
    tasks = [t for t in _tasks(tmp_path, "even", plan) if t.session == 1]
    drawn = Counter(t.template.split(".")[0] for t in tasks)
    assert set(drawn) == set(variants) and set(drawn.values()) == {3, 4}
    assert [t.template.split(".")[0] for t in tasks] == [s.variants[0] for s in plan.slots]  # each slot's own
    (mix,) = plan_data(planned_from(store, settings, ["F01"]), plan)["mix"]
    assert mix["episodes_by_variant"] == dict(sorted(drawn.items()))
    later = next_plan(store, settings, ["F01"], 2)  # the next round starts elsewhere in the turn
    assert [s.variants for s in later.slots] != [s.variants for s in plan.slots]


def test_a_curriculum_takes_its_variants_in_turn():
    plan = plan_round(episodes=9, rollouts=1, families=["F08"], difficulty=1, seed=4,
                      curricula={"F08": {"kind": "failure", "variants": ["switch_habit", "sync_event", "sync_school_run"]}})
    tasks = _tasks_of(plan)
    assert Counter(t.template.split(".")[0] for t in tasks) == {"switch_habit": 3, "sync_event": 3, "sync_school_run": 3}
