"""``flywheel export --format trl``: TRL's conversational prompt/completion rows for tool calling,
loaded with ``datasets`` as TRL loads them; masked turns split an episode; a round trip
(export, rebuild the conversation, import) keeps steps, call ids, results, rewards and masks."""

from __future__ import annotations

import json

import datasets
import pytest

from tests.curation_data import build_round
from tests.format_roundtrip import approve, export_rows, facts, import_file


@pytest.fixture(scope="module")
def collected(tmp_path_factory):
    store, _ = build_round(tmp_path_factory.mktemp("trl") / "data", episodes=40, rollouts=2)
    got = facts(store, key="episode_id")
    victim = next(k[0] for k, v in got.items() if len(v["steps"]) >= 4 and not v["wrong"])
    return store, got, victim


def test_rows_load_with_datasets_in_trls_tool_calling_shape(collected, tmp_path):
    store, got, _ = collected
    rows, manifest = export_rows(store, tmp_path, "trl", approve(store))
    # every split in one call: the export's dataset card names the files and declares one schema
    # its own cache: the shared one can hand back another folder's rows with the same card and file names
    ds = datasets.load_dataset(str(tmp_path / "trl-sft"), cache_dir=str(tmp_path.parent / "hf-cache"))
    assert set(ds) == {m["split"] for m in manifest["files"].values() if m["split"]} and len(ds) > 1
    assert manifest["files"]["README.md"]["split"] is None
    for split in ds:  # not what datasets would infer file by file (structs of each file's own argument keys)
        assert ds[split].features == datasets.Features({"prompt": datasets.List(datasets.Json()),
                                                        "completion": datasets.List(datasets.Json()),
                                                        "tools": datasets.List(datasets.Json()),
                                                        "metadata": datasets.Json()})
    assert sum(len(ds[s]) for s in ds) == len(rows) == sum(f["rows"] or 0 for f in manifest["files"].values())
    assert manifest["splits"] == {s: len(ds[s]) for s in ds}  # rows per split, as the files hold them
    row = ds["train"][0]
    assert set(ds["train"].column_names) == {"prompt", "completion", "tools", "metadata"}
    assert [m["role"] for m in row["prompt"][:2]] == ["system", "user"]
    calls = [c for m in row["completion"] for c in m.get("tool_calls") or []]
    assert calls and all(isinstance(c["function"]["arguments"], dict) for c in calls)  # objects, not JSON text
    named = [m for m in row["completion"] if m["role"] == "tool"]
    assert all(m["name"] == next(c["function"]["name"] for c in calls if c["id"] == m["tool_call_id"]) for m in named)
    assert all(t["type"] == "function" and t["function"]["name"] for t in row["tools"])
    # every completion ends with an agent turn; the rows of an unmasked episode: one, from the first agent turn
    assert all(r["completion"][-1]["role"] == "assistant" for r in rows)
    clean = [r for r in rows if not r["metadata"]["masked_steps"]]
    assert clean and all(len(r["prompt"]) == 2 for r in clean)


def test_a_masked_turn_splits_the_episode_and_never_trains(collected, tmp_path):
    store, got, victim = collected
    rows, manifest = export_rows(store, tmp_path, "trl", approve(store, {victim: 1}))
    mine = [r for r in rows if r["metadata"]["episode_id"] == victim]
    # the split episode is two rows: the manifest's splits count rows, as the files hold them
    assert sum(manifest["splits"].values()) == len(rows) > len({r["metadata"]["episode_id"] for r in rows})
    assert [r["metadata"]["steps"] for r in mine][0] == [0]
    assert all(1 not in r["metadata"]["steps"] for r in mine) and mine[1]["metadata"]["steps"][0] == 2
    # the masked call and its result are context of the next row, not something it learns
    masked_call = next(v for (e, _), v in got.items() if e == victim)["steps"][1][2]
    assert any(masked_call in json.dumps(m) for m in mine[1]["prompt"])
    assert not any(masked_call in json.dumps(m) for r in mine for m in r["completion"])


def test_export_rebuild_import_keeps_steps_call_ids_results_rewards_and_masks(collected, tmp_path):
    store, got, victim = collected
    rows, _ = export_rows(store, tmp_path / "out", "trl", approve(store, {victim: 1}), scrub=False)
    last = {}
    for r in rows:  # an episode's last row holds its whole conversation (prompt + completion)
        last[r["metadata"]["episode_id"]] = r
    src = tmp_path / "rebuilt.jsonl"
    with src.open("w") as fh:
        for eid, r in last.items():
            meta = r["metadata"]
            fh.write(json.dumps({"messages": r["prompt"] + r["completion"], "tools": r["tools"], "reward": meta["reward"],
                                 "success": meta["success"], "masked_steps": meta["masked_steps"],
                                 "task": {"task_id": eid}}) + "\n")
    again, summary = import_file(tmp_path / "again", src, "openai-chat")
    assert summary.imported == len(last) and not summary.skipped
    back = facts(again)
    before_of = {eid: v for (eid, _), v in got.items()}
    for eid in last:
        before, after = before_of[eid], back[(eid, 0)]
        # the finish call has no tool message in a chat; everything else comes back as it was
        assert [s[:5] for s in after["steps"]] == [s[:5] for s in before["steps"]]
        assert [s[5] for s in after["steps"][:-1]] == [s[5] for s in before["steps"][:-1]]
        assert (after["reward"], after["success"]) == (pytest.approx(before["reward"]), before["success"])
    assert 1 in back[(victim, 0)]["wrong"]  # the masked step comes back as one curation masks


def test_two_exports_in_folders_of_the_same_name_each_load_their_own_rows_through_one_cache(collected, tmp_path):
    # datasets keys a local folder's cache by its name and card: a user who exports to out-1/ and
    # out-2/ and loads both with the default cache must not get the first export's rows twice
    store, got, _ = collected
    dropped = {episode for episode, _ in list(got)[:3]}
    rows_a, _ = export_rows(store, tmp_path / "a", "trl", approve(store))
    rows_b, _ = export_rows(store, tmp_path / "b", "trl", {e: d for e, d in approve(store).items() if e not in dropped})
    assert len(rows_b) < len(rows_a)
    cache = str(tmp_path / "one-cache")
    loaded = [sum(len(s) for s in datasets.load_dataset(str(tmp_path / x / "trl-sft"), cache_dir=cache).values())
              for x in ("a", "b")]
    assert loaded == [len(rows_a), len(rows_b)]


def test_a_row_carries_the_system_turn_and_tools_a_model_is_run_with_in_the_phone(collected, tmp_path):
    # trained on one system prompt and measured with another, a model is measured on a prompt it never saw
    from generators.policies.model_chat import conversation, tool_schemas
    from warehouse.query import iter_records

    store, _, _ = collected
    rows, _ = export_rows(store, tmp_path, "trl", approve(store))
    tasks = {t.task_id: t for t in iter_records(store.duck(), "tasks")}
    for row in rows[:20]:
        task = tasks[row["metadata"]["task_id"]]
        run_with = conversation(task, [])
        assert row["prompt"][:2] == run_with[:2]  # the same system turn and instruction
        assert sorted(t["function"]["name"] for t in row["tools"]) == sorted(
            t["function"]["name"] for t in tool_schemas(task))
