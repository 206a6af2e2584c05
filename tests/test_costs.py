"""A round's cost from the reply journals: every role, each call once, priced per model."""

from __future__ import annotations

import duckdb

from curation.costs import round_costs
from warehouse import state
from warehouse.settings import ModelPrice
from warehouse.store import Store


def _episodes(rows: list[tuple[str, str, str, int, int]]):
    con = duckdb.connect()
    con.execute("CREATE TABLE episodes (episode_id VARCHAR, round_id VARCHAR, model VARCHAR)")
    con.execute("CREATE TABLE outcomes (episode_id VARCHAR, prompt_tokens BIGINT, completion_tokens BIGINT, "
                "latency_ms DOUBLE)")
    for eid, rid, model, pt, ct in rows:
        con.execute("INSERT INTO episodes VALUES (?, ?, ?)", [eid, rid, model])
        con.execute("INSERT INTO outcomes VALUES (?, ?, ?, 10.0)", [eid, pt, ct])
    return con


def test_replies_journaled_before_they_named_their_model_are_the_rounds_planner_model_reference_or_not(tmp_path):
    store = Store(tmp_path / "d")
    old = {"content": "x", "tool_calls": [], "prompt_tokens": 1000, "completion_tokens": 100}  # no "model"
    with store.session() as s:
        state.append_replies(session=s, round_id="r0001", replies=[("e1", 0, old), ("e1", 1, old)])
    # a reference demonstration's episodes name no model ("" sorts first); the model's are on gpt-x
    con = _episodes([("e0", "r0001", "", 0, 0), ("e1", "r0001", "gpt-x", 2000, 200)])
    price = ModelPrice(input_per_mtok=10.0, output_per_mtok=30.0)
    cost = round_costs(store, con, {"gpt-x": price})["r0001"]
    assert cost["model_usage"] == [{"role": "planner", "model": "gpt-x", "calls": 2, "prompt_tokens": 2000,
                                    "completion_tokens": 200, "cost_usd": 0.026}]
    assert (cost["cost_usd"], cost["unpriced_models"]) == (0.026, [])


def test_a_round_with_no_journal_counts_what_its_episodes_recorded_and_names_unpriced_models(tmp_path):
    store = Store(tmp_path / "d")
    with store.session() as s:  # an imported round (no journal) and a judge with no price beside it
        state.append_judge_reply(session=s, key="k", round_id="r0002", judge="judge-1", text="{}",
                                 usage=("judge-m", 300, 20))
    con = _episodes([("e1", "r0002", "imported-m", 500, 50)])
    cost = round_costs(store, con, {"imported-m": ModelPrice(input_per_mtok=1.0, output_per_mtok=1.0)})["r0002"]
    assert [(r["role"], r["model"], r["calls"]) for r in cost["model_usage"]] == [
        ("planner", "imported-m", None), ("judge", "judge-m", 1)]
    assert (cost["prompt_tokens"], cost["completion_tokens"]) == (800, 70)
    assert cost["cost_usd"] == 0.00055 and cost["unpriced_models"] == ["judge-m"]
