"""Imports as rounds: a Round row numbered with collected rounds, task specs with the record's own
tool schemas, curated at once, reviewable and exportable; crash-safe and idempotent. Also the one
JSON/JSONL reader both ``import`` and ``feedback`` use."""

from __future__ import annotations

import json

import pytest

from flows.pipeline import import_prepared
from flows.stages import importing as import_cmd
from flows.stages.feedback import import_feedback
from flows.stages.importing import commit_import, prepare_import
from review_app import decisions
from review_app.accounts import add_reviewer
from review_app.queue import QueueFilter, queue_page
from tests.conftest import cli_env, flywheel
from tests.test_import import _conv
from warehouse import state
from warehouse.contract import TaskSpec
from warehouse.errors import InputError, StorageError
from warehouse.jsonfile import parse_records
from warehouse.query import iter_records
from warehouse.schemas import TABLES, from_row, to_row
from warehouse.store import Store

SCHEMAS = [{"type": "function", "function": {"name": n, "description": f"our own {n}",
                                              "parameters": {"type": "object", "properties": {}}}}
           for n in ("contacts_search", "contacts_get")]


def _write(tmp_path, name="convs.jsonl"):
    src = tmp_path / name
    recs = [_conv("Find Ann's number", reward=1.0, tools=SCHEMAS, task={"split": "dev"}), _conv("Find Bob's number", reward=0)]
    for rec in recs:  # a call whose arguments parse (one that does not leaves its conversation out of every export)
        rec["messages"][4]["tool_calls"][1]["function"]["arguments"] = '{"contact_id": "c-1"}'
    src.write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    return src


def _counts(store: Store) -> tuple[int, int, int, int]:
    con = store.duck()
    return tuple(con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("episodes", "tasks", "steps", "outcomes"))


