"""``flywheel export --format verl``: verl's multi-turn RL Parquet read with pyarrow, the tools and
interaction YAML it needs, and a reward module whose ``compute_score`` scores a rollout with our
verifier from the row's task spec (the environment reproduces every recorded episode's progress;
the reward pays success, never doing nothing)."""

from __future__ import annotations

import asyncio
import importlib.util
import json

import pyarrow.parquet as pq
import pytest
import yaml

from curation.rewards import NoVerifier
from curation.verl_reward import PhoneTool, PhoneUser, compute_score, offered_tools, parse_tool_calls, replay_score
from flows.export_cmd import export
from tests.conftest import export_dir
from tests.curation_data import build_round
from tests.format_roundtrip import DATA, import_file
from warehouse.contract import TaskSpec
from warehouse.query import iter_records


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    base = tmp_path_factory.mktemp("verl")
    store, _ = build_round(base / "data", episodes=40, rollouts=2)
    import_file(base / "data", DATA / "tau2" / "airline_results.json", "tau2")  # no world behind it: left out
    out = base / "out"
    # verl holds the RL set's tasks, those people vouched for: here every rollout is approved
    from types import SimpleNamespace

    ids = [e for (e,) in store.duck().execute("SELECT episode_id FROM episodes").fetchall()]
    approved = {e: SimpleNamespace(decision="approve", reviewer="t", first_wrong_step=None, recovered=False) for e in ids}
    _, manifest = export(store, out, fmt="verl", include_verified=False, decisions=approved)
    return store, out, manifest


def _rollouts(store):
    con = store.duck()
    specs = {t.task_id: t for t in iter_records(con, "tasks")}
    outcomes = {o.episode_id: o for o in iter_records(con, "outcomes")}
    steps: dict[str, list] = {}
    for s in iter_records(con, "steps"):
        steps.setdefault(s.episode_id, []).append(s)
    for ep in iter_records(con, "episodes"):
        st = sorted(steps[ep.episode_id], key=lambda s: s.index)
        if ep.source == "collected" and all(s.action.kind != "invalid" for s in st):
            yield specs[ep.task_id], st, outcomes[ep.episode_id]


def _hermes(steps) -> str:
    return "".join(f"I will act.\n<tool_call>\n{json.dumps({'name': s.action.tool, 'arguments': s.action.arguments})}\n</tool_call>"
                   for s in steps)


def test_parquet_and_yaml_load_and_agree(exported):
    store, out, manifest = exported
    assert manifest["format"] == "verl" and manifest["excluded"]["no_verifier"] == 1  # the import: no verifier
    # a challenge task is held out by design (thirteen families in 40 episodes draw one)
    assert set(manifest["excluded"]) <= {"no_verifier", "no_approved_rollout", "held_out_split"}
    table = pq.read_table(out / "verl" / "verl.train.parquet")
    rows = table.to_pylist()
    assert rows and set(table.column_names) == {"data_source", "agent_name", "prompt", "ability", "reward_model", "extra_info"}
    tools = yaml.safe_load((out / "verl" / "verl.tools.yaml").read_text())["tools"]
    interaction = yaml.safe_load((out / "verl" / "verl.interaction.yaml").read_text())["interaction"]
    names = [t["tool_schema"]["function"]["name"] for t in tools]
    assert {"finish", "ask_user"} <= set(names) and all(t["class_name"] == "curation.verl_reward.PhoneTool" for t in tools)
    specs = {t.task_id: t for t in iter_records(store.duck(), "tasks")}
    for row in rows:
        info = row["extra_info"]
        assert row["agent_name"] == "tool_agent" and row["reward_model"]["style"] == "rule"
        assert [m["role"] for m in row["prompt"]] == ["system", "user"] and row["prompt"][1]["content"] == specs[info["task_id"]].instruction
        assert TaskSpec.model_validate_json(row["reward_model"]["ground_truth"]) == specs[info["task_id"]]
        assert sorted(info["tools_kwargs"]) == sorted(names) and info["need_tools_kwargs"] is True  # Parquet: one schema
        own = sorted(set(specs[info["task_id"]].tools) | {"finish", "ask_user"})  # what verl.dataset.py leaves
        assert sorted(offered_tools(info["tools_kwargs"])) == own and len(own) < len(names)
        assert all(kw == {"create_kwargs": {"task_id": info["task_id"]}} for kw in offered_tools(info["tools_kwargs"]).values())
        assert info["interaction_kwargs"]["name"] == interaction[0]["name"] and info["split"] == "train"
    assert manifest["files"]["verl.tools.yaml"]["sha256"] and sum(f["rows"] or 0 for f in manifest["files"].values()) == sum(manifest["splits"].values())


def test_compute_score_pays_every_recorded_success_and_catches_near_misses(exported):
    store, out, _ = exported
    spec = importlib.util.spec_from_file_location("flywheel_reward", out / "verl" / "verl.reward.py")  # as verl loads it
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    n = near = 0
    for task, steps, outcome in _rollouts(store):
        text = _hermes(steps)
        assert replay_score(task, parse_tool_calls(text)) == (pytest.approx(outcome.progress), outcome.success)
        assert module.compute_score(f"agent-flywheel/{task.family}", text, task.model_dump_json(), {}) == float(outcome.success)
        n += 1
        writes = [i for i, s in enumerate(steps) if s.action.kind == "tool_call" and s.feedback.ok and s.feedback.state_delta]
        if outcome.success and writes:  # the same rollout without its last successful write is no success
            cut = steps[:writes[-1]] + steps[writes[-1] + 1:]
            assert compute_score("x", _hermes(cut), task.model_dump_json()) < 1.0
            near += 1
    assert n >= 20 and near >= 3
    task = next(_rollouts(store))[0]
    assert compute_score("x", "I give up. <tool_call>not json</tool_call>", task.model_dump_json()) < 1.0


