"""``round.splits``: a round draws only tasks of the splits asked for (for example ``["train"]``, so a
round spends its episodes on trainable data and the held-out variants stay for evals)."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from flows.planning import next_plan
from flows.stages import write_tasks
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


def test_reference_demonstrations_of_a_failure_curriculum_keep_the_splits():
    """A failure curriculum may name held-out variants (what the eval measured): the splits still win."""
    plan = plan_round(episodes=8, rollouts=1, families=["F08"], difficulty=1, seed=3, reference_share=0.5,
                      curricula={"F08": {"kind": "failure", "variants": ["sync_alarm"]}}, splits=["train"])
    assert plan.demonstrations["F08"]["episodes"] == 4
    assert all(slot.splits == ["train"] for slot in plan.slots)
    assert Plan.from_dict(plan.to_dict()).slots == plan.slots  # a resumed round reads the same slots


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