def test_import_is_a_curated_round_exported_with_its_own_tools(tmp_path):
    src, env = _write(tmp_path), cli_env(None)
    proc = flywheel("import", str(src), env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "Imported 2 episodes" in proc.stdout and "as round r0001" in proc.stdout
    store = Store(tmp_path / "flywheel-data")
    with store.session() as s:
        [rnd] = state.list_rounds(session=s)
        assert state.next_round_id(session=s) == "r0002"  # the next `flywheel run` opens the next number
    assert (rnd.id, rnd.status, rnd.plan["import"]["file"]) == ("r0001", "complete", str(src))
    assert len(rnd.plan["import"]["sha256"]) == 64
    con = store.duck()
    tasks = {t.instruction: t for t in iter_records(con, "tasks")}
    ann = tasks["Find Ann's number"]
    assert (ann.family, ann.template, ann.split, ann.requirements, ann.tool_schemas) == ("external", "external", "dev", [], SCHEMAS)
    assert tasks["Find Bob's number"].tool_schemas is None and tasks["Find Bob's number"].tools == ["contacts_search", "contacts_get"]
    marks = dict(con.execute("SELECT \"check\", mark FROM marks m JOIN episodes e USING (episode_id) "
                             "WHERE e.instruction = 'Find Ann''s number'").fetchall())
    assert marks["replay"] == "not_replayable" and marks["routing"] == "needs_review" and marks["verified"] == "verified"

    again = flywheel("import", str(src), env=env, cwd=tmp_path)
    assert again.returncode == 0 and "already imported as round r0001; nothing changed" in again.stdout
    assert _counts(store) == (2, 2, 10, 2)
    status = flywheel("status", env=env, cwd=tmp_path)
    assert "complete (import: convs)" in status.stdout

    out = tmp_path / "ex"
    export = flywheel("export", "--verified", "--round", "r0001", "--out", str(out), env=env, cwd=tmp_path)
    assert export.returncode == 0, export.stderr
    [row] = [json.loads(line) for line in (out / "openai-chat" / "openai-chat.dev.jsonl").read_text().splitlines()]
    assert row["metadata"]["round_id"] == "r0001" and row["messages"][1]["content"] == "Find Ann's number"
    assert row["tools"] == SCHEMAS  # its own tools: no finish or ask_user it never had


def test_a_reviewer_approves_an_imported_episode_and_it_is_exported(tmp_path):
    store = Store(tmp_path / "flywheel-data")
    summary = import_prepared(store, prepare_import(_write(tmp_path), "openai-chat"))
    assert summary.round_id == "r0001" and summary.marks > 0
    ann = add_reviewer(store, "ann", "reviewer", "correct horse")
    page = queue_page(store, ann, QueueFilter(round_ids=["r0001"]))
    bob = next(r["episode_id"] for r in page.rows if r["instruction"] == "Find Bob's number")  # failed: not verified
    assert page.total == 2
    decisions.record_decision(store, reviewer="ann", round_id="r0001", episode_id=bob, decision="approve")
    out = tmp_path / "ex"
    proc = flywheel("export", "--round", "r0001", "--out", str(out), env=cli_env(None), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for f in sorted(out.glob("openai-chat/*.jsonl")) for line in f.read_text().splitlines()]
    assert [r["metadata"]["episode_id"] for r in rows] == [bob]


def test_a_kill_between_the_steps_of_an_import_then_a_rerun_gives_one_copy(tmp_path, monkeypatch):
    store = Store(tmp_path / "d")
    src = _write(tmp_path)

    # killed after the shard files were renamed into place, before the round's transaction
    def killed(**_kw):
        raise KeyboardInterrupt

    monkeypatch.setattr(import_cmd.state, "open_round", killed)
    with pytest.raises(KeyboardInterrupt):
        import_prepared(store, prepare_import(src, "openai-chat"))
    monkeypatch.undo()
    assert any((tmp_path / "d").rglob("*.parquet")) and _counts(store) == (0, 0, 0, 0)
    with store.session() as s:
        assert state.list_rounds(session=s) == []  # no half round

    # killed after the round's transaction, before curation
    with store.run_lock():
        rnd = commit_import(store, prepare_import(src, "openai-chat"))
    assert rnd.id == "r0001" and store.done_keys("r0001", "marks") == set()

    summary = import_prepared(store, prepare_import(src, "openai-chat"))
    assert summary.file_already_imported and summary.round_id == "r0001" and summary.marks > 0
    assert _counts(store) == (2, 2, 10, 2)
    with store.session() as s:
        assert [r.id for r in state.list_rounds(session=s)] == ["r0001"]
    assert import_prepared(store, prepare_import(src, "openai-chat")).marks == 0  # nothing left to do

    # the same conversations in another file of the same source: nothing new, no new round
    other = tmp_path / "copy.json"
    other.write_text(json.dumps([json.loads(line) for line in src.read_text().splitlines()], indent=1))
    summary = import_prepared(store, prepare_import(other, "openai-chat", source="convs"))
    assert (summary.imported, summary.already, summary.round_id) == (0, 2, None)
    assert _counts(store) == (2, 2, 10, 2)


def test_nothing_usable_is_one_line(tmp_path):
    for text, why in [("[]", "nothing to import (no records)"), ("[7]", "record 1: a record must be a JSON object"),
                      ('{"messages": []}', "record 1: no messages")]:
        src = tmp_path / "x.json"
        src.write_text(text)
        with pytest.raises(InputError, match="nothing to import") as exc:
            prepare_import(src, "openai-chat")
        assert why in str(exc.value) and "\n" not in str(exc.value)


def test_one_reader_one_wording():
    bom = parse_records('\ufeff[{"a": 1}, 2]', "f.json")
    assert [(r.where, r.value) for r in bom] == [("record 1", {"a": 1}), ("record 2", 2)]
    lines = parse_records('{"a": 1}\n\n{oops\n{"b": 2}\n', "f.jsonl")
    assert [(r.where, r.problem[:22]) for r in lines] == [("line 1", ""), ("line 3", "not JSON at column 2: "), ("line 4", "")]
    assert [r.where for r in parse_records('{\n "a": 1\n}\n', "f.json")] == ["record 1"]  # one pretty-printed object
    for text, message in [('[1,\n 2,,]', "f.json:2:4: not JSON: Expecting value"),
                          ("hello\nworld", "f.json:1:1: not JSON: Expecting value"),
                          ("\ufeff  \n", "f.json: the file is empty")]:
        with pytest.raises(InputError) as exc:
            parse_records(text, "f.json")
        assert str(exc.value) == message


def test_task_rows_without_tool_schemas_still_read_back():
    spec = TaskSpec(task_id="t", family="F01", template="x", seed=1, instruction="do it", tools=["contacts_search"])
    row = to_row(TABLES["tasks"], spec)
    old = {k: v for k, v in row.items() if k != "tool_schemas"}  # a 1.0 shard has no such column
    assert from_row(TABLES["tasks"], old).tool_schemas is None
    assert from_row(TABLES["tasks"], {**old, "tool_schemas": None}) == spec  # union_by_name fills it with NULL


def test_feedback_writes_under_the_writer_lock(tmp_path):
    store = Store(tmp_path / "d")
    import_prepared(store, prepare_import(_write(tmp_path), "openai-chat"))
    task_id = store.duck().execute("SELECT min(task_id) FROM tasks").fetchone()[0]
    fb = tmp_path / "fb.jsonl"
    fb.write_text(json.dumps({"task_id": task_id, "success": True}) + "\n")
    with store.run_lock(), pytest.raises(StorageError, match="another flywheel run"):
        import_feedback(store, fb, model="m")
    assert import_feedback(store, fb, model="m").imported == 1