def test_phone_tool_and_user_run_a_rollout_on_the_task_world(exported):
    store, out, _ = exported
    tools = {t["tool_schema"]["function"]["name"]: t for t in yaml.safe_load((out / "verl" / "verl.tools.yaml").read_text())["tools"]}
    config = yaml.safe_load((out / "verl" / "verl.interaction.yaml").read_text())["interaction"][0]["config"]
    task, steps, outcome = next((t, s, o) for t, s, o in _rollouts(store) if s[0].action.kind == "tool_call")

    async def run():
        first = steps[0].action
        tool = PhoneTool(tools[first.tool]["config"], tools[first.tool]["tool_schema"])
        iid, _ = await tool.create(create_kwargs={"task_id": task.task_id})
        text, _, _ = await tool.execute(iid, first.arguments)
        await tool.release(iid)
        user = PhoneUser(config)
        uid = await user.start_interaction(task_id=task.task_id)
        messages = [{"role": "assistant", "content": "", "tool_calls": [
            {"id": f"c{i}", "type": "function", "function": {"name": s.action.tool, "arguments": json.dumps(s.action.arguments)}}]}
            for i, s in enumerate(steps)]
        done, _, score, extra = await user.generate_response(uid, messages)
        return json.loads(text), done, score, extra

    reply, done, score, extra = asyncio.run(run())
    assert reply["ok"] == steps[0].feedback.ok and reply.get("data") == steps[0].feedback.result
    assert done is True and score == float(outcome.success) and extra["success"] == outcome.success
    assert extra["progress"] == pytest.approx(outcome.progress)


def test_a_moved_export_says_which_path_to_set(exported, tmp_path):
    """The YAMLs name the task-spec file by the path it was written to; moved, the tool says so."""
    store, out, _ = exported
    tool = yaml.safe_load((out / "verl" / "verl.tools.yaml").read_text())["tools"][0]
    config, schema = tool["config"], tool["tool_schema"]
    # through the export's link, so a later export of verl into the same --out is what it names
    assert config["task_specs"] == str(out.resolve() / "verl" / "verl.task-specs.jsonl")
    task = next(t for t, _, _ in _rollouts(store))
    moved = {**config, "task_specs": str(tmp_path / "elsewhere" / "verl.task-specs.jsonl")}
    with pytest.raises(FileNotFoundError, match="set config.task_specs in both"):
        asyncio.run(PhoneTool(moved, schema).create(create_kwargs={"task_id": task.task_id}))
    with pytest.raises(KeyError, match="not in the verl task-spec file"):
        asyncio.run(PhoneTool(config, schema).create(create_kwargs={"task_id": "t-of-another-export"}))


def test_the_manifest_states_what_empty_no_op_random_and_reference_rollouts_earn(exported):
    _, out, manifest = exported
    table = manifest["reward"]["mean_reward"]
    assert manifest["reward"]["tasks"] >= 5 and (out / "verl" / "verl.dataset.py").exists()
    for preset in ("default", "partial", "cost_weight=0.5"):
        assert table[preset]["empty"] == table[preset]["no_op"] == 0.0 and table[preset]["reference"] == 1.0
        assert table[preset]["random"] < 0.5
    assert table["verifier_progress"]["empty"] > 0.2  # what the old reward paid for doing nothing


def test_rl_and_verl_leave_out_a_task_without_requirements_and_its_score_is_refused(exported, tmp_path):
    store, _, verl_manifest = exported
    ids = [e for (e,) in store.duck().execute("SELECT episode_id FROM episodes").fetchall()]
    from types import SimpleNamespace
    approved = {e: SimpleNamespace(decision="approve", reviewer="t", first_wrong_step=None, recovered=False) for e in ids}
    _, manifest = export(store, tmp_path, fmt="rl", include_verified=False, decisions=approved)
    assert manifest["excluded"]["no_verifier"] == verl_manifest["excluded"]["no_verifier"] == 1
    rows = [json.loads(line) for name in manifest["files"] for line in (export_dir(tmp_path, manifest) / name).read_text().splitlines()]
    assert rows and all(r["task_spec"]["requirements"] for r in rows)
    task = TaskSpec.model_validate(rows[0]["task_spec"]).model_copy(update={"requirements": []})
    with pytest.raises(NoVerifier, match="no requirements"):
        compute_score("x", "", task.model_dump_json())
    with pytest.raises(NoVerifier):
        replay_score(task, [])


def test_an_import_without_a_verifier_still_exports_to_the_sft_formats(exported, tmp_path):
    """The verifier refuses a task with no requirements, and no export but the RL ones asks it: the
    imported conversation is a training row of every SFT format."""
    store, _, _ = exported
    imported = {t.task_id for t in iter_records(store.duck(), "tasks") if not t.requirements}
    ids = [e for (e,) in store.duck().execute("SELECT episode_id FROM episodes").fetchall()]
    from types import SimpleNamespace
    approved = {e: SimpleNamespace(decision="approve", reviewer="t", first_wrong_step=None, recovered=False) for e in ids}
    assert imported
    for fmt in ("openai", "sharegpt", "trl", "adp"):
        result, manifest = export(store, tmp_path / fmt, fmt=fmt, include_verified=False, decisions=approved)
        rows = [json.loads(line) for path in result.paths if path.suffix == ".jsonl" for line in path.read_text().splitlines()]
        tasks = {(r.get("metadata") or r.get("details") or {}).get("task_id") for r in rows}
        assert imported <= tasks, (fmt, manifest["excluded"])
