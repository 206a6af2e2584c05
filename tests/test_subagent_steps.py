"""Sub-agent steps are rows of their own (actor ``subagent:<name>``) right after the planner's step
that set them to work; curation replays and judges the planner's steps only, and no export trains
the planner on a sub-agent's step, even one that looks exactly like a planner's call."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from curation.formats.adp import to_adp
from curation.formats.hf import to_hf_row
from curation.formats.openai_chat import chat_turns
from curation.formats.sharegpt import to_sharegpt
from flows.export_cmd import export
from generators.collect import run_episode
from generators.phone.families import get_family
from generators.policies.scripted import ScriptedPolicy
from tests.conftest import export_dir
from tests.curation_data import build_round
from warehouse.contract import Step

NOW = datetime(2026, 12, 1, tzinfo=UTC)


def _record(variant: str):
    fam = get_family("F12")
    for seed in range(80):
        task = fam.make_task(seed, 1)
        if task.template.startswith(variant):
            return task, run_episode(task, ScriptedPolicy(error_rates={}, seed=0), rollout=0, round_id="r0001",
                                     batch_id="b", created_at=NOW)
    raise AssertionError(f"no {variant} task in 80 seeds")


def test_a_subagents_steps_follow_the_step_that_delegated_and_are_not_the_planners():
    task, rec = _record("gui_setting")
    actors = [(s.actor, s.action.tool) for s in rec.steps]
    run = next(i for i, (_, tool) in enumerate(actors) if tool == "run_subagent")
    assert actors[run + 1:run + 4] == [("subagent:gui", "gui.open_app"), ("subagent:gui", "gui.find_setting"),
                                       ("subagent:gui", "gui.set")]
    assert [s.index for s in rec.steps] == list(range(len(rec.steps)))
    assert "trace" not in rec.steps[run].feedback.result  # the planner saw the result, not the sub-agent's steps
    assert rec.steps[run + 3].feedback.state_hash == rec.steps[run].feedback.state_hash
    planner = [s for s in rec.steps if s.actor == "planner"]
    assert rec.outcome.success and rec.outcome.steps == len(rec.steps) > len(planner)
    assert rec.outcome.tool_calls == sum(s.action.kind == "tool_call" for s in planner)
    assert rec.outcome.efficiency == round(min(1.0, task.optimal_steps / len(planner)), 6)
    # a failed run: its failing operation is the sub-agent's failed step
    _, unknown = _record("qa_unknown")
    [qa] = [s for s in unknown.steps if s.actor == "subagent:qa"]
    assert (qa.action.tool, qa.feedback.ok, qa.feedback.error.code) == ("qa.lookup", False, "NOT_FOUND")


def hard_case(steps: list[Step]) -> list[Step]:
    """``steps`` with every sub-agent step made a copy of the planner's delegating call (tool, arguments,
    call id): a write that, taken as the planner's, would replay into another state and train the
    planner on a call it never made. Only the actor tells them apart."""
    out, delegating = [], None
    for s in steps:
        if s.actor == "planner" and s.action.tool == "start_subagent":
            delegating = s.action
        elif s.actor.startswith("subagent") and delegating is not None:
            s = s.model_copy(update={"action": delegating.model_copy()})
        out.append(s)
    return out


def _hard_case() -> list[Step]:
    return hard_case(_record("gui_setting")[1].steps)


def test_no_format_gives_a_subagents_step_a_turn_or_a_loss_even_when_it_looks_like_the_planners():
    steps = _hard_case()
    planner = {s.index for s in steps if s.actor == "planner"}
    delegated = {s.index for s in steps if s.actor.startswith("subagent")}
    assert delegated
    turns = chat_turns("Set it.", steps)
    assert {i for _, i in turns if i is not None} <= planner
    assistant = [m for m, _ in turns if m["role"] == "assistant"]
    assert len(assistant) == len(planner)
    meta = {"episode_id": "e", "task_id": "t"}
    sharegpt = to_sharegpt(turns, set(), meta, [])
    calls = [c for c in sharegpt["conversations"] if c["from"] == "function_call"]
    assert len(calls) == len(planner)  # every loss-bearing call is one of the planner's
    hf = to_hf_row(turns, set(), meta, [])
    assert sum(m["loss"] for m in hf["messages"]) == len(planner)
    adp = to_adp("Set it.", steps, set(), {"reward": 1.0, "episode_id": "e"})
    actions = [c for c in adp["content"] if c.get("class_") in ("api_action", "message_action")]
    assert len(actions) == len(planner)


@pytest.fixture(scope="module")
def delegating_round(tmp_path_factory):
    """A curated round of F12 and F13 whose sub-agent steps are the hard case."""
    from flows.stages import collect

    commit = collect.commit_records

    def commit_hard(store, round_id, key, records):
        return commit(store, round_id, key, [r.model_copy(update={"steps": hard_case(r.steps)}) for r in records])

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(collect, "commit_records", commit_hard)
        return build_round(tmp_path_factory.mktemp("subagents") / "data", episodes=24, rollouts=2, seed=3,
                           families=["F12", "F13"])


def test_a_round_with_subagent_steps_curates_and_replays_the_planners_steps_only(delegating_round):
    store, round_id = delegating_round
    con = store.duck()
    copies = con.execute("SELECT count(*) FROM steps WHERE actor LIKE 'subagent:%' AND action_tool = 'start_subagent'")
    assert copies.fetchone()[0] > 0
    marks = dict(con.execute("""SELECT "check", string_agg(DISTINCT mark, ',') FROM marks
                                WHERE "check" IN ('schema', 'replay') GROUP BY 1""").fetchall())
    assert marks == {"schema": "valid", "replay": "match"}
    flagged = con.execute("""SELECT count(*) FROM marks WHERE "check" = 'heuristics'
                             AND reason LIKE '%loop%'""").fetchone()[0]
    assert flagged == 0  # the copies are no loop of the planner's


@pytest.mark.parametrize("fmt", ["openai", "sharegpt", "hf", "dpo", "trl", "adp", "verl"])
def test_exports_of_a_delegating_round_carry_no_subagent_step_as_the_planners(delegating_round, tmp_path, fmt):
    store, _ = delegating_round
    result, manifest = export(store, tmp_path, fmt=fmt, include_verified=True)
    assert result.rows > 0
    text = "\n".join((export_dir(tmp_path, manifest) / name).read_bytes().decode("utf-8", "replace") for name in manifest["files"])
    assert "subagent:" not in text
    if fmt != "openai":
        return
    planner_calls = dict(store.duck().execute(
        "SELECT episode_id, count(*) FILTER (WHERE action_tool = 'start_subagent') FROM steps "
        "WHERE actor = 'planner' GROUP BY 1").fetchall())
    lines = [ln for name in manifest["files"] for ln in (export_dir(tmp_path, manifest) / name).read_text().splitlines() if ln.strip()]
    for line in lines:
        record = json.loads(line)
        made = [c for m in record["messages"] if m["role"] == "assistant" for c in m.get("tool_calls") or []
                if c["function"]["name"] == "start_subagent"]
        assert len(made) == planner_calls[record["metadata"]["episode_id"]]


def test_the_review_apps_views_mark_a_subagents_steps():
    from review_app.conversation import conversation_turns
    from review_app.episode import EpisodeView, step_rows

    _, rec = _record("gui_setting")
    rows = step_rows(EpisodeView(rec.episode, None, rec.steps, rec.outcome))
    assert [r["action"] for r in rows if r["actor"] == "subagent:gui"] == ["↳ gui.open_app", "↳ gui.find_setting",
                                                                            "↳ gui.set"]
    calls = [c for t in conversation_turns("Set it.", rec.steps) for c in t.calls]
    assert [c.actor for c in calls if c.tool.startswith("gui.")] == ["subagent:gui"] * 3
    json.dumps(rows, ensure_ascii=False)


def test_a_plain_tool_call_sets_off_no_sub_agent_step():
    """PhoneEnv.step skips subagent_steps when the action logged one plain tool_call event: that event must
    never be a sub-agent's step, whatever the call."""
    from generators.phone.families import FAMILIES
    from generators.phone.services.subagents import subagent_steps
    from generators.phone.tools import call_tool

    for family in FAMILIES.values():
        task = family.make_task(0, family.max_difficulty)
        world = family.build_world(task)
        for action in family.reference_actions(task):
            if action.kind != "tool_call":
                continue
            logged = len(world.events)
            call_tool(world, action.tool, action.arguments, allowed=task.tools)
            new = world.events[logged:]
            if len(new) == 1 and new[0]["kind"] == "tool_call":
                assert subagent_steps(new) == [], (task.task_id, action.tool)
