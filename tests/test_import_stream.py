"""An import streams its file (issue 33): read twice a line at a time, written a batch of shards at a time;
every episode once, each task once, however the batches fall, and a kill between the shards and the round's
transaction leaves nothing a rerun duplicates."""

from __future__ import annotations

import json

import pytest

from flows.pipeline import import_prepared
from flows.stages import importing as import_cmd
from flows.stages.importing import commit_import, prepare_import
from warehouse import state
from warehouse.query import iter_records
from warehouse.store import Store


def _conv(i: int, task: int) -> dict:
    return {"task_id": task, "reward": 1.0, "messages": [
        {"role": "system", "content": "Airline agent."}, {"role": "user", "content": f"Change booking nº{i}\nplease"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": f"c{i}", "type": "function", "function": {
            "name": "get_reservation_details", "arguments": json.dumps({"reservation_id": f"R{i:05d}"})}}]},
        {"role": "tool", "tool_call_id": f"c{i}", "content": json.dumps({"ok": True, "reservation": {"id": f"R{i:05d}"}})},
        {"role": "assistant", "content": f"Done {i} ✓"}]}


def _write(tmp_path, n=9):
    src = tmp_path / "stream.jsonl"
    lines = [json.dumps(_conv(i, i % 4), ensure_ascii=False) for i in range(n)]
    src.write_text("\n".join(lines[:3] + ["{broken"] + lines[3:] + [lines[0]]) + "\n", encoding="utf-8")  # a bad line, a repeat
    return src


def _counts(store):
    con = store.duck()
    return tuple(con.execute(f"SELECT count(*), count(DISTINCT {key}) FROM {t}").fetchone()
                 for t, key in (("episodes", "episode_id"), ("tasks", "task_id")))


@pytest.mark.parametrize("batch", [1, 2, 4, 100])
def test_every_episode_and_task_once_whatever_the_batch(tmp_path, batch):
    store = Store(tmp_path / "d")
    prepared = prepare_import(_write(tmp_path), "openai-chat")
    assert (prepared.summary.records, prepared.summary.already, len(prepared.summary.skipped)) == (10, 1, 1)
    with store.run_lock():
        rnd = commit_import(store, prepared, batch=batch)
    assert prepared.summary.imported == 9 and _counts(store) == ((9, 9), (4, 4))
    with store.session() as s:
        assert len(state.shard_files(session=s, table_name="episodes", round_ids=[rnd.id])) == -(-9 // batch)
    con = store.duck()
    assert {t.task_id for t in iter_records(con, "tasks")} == {f"stream:{k}" for k in range(4)}
    eps = {e.instruction: e for e in iter_records(con, "episodes")}
    assert eps["Change booking nº7\nplease"].messages[-1]["content"] == "Done 7 ✓"


def test_a_kill_after_some_batches_then_a_rerun_gives_one_copy(tmp_path, monkeypatch):
    store, src = Store(tmp_path / "d"), _write(tmp_path)

    def killed(**_kw):
        raise KeyboardInterrupt

    monkeypatch.setattr(import_cmd, "BATCH_EPISODES", 2)
    monkeypatch.setattr(import_cmd.state, "open_round", killed)
    with pytest.raises(KeyboardInterrupt):
        import_prepared(store, prepare_import(src, "openai-chat"))
    monkeypatch.undo()
    assert len(list((tmp_path / "d").rglob("*.parquet"))) > 4  # several batches were written, none recorded
    summary = import_prepared(store, prepare_import(src, "openai-chat"))
    assert summary.imported == 9 and _counts(store) == ((9, 9), (4, 4))
