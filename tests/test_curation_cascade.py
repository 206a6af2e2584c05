"""The cascade's steps as pure functions on small frames, and the whole cascade on a real round."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from curation.cascade import STEPS, run_cascade
from curation.checks import exact_key
from curation.cost_select import selection_marks
from curation.frame import episode_frame, step_frame, task_lookup
from curation.heuristics import heuristic_marks
from curation.pii import Scrubber, pii_marks
from curation.routing import routing_marks, sensitive_calls
from curation.schema_check import schema_marks
from curation.signatures import call_columns, exact_keys
from flows import stages
from flows.stages.curate import cascade_input
from tests.curation_data import build_round
from tests.fixed_policy import FixedActions
from warehouse.query import iter_records


@pytest.fixture(scope="module")
def curated(tmp_path_factory):
    return build_round(tmp_path_factory.mktemp("cascade") / "data", episodes=150, rollouts=3)


def _steps(rows):
    base = {"actor": "planner", "action_call_id": "", "feedback_ok": True, "error_code": None,
            "verification_label": "ok"}
    return pd.DataFrame([{**base, **r} for r in rows])


def _episodes(rows):
    base = {"round_id": "r1", "termination": "finished", "finish_status": "completed", "step_budget": 10,
            "claims": "[]", "success": True, "source": "collected", "family": "F01", "failure_type": None}
    return pd.DataFrame([{**base, **r} for r in rows])


def _call(eid, i, tool, args, ok=True, kind="tool_call", label="ok"):
    return {"episode_id": eid, "index": i, "action_kind": kind, "action_tool": tool,
            "action_arguments": json.dumps(args), "feedback_ok": ok, "verification_label": label}


def test_heuristics_flag_loops_redundant_reads_error_storms_and_budget():
    steps = _steps([
        # e1: the same write three times (a loop)
        *[_call("e1", i, "contacts_update", {"contact_id": "c1", "phone": "1"}) for i in range(3)],
        _call("e1", 3, "finish", {"status": "completed"}, kind="finish"),
        # e2: one read twice with no write between, then three failures in a row
        _call("e2", 0, "contacts_search", {"query": "ana"}),
        _call("e2", 1, "contacts_search", {"query": "ana"}),
        *[_call("e2", i, "contacts_get", {"contact_id": f"x{i}"}, ok=False, label="recoverable_error") for i in (2, 3, 4)],
        _call("e2", 5, "finish", {"status": "completed"}, kind="finish"),
        # e3: clean; e4: finishes "completed" having done nothing
        _call("e3", 0, "contacts_search", {"query": "bo"}),
        _call("e3", 1, "contacts_update", {"contact_id": "c2", "phone": "2"}),
        _call("e3", 2, "finish", {"status": "completed"}, kind="finish"),
        _call("e4", 0, "finish", {"status": "completed"}, kind="finish"),
    ])
    eps = _episodes([
        {"episode_id": "e1", "n_steps": 4}, {"episode_id": "e2", "n_steps": 6, "termination": "budget_exhausted"},
        {"episode_id": "e3", "n_steps": 3}, {"episode_id": "e4", "n_steps": 1},
    ])
    marks, flags = heuristic_marks(eps, steps, call_columns(steps))
    detail = {e: json.loads(d) for e, d in zip(marks["episode_id"], marks["detail"], strict=True)}
    assert detail["e1"]["flags"] == ["loop"] and detail["e1"]["masked_steps"] == [1, 2]
    assert set(detail["e2"]["flags"]) == {"redundant_read", "error_storm", "over_budget"}
    assert detail["e2"]["masked_steps"] == [1, 2, 3, 4]
    assert detail["e3"] == {} and marks.set_index("episode_id").loc["e3", "passed"]
    assert detail["e4"]["flags"] == ["finish_without_evidence"]
    assert set(marks["check"]) == {"heuristics"}


def test_claims_must_cite_a_successful_call_holding_the_value():
    steps = _steps([
        _call("e1", 0, "contacts_get", {"contact_id": "c1"}),
        _call("e1", 1, "finish", {"status": "completed"}, kind="finish"),
    ])
    claims = [{"fact": "phone", "call_id": "call_0", "value": "+1 555"}, {"fact": "x", "call_id": "call_9"}]
    eps = _episodes([{"episode_id": "e1", "n_steps": 2, "claims": json.dumps(claims)}])
    results = pd.DataFrame({"episode_id": ["e1"], "index": [0], "action_call_id": [""], "feedback_ok": [True],
                            "feedback_result": ['{"phone": "+1 206"}']})
    marks, _ = heuristic_marks(eps, steps, call_columns(steps), lambda ids: results)
    problems = json.loads(marks["detail"][0])["claims"]
    assert any("+1 555" in p for p in problems) and any("call_9" in p for p in problems)


def test_schema_check_names_each_problem():
    steps = _steps([_call("e1", 0, "contacts_get", {}), _call("e1", 2, "finish", {}, kind="finish", label="weird")])
    eps = _episodes([{"episode_id": "e1", "task_id": "t", "instruction": "x", "policy": "p", "template": "a",
                      "split": "train", "schema_version": "1.0", "has_outcome": True, "has_task": True,
                      "progress": 1.5, "n_steps": 2, "min_index": 0, "max_index": 2, "n_distinct_index": 2,
                      "outcome_steps": 2}])
    mark = schema_marks(eps, steps).iloc[0]
    assert not mark["passed"] and mark["mark"] == "broken"
    for text in ("progress outside", "step indices", "unknown kind, actor or label"):
        assert text in mark["reason"]


def test_selection_prefers_the_cheapest_success_within_tolerance():
    eps = _episodes([
        {"episode_id": f"e{i}", "task_id": "t1", "success": s, "n_steps": n, "tool_calls": n - 1,
         "prompt_tokens": 0, "completion_tokens": 0}
        for i, (s, n) in enumerate([(True, 3), (True, 3), (True, 6), (False, 2)])
    ])
    marks = selection_marks(eps, np.ones(4, dtype=bool), tolerance=0.25)
    assert marks["mark"].tolist() == ["preferred", "preferred", "alternative", "evidence"]


def test_pii_scrub_is_consistent_within_a_record_and_counts():
    scrubber = Scrubber()
    rs = scrubber.record()
    text = "Call +1 206-555-0101 or mail ana@example.com; card 4111 1111 1111 1111; 12 Baker Street; on 2026-03-02."
    out = rs.text(text)
    assert rs.text("again +1 206-555-0101") == "again <PHONE_1>"
    assert out == "Call <PHONE_1> or mail <EMAIL_1>; card <CARD_1>; <ADDRESS_1>; on 2026-03-02."
    assert scrubber.counts == {"phone": 2, "email": 1, "card": 1, "address": 1}
    assert Scrubber(("email",)).record().text(text).count("<") == 1  # configurable kinds
    eps = _episodes([{"episode_id": "e1", "instruction": text}])
    mark = pii_marks(eps, _steps([_call("e1", 0, "x", {"to": "bo@example.org"})])).iloc[0]
    assert json.loads(mark["detail"]) == {"address": 1, "card": 1, "email": 2, "phone": 1}


def test_routing_sends_external_and_permission_episodes_and_a_stable_sample():
    eps = _episodes([{"episode_id": f"e{i}", "family": "F0" + str(i % 3)} for i in range(60)])
    eps.loc[0, "source"] = "external"
    steps = _steps([_call("e1", 0, "device_grant_permission", {"app": "x"})])
    marks = routing_marks(eps, sensitive_calls(steps), np.ones(60, dtype=bool), set(), rate=0.1)
    again = routing_marks(eps, sensitive_calls(steps), np.ones(60, dtype=bool), set(), rate=0.1)
    by = marks.set_index("episode_id")
    assert "external import" in by.loc["e0", "reason"] and "permission" in by.loc["e1", "reason"]
    assert (marks["mark"] == "sampled").sum() >= 3  # at least one per stratum
    assert marks["mark"].tolist() == again["mark"].tolist()



def test_routing_sends_a_failure_curriculums_episodes_to_people_and_no_other_family():
    eps = _episodes([{"episode_id": f"e{i}", "family": "F03" if i < 3 else "F01"} for i in range(6)])
    steps = _steps([_call(f"e{i}", 0, "contacts_search", {}) for i in range(6)])
    by = routing_marks(eps, sensitive_calls(steps), np.ones(6, dtype=bool), set(), rate=0.0,
                       curriculum_families=frozenset({"F03"})).set_index("episode_id")
    assert (by.loc[["e0", "e1", "e2"], "mark"] == "needs_review").all()
    assert by.loc[["e0", "e1", "e2"], "reason"].str.contains("failure curriculum").all()
    assert not by.loc[["e3", "e4", "e5"], "reason"].str.contains("failure curriculum").any()


def test_routing_follows_each_tools_declared_side_effect_not_its_name():
    from generators.phone.tools import TOOLS

    # what the specs declare: money, orders, new recipients, deletions; reads never
    assert TOOLS["shop_place_order"].sensitive == "places an order"
    assert TOOLS["wallet_send_money"].sensitive == "spends money"
    assert TOOLS["mail_send"].sensitive and TOOLS["contacts_delete"].sensitive == "deletes"
    assert not [n for n, t in TOOLS.items() if t.kind == "read" and t.sensitive]
    calls = {"e0": "shop_place_order", "e1": "wallet_get_balance", "e2": "files_delete", "e3": "wallet_list_transactions",
             "e4": "messages_send", "e5": "contacts_search"}
    eps = _episodes([{"episode_id": e} for e in calls])
    steps = _steps([_call(e, 0, tool, {}) for e, tool in calls.items()])
    by = routing_marks(eps, sensitive_calls(steps), np.ones(len(calls), dtype=bool), set(), rate=0.0).set_index("episode_id")
    for eid in ("e0", "e2", "e4"):
        assert "sensitive tool called: " + calls[eid] in by.loc[eid, "reason"], by.loc[eid, "reason"]
    for eid in ("e1", "e3", "e5"):  # read-only, even in the wallet app
        assert "sensitive" not in by.loc[eid, "reason"], by.loc[eid, "reason"]
    assert "places an order" in by.loc["e0", "reason"]

def test_cascade_on_a_real_round_marks_every_episode_once_per_step(curated):
    store, round_id = curated
    con = store.duck()
    marks = con.execute('SELECT episode_id, "check" FROM marks').df()
    n = con.execute("SELECT count(*) FROM episodes").fetchone()[0]
    assert len(marks) == n * (len(STEPS) - 1)  # no endpoint configured: no judges step
    assert (marks.groupby("check").size() == n).all()
    assert con.execute("SELECT count(*) FROM marks WHERE \"check\"='replay' AND mark <> 'match'").fetchone()[0] == 0
    assert stages.curate_round(store, round_id) == 0  # committed once; a rerun writes nothing


def test_vectorised_exact_keys_equal_the_per_record_definition(curated):
    store, round_id = curated
    con = store.duck()
    eps, steps = episode_frame(con, round_id), step_frame(con, round_id)
    keys = exact_keys(eps, steps, call_columns(steps))
    records = {e.episode_id: e for e in iter_records(con, "episodes")}
    outcomes = {o.episode_id: o for o in iter_records(con, "outcomes")}
    by_ep: dict = {}
    for s in iter_records(con, "steps"):
        by_ep.setdefault(s.episode_id, []).append(s)
    assert list(keys) == [exact_key(records[e], by_ep[e], outcomes[e]) for e in eps["episode_id"]]


def test_replay_catches_an_edited_episode_and_skips_external_imports(curated):
    store, round_id = curated
    inp = cascade_input(store, round_id)
    inp.episodes.loc[0, "final_state_hash"] = "edited"
    inp.episodes.loc[1, "source"] = "external"
    marks = run_cascade(inp).marks
    replay = marks[marks["check"] == "replay"].set_index("episode_id")
    first, second = inp.episodes["episode_id"][0], inp.episodes["episode_id"][1]
    assert replay.loc[first, "mark"] == "mismatch" and not replay.loc[first, "passed"]
    assert replay.loc[second, "mark"] == "not_replayable"
    routing = marks[marks["check"] == "routing"].set_index("episode_id")
    assert "external import" in routing.loc[second, "reason"]
    selection = marks[marks["check"] == "selection"].set_index("episode_id")
    assert selection.loc[first, "mark"] in ("not_eligible", "evidence")


def test_replay_in_worker_processes_marks_exactly_as_in_one(curated, monkeypatch):
    """Spread over processes (in chunks smaller than a task's rollouts), replay finds the same
    matches and the same edited episodes as in one process."""
    from curation import replay
    from curation.cascade import CascadeConfig

    store, round_id = curated
    inp = cascade_input(store, round_id)
    edited = inp.episodes["episode_id"][[0, 7, len(inp.episodes) - 1]].tolist()
    inp.episodes.loc[inp.episodes["episode_id"].isin(edited), "final_state_hash"] = "edited"
    serial = run_cascade(inp).marks
    monkeypatch.setattr(replay, "PARALLEL_FROM", 2)
    monkeypatch.setattr(replay, "CHUNK", 5)
    parallel = run_cascade(inp, CascadeConfig(workers=2)).marks

    def replayed(marks):
        return marks[marks["check"] == "replay"].sort_values("episode_id")[["episode_id", "mark", "passed", "reason"]]

    pd.testing.assert_frame_equal(replayed(serial).reset_index(drop=True), replayed(parallel).reset_index(drop=True))
    mismatched = replayed(parallel).query("mark == 'mismatch'")["episode_id"].tolist()
    assert sorted(mismatched) == sorted(edited)


def test_a_task_row_that_is_no_task_fails_its_own_episodes_replay_only(curated, monkeypatch):
    """Tasks reach the replay workers as Arrow rows: one that no longer builds a task marks its own
    episodes, in one process and spread over several, and the others still match."""
    import pyarrow as pa

    from curation import replay
    from curation.cascade import CascadeConfig
    from curation.frame import TaskLookup

    store, round_id = curated
    inp = cascade_input(store, round_id)
    table = task_lookup(store.duck(), round_id).table
    bad = table["task_id"][3].as_py()
    faults = [('"not a list"' if tid == bad else f) for tid, f in zip(table["task_id"].to_pylist(),
                                                                       table["faults"].to_pylist(), strict=True)]
    inp.tasks = TaskLookup(table.set_column(table.schema.get_field_index("faults"), "faults",
                                            pa.array(faults, type=table.schema.field("faults").type)))
    monkeypatch.setattr(replay, "PARALLEL_FROM", 2)
    monkeypatch.setattr(replay, "CHUNK", 5)
    for workers in (1, 2):
        marks = run_cascade(inp, CascadeConfig(workers=workers)).marks
        replayed = marks[marks["check"] == "replay"].merge(inp.episodes[["episode_id", "task_id"]], on="episode_id")
        failed = replayed[replayed["mark"] != "match"]
        assert set(failed["task_id"]) == {bad} and len(failed) == (inp.episodes["task_id"] == bad).sum()
        assert failed["reason"].str.contains("ValidationError").all()


def test_each_rollout_of_a_task_replays_from_the_tasks_initial_world():
    """A task's rollouts replay one after another from copies of one build: the second starts
    from the task's initial world, not from where the first left it."""
    from curation.replay import replay_hash
    from generators.phone.families import FAMILIES
    from tests.world_hashes import replay_final_hash
    from warehouse.contract import Action

    task = FAMILIES["F01"].make_task(5, 1)
    solved = [(a.kind, a.tool, a.arguments) for a in FAMILIES["F01"].reference_actions(task)]
    idle = [("finish", "finish", {"status": "completed", "claims": []})]

    def fresh(actions):
        return replay_final_hash(task, [Action.model_construct(kind=k, tool=t, arguments=a) for k, t, a in actions],
                                 FAMILIES["F01"])

    assert fresh(solved) != fresh(idle)  # the reference solution changes the world
    assert [replay_hash(task, solved), replay_hash(task, idle), replay_hash(task, solved)] == \
        [fresh(solved), fresh(idle), fresh(solved)]


def test_replay_goes_on_past_a_finish_the_harness_refused():
    """A model's finish with bad arguments does not end the episode; replay must agree."""
    from datetime import datetime

    from curation.replay import replay_hash
    from generators.collect import run_episode
    from generators.phone.families import FAMILIES
    from generators.policies import ScriptedPolicy
    from warehouse.contract import Action

    task = FAMILIES["F01"].make_task(5, 1)
    policy = ScriptedPolicy(error_rates={}, seed=0)
    policy.start(task, 0)
    plan = list(policy.plan)
    bad_finish = Action(kind="finish", tool="finish", arguments={"status": "completed", "claims": "not a list"})
    policy.plan = [bad_finish, *plan]  # refused by the harness, then the real work
    rec = run_episode(task, FixedActions(policy.plan), rollout=0, round_id="r", batch_id="b",
                      created_at=datetime(2026, 3, 1))
    assert rec.steps[0].feedback.ok is False and rec.outcome.success
    actions = [(s.action.kind, s.action.tool, s.action.arguments) for s in rec.steps]
    assert replay_hash(task, actions) == rec.outcome.final_state_hash


def test_task_groups_reach_workers_as_their_own_rows(curated):
    """Replay sends each chunk its tasks as a slice of one take: pickled, a group carries its own
    rows (not the round's whole task table) and builds the same specs as the full lookup."""
    import pickle

    store, round_id = curated
    tasks = task_lookup(store.duck(), round_id)
    ids = list(tasks)
    groups = [ids[:2], ids[1:4]] + [[t] for t in ids[4:]]  # a task may sit in two chunks
    parts = tasks.split(groups)
    assert [list(p) for p in parts] == groups
    whole = len(pickle.dumps(tasks))
    for group, part in zip(groups, parts, strict=True):
        back = pickle.loads(pickle.dumps(part))
        assert len(pickle.dumps(part)) < whole / 4  # a slice pickled as such would carry every row
        assert back.specs() == {t: tasks[t] for t in group}
    assert tasks.split([]) == []


def test_a_round_curated_a_chunk_of_tasks_at_a_time_gets_the_marks_it_gets_at_once(curated):
    """A large round's per-episode checks run a chunk of whole tasks at a time, its steps read per
    chunk; duplicates still cross chunks: copies of episodes under tasks of their own (the last chunk)
    are exact duplicates of originals in the first, and near duplicates pair tasks of other chunks."""
    from curation.cascade import CascadeConfig, task_chunks

    store, round_id = curated
    inp = cascade_input(store, round_id)
    ep = inp.episodes
    src = ep.drop_duplicates("task_id").iloc[:3]
    copies = src.assign(episode_id=["zz-copy-" + e for e in src["episode_id"]],
                        task_id=["zz-task-" + t for t in src["task_id"]])
    # and one near copy (its summary reworded) of an episode in the first chunk
    near_src = src.iloc[:1]
    near_copy = near_src.assign(episode_id="zz-near-" + near_src["episode_id"],
                                task_id="zz-near-" + near_src["task_id"])
    inp.episodes = pd.concat([ep, copies, near_copy], ignore_index=True).sort_values("episode_id", ignore_index=True)
    tasks = task_lookup(store.duck(), round_id)
    inp.tasks = {**tasks.specs(), **{c: tasks[t] for c, t in zip([*copies["task_id"], *near_copy["task_id"]],
                                                                  [*src["task_id"], *near_src["task_id"]])}}
    read, original = [], inp.steps_of

    def reworded(frame):
        last = frame["index"] == frame.groupby("episode_id")["index"].transform("max")
        args = [json.dumps({**json.loads(a), "summary": "All done as you asked, thanks."}) if end else a
                for a, end in zip(frame["action_arguments"], last)]
        return frame.assign(action_arguments=args)

    def steps_of(ids):  # a copy's steps are its original's
        read.append(len(ids))
        wanted = set(ids)
        steps = original(sorted({i.removeprefix("zz-copy-").removeprefix("zz-near-") for i in ids}))
        copied = [steps[(prefix + steps["episode_id"]).isin(wanted)].assign(
            episode_id=lambda f, p=prefix: p + f["episode_id"]) for prefix in ("zz-copy-", "zz-near-")]
        steps = pd.concat([steps[steps["episode_id"].isin(wanted)], copied[0], reworded(copied[1])])
        return steps.sort_values(["episode_id", "index"], ignore_index=True)

    inp.steps_of = steps_of
    whole = run_cascade(inp).marks
    chunked = run_cascade(inp, CascadeConfig(chunk_episodes=20)).marks
    chunks = task_chunks(inp.episodes, 20)
    assert len(chunks) > 4 and read[0] == len(inp.episodes) and max(read[1:]) < 40  # whole tasks: ~20 a chunk

    def by_check(marks):
        return marks.sort_values(["check", "episode_id"], ignore_index=True)

    pd.testing.assert_frame_equal(by_check(whole), by_check(chunked))
    chunk_of = {e: i for i, rows in enumerate(chunks) for e in inp.episodes["episode_id"].iloc[rows]}
    exact = chunked[chunked["check"] == "exact_duplicate"].set_index("episode_id")
    for copy, orig in zip(copies["episode_id"], src["episode_id"]):
        assert exact.loc[copy, "mark"] == "duplicate" and chunk_of[copy] != chunk_of[orig]
        assert json.loads(exact.loc[copy, "detail"])["duplicate_of"] == orig
    near = chunked[(chunked["check"] == "near_duplicate") & (chunked["mark"] == "near_duplicate")]
    pairs = [(e, json.loads(d)["duplicate_of"]) for e, d in zip(near["episode_id"], near["detail"])]
    assert any(chunk_of[a] != chunk_of[b] for a, b in pairs)
    assert (near_copy["episode_id"].iloc[0], near_src["episode_id"].iloc[0]) in pairs


def test_a_round_curated_in_chunks_streams_its_marks_and_is_heard_after_each_chunk(curated, tmp_path, monkeypatch):
    """Each chunk's marks go to the shard as the chunk ends, replayed by one pool of worker processes
    that every chunk shares: the shard holds the marks the round gets at once, the funnel is the
    same, and progress is heard after every chunk (not only once all chunks are done)."""
    import concurrent.futures

    import pyarrow.parquet as pq

    from curation import replay
    from curation.cascade import ROUND_WIDE, CascadeConfig, funnel_from_marks, task_chunks
    from warehouse.store import Store

    store, round_id = curated
    inp = cascade_input(store, round_id)
    whole = run_cascade(inp)
    monkeypatch.setattr(replay, "PARALLEL_FROM", 2)
    monkeypatch.setattr(replay, "CHUNK", 5)
    pools = []

    class CountedPool(concurrent.futures.ProcessPoolExecutor):
        def __init__(self, *args, **kw):
            pools.append(1)
            super().__init__(*args, **kw)

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", CountedPool)
    monkeypatch.setattr("curation.cascade.ProcessPoolExecutor", CountedPool)
    heard = []  # marks written (their check) and progress, in order
    other = Store(tmp_path / "data")
    with other.streaming_shard(round_id, "streamed", "marks") as shard:
        def sink(table):
            heard.append(table["check"][0].as_py())
            shard.write(table)

        streamed = run_cascade(inp, CascadeConfig(chunk_episodes=30, workers=2),
                               on_progress=lambda done, total: heard.append((done, total)), sink=sink)
    (path, _), = other.recorded([round_id])["marks"]
    back = pq.read_table(other.data_dir / path).to_pandas()

    def by_check(marks):
        return marks.sort_values(["check", "episode_id"], ignore_index=True)

    pd.testing.assert_frame_equal(by_check(whole.marks), by_check(back))
    assert streamed.table is None and streamed.rows == len(back)
    assert streamed.funnel == whole.funnel == funnel_from_marks(whole.table, len(inp.episodes))
    chunks = len(task_chunks(inp.episodes, 30))
    total = chunks + len(ROUND_WIDE)
    per_chunk = ["verified", "schema", "replay", "heuristics", "pii"]
    assert chunks > 3 and heard == [  # nothing waits for the whole round
        *(x for i in range(1, chunks + 1) for x in [*per_chunk, (i, total)]),
        *(x for i, check in enumerate(ROUND_WIDE, chunks + 1) for x in [check, (i, total)])]
    assert len(pools) == 1
