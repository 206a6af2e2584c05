"""Step 4 of the real-learner bench without its training: the settings each mix's round runs with give
the plan the bench claims. Competence-aware plans from the tuned model's dev eval (its feedback), uniform
plans evenly, and both draw train variants only. The training and the evals are the bench's own run."""

from __future__ import annotations

from bench import bench_real_learner as bench
from flows.pipeline import plan_eval, run_eval
from flows.planning import next_plan
from warehouse.settings import load_settings
from warehouse.store import Store

FAMILIES = bench.FAMILIES.split(",")


def test_each_mix_of_step_4_plans_as_the_bench_reports_it(tmp_path):
    data = tmp_path / "eval-tuned"
    settings = load_settings(data_dir=data, round={"families": FAMILIES})
    store = Store(data)
    args = bench.parser().parse_args([])  # the bench's defaults
    dev = plan_eval(store, settings, FAMILIES, split="dev", episodes=args.dev)  # the scripted policy stands in
    run_eval(store, settings, dev)  # for the tuned model: what matters is that its dev results are feedback

    plans = {}
    for mix, adaptive in bench.MIXES.items():
        (tmp_path / mix).mkdir()
        config = bench._config(tmp_path / mix / "flywheel.toml", args, adaptive=adaptive)
        plans[mix] = next_plan(store, load_settings(config, data_dir=data, round={"families": FAMILIES,
                                                                                   "episodes": 60}), FAMILIES, 2)
    aware, uniform = plans["competence-aware"], plans["uniform"]
    assert aware.source == f"feedback {dev.batch}" and set(aware.competence) == set(FAMILIES)
    assert uniform.source == "even" and not uniform.competence and len(set(uniform.weights.values())) == 1
    assert aware.weights != uniform.weights
    assert not any("too little evidence" in why for why in aware.reasons.values())  # dev results enough to judge
    for plan in plans.values():
        assert plan.episodes == 60 and all(slot.splits == ["train"] for slot in plan.slots)
