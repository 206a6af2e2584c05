"""Rewards a policy cannot game (curation.rewards): no action, no reward; partial credit only when
asked for; cost- and competence-aware shaping as options."""

from __future__ import annotations

import pytest

from curation.reward_table import reference_calls
from curation.rewards import NoVerifier, RewardOptions, progress, reward, run
from curation.verl_reward import compute_score
from generators.phone.tools import tool_kind
from tests.curation_data import build_round
from warehouse.query import iter_records


@pytest.fixture(scope="module")
def tasks(tmp_path_factory):
    store, _ = build_round(tmp_path_factory.mktemp("rewards") / "data", episodes=40, rollouts=1)
    return [t for t in iter_records(store.duck(), "tasks") if t.requirements]


def test_doing_nothing_earns_nothing_though_the_untouched_world_meets_requirements(tasks):
    paid = [t for t in tasks if progress(t, []) > 0]
    assert len(paid) >= 5  # the verifier's progress pays these for an empty response
    for t in tasks:
        for opts in (RewardOptions(), RewardOptions(partial=True), RewardOptions(cost_weight=1.0)):
            assert reward(t, [], opts) == 0.0
            assert reward(t, [("finish", {"status": "completed", "summary": "Done."})], opts) == 0.0
        assert compute_score("x", "", t.model_dump_json()) == 0.0
        assert compute_score("x", "Nothing to do.", t.model_dump_json(), {}, partial=True) == 0.0


def _without_last_write(calls):
    writes = [i for i, (name, _) in enumerate(calls) if name not in ("finish", "ask_user") and tool_kind(name) == "write"]
    return calls[:writes[-1]] + calls[writes[-1] + 1:] if len(writes) >= 2 else None


def test_partial_credit_is_paid_only_when_asked_and_only_for_what_the_rollout_changed(tasks):
    seen = 0
    for t in tasks:
        ref = reference_calls(t)
        assert reward(t, ref) == reward(t, ref, RewardOptions(partial=True)) == 1.0
        cut = _without_last_write(ref)
        if cut is None or run(t, cut).success:
            continue
        part = reward(t, cut, RewardOptions(partial=True))
        assert reward(t, cut) == 0.0 and 0.0 <= part < 1.0
        assert part <= progress(t, cut)  # never the requirements the world met before
        seen += part > 0
    assert seen >= 1


def test_cost_aware_shaping_pays_the_same_success_in_fewer_steps_more(tasks):
    checked = 0
    for t in tasks:
        ref = reference_calls(t)
        reads = [c for c in ref if c[0] not in ("finish", "ask_user") and tool_kind(c[0]) == "read"]
        if not reads:
            continue
        longer = reads[:1] * 3 + ref  # the same success after three needless reads
        if not run(t, longer).success:
            continue
        opts = RewardOptions(cost_weight=0.5)
        assert reward(t, ref, opts) == 1.0 > reward(t, longer, opts) >= 0.5 > reward(t, [], opts)
        assert reward(t, longer) == 1.0  # off by default
        assert reward(t, ref, RewardOptions(cost_weight=0.5, token_budget=10), tokens=40) == pytest.approx(0.625)
        checked += 1
    assert checked >= 2


def test_the_group_success_rate_chooses_the_regime(tasks):
    t = next(t for t in tasks if (c := _without_last_write(reference_calls(t))) and reward(t, c, RewardOptions(partial=True)) > 0)
    cut = _without_last_write(reference_calls(t))
    opts = RewardOptions(competence=True)
    assert reward(t, cut, opts, success_rate=0.1) > 0.0  # still learning it: partial credit
    assert reward(t, cut, opts, success_rate=0.5) == 0.0  # success only
    longer = reference_calls(t)[:1] * 4 + reference_calls(t)
    if run(t, longer).success:
        assert reward(t, longer, opts, success_rate=0.9) < 1.0 == reward(t, longer, opts, success_rate=0.5)
    assert reward(t, cut, opts) == 0.0  # no group statistics: the options as given


def test_a_task_without_requirements_is_refused_and_bad_options_are_named(tasks):
    empty = tasks[0].model_copy(update={"requirements": []})
    with pytest.raises(NoVerifier, match=f"task {empty.task_id} has no requirements"):
        reward(empty, [])
    with pytest.raises(ValueError, match="unknown reward options: bonus"):
        compute_score("x", "", tasks[0].model_dump_json(), None, bonus=1)
    with pytest.raises(ValueError, match="cost_weight 2"):
        RewardOptions(cost_weight=2)
