"""Storage: the contract round-trips through Parquet, shards are atomic and recorded,
orphans are removed, DuckDB sees only recorded shards; on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime

import pyarrow.parquet as pq
import pytest
from sqlmodel import select

from warehouse import state
from warehouse.contract import (
    Action,
    Cost,
    Episode,
    Feedback,
    Outcome,
    Requirement,
    RequirementResult,
    Step,
    TaskSpec,
    ToolError,
    Verification,
)
from warehouse.errors import StateError, StorageError
from warehouse.ids import episode_id, task_id
from warehouse.query import iter_records
from warehouse.schemas import TABLES, from_row, to_row
from warehouse.store import Store

NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def _episode(i: int, round_id: str = "r0001") -> Episode:
    tid = task_id("F01", "f01.create", i)
    return Episode(
        episode_id=episode_id(tid, "scripted", 0),
        task_id=tid,
        family="F01",
        template="f01.create",
        instruction=f"Add contact number {i}",
        policy="scripted",
        round_id=round_id,
        batch_id=f"{round_id}-b0",
        created_at=NOW,
    )


def _step(eid: str, i: int) -> Step:
    return Step(
        episode_id=eid,
        index=i,
        action=Action(kind="tool_call", tool="contacts_create", arguments={"name": "Ann", "tags": ["a", 1]}),
        feedback=Feedback(
            ok=i % 2 == 0,
            error=None if i % 2 == 0 else ToolError(code="NOT_FOUND", message="no such contact", hint="search first"),
            result={"id": "c1"},
            state_delta=[{"table": "contacts", "op": "added", "key": "c1"}],
            state_hash="abc",
        ),
        verification=Verification(milestones=["m1"], progress=0.5, label="ok"),
        cost=Cost(prompt_tokens=3, completion_tokens=4, latency_ms=1.5),
    )


def test_ids_are_derived_from_content():
    assert task_id("F01", "t", 1) == task_id("F01", "t", 1)
    assert task_id("F01", "t", 1) != task_id("F01", "t", 2)
    assert episode_id("t1", "scripted", 0) != episode_id("t1", "scripted", 1)


def test_every_record_round_trips_through_its_row():
    ep = _episode(1)
    task = TaskSpec(
        task_id=ep.task_id,
        family="F01",
        template="f01.create",
        seed=1,
        instruction="x",
        public_params={"name": "Ann"},
        private_params={"target": {"id": 3}},
        requirements=[Requirement(id="r1", kind="state_diff", description="d", params={"table": "contacts"})],
        tools=["a", "b"],
    )
    outcome = Outcome(
        episode_id=ep.episode_id,
        termination="finished",
        success=False,
        progress=0.5,
        final_answer={"n": 3},
        requirement_results=[RequirementResult(id="r1", passed=False)],
    )
    for table, record in [("episodes", ep), ("tasks", task), ("outcomes", outcome), ("steps", _step(ep.episode_id, 1))]:
        assert from_row(TABLES[table], to_row(TABLES[table], record)) == record


def test_nested_records_become_queryable_columns():
    names = {f.name for f in TABLES["steps"].schema}
    assert {"action_tool", "feedback_ok", "verification_label", "cost_prompt_tokens"} <= names
    assert TABLES["episodes"].schema.metadata[b"schema_version"]


def test_commit_writes_and_records_atomically(tmp_path, state_url):
    store = Store(tmp_path / "data", state_url)
    eps = [_episode(i) for i in range(5)]
    store.commit_unit("r0001", "s00000", {"episodes": eps, "steps": [_step(e.episode_id, 0) for e in eps]})
    assert store.done_keys("r0001", "episodes") == {"s00000"}
    con = store.duck()
    assert con.execute("SELECT count(*) FROM episodes").fetchone()[0] == 5
    assert con.execute("SELECT count(*) FROM steps WHERE action_tool = 'contacts_create'").fetchone()[0] == 5
    assert [e.episode_id for e in iter_records(con, "episodes")] == sorted(e.episode_id for e in eps)
    path = tmp_path / "data" / "shards" / "episodes" / "r0001" / "s00000.parquet"
    assert pq.read_table(path).num_rows == 5
    assert not list(path.parent.glob("*.tmp-*"))


def test_orphans_are_invisible_and_removed(tmp_path, state_url):
    store = Store(tmp_path / "data", state_url)
    store.commit_unit("r0001", "s00000", {"episodes": [_episode(1)]})
    # A run killed between rename and record leaves a file the database does not know.
    orphan = tmp_path / "data" / "shards" / "episodes" / "r0001" / "s00001.parquet"
    orphan.write_bytes((tmp_path / "data" / "shards" / "episodes" / "r0001" / "s00000.parquet").read_bytes())
    half = orphan.with_name("s00002.parquet.tmp-123")
    half.write_bytes(b"partial")
    assert store.duck().execute("SELECT count(*) FROM episodes").fetchone()[0] == 1
    removed = store.clean_orphans()
    assert sorted(removed) == sorted(
        ["shards/episodes/r0001/s00001.parquet", "shards/episodes/r0001/s00002.parquet.tmp-123"]
    )
    assert not orphan.exists() and not half.exists()
    assert store.duck().execute("SELECT count(*) FROM episodes").fetchone()[0] == 1


def test_empty_warehouse_has_typed_views(tmp_path, state_url):
    con = Store(tmp_path / "data", state_url).duck()
    for table in TABLES:
        assert con.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == 0
    assert con.execute("SELECT count(*) FROM steps WHERE feedback_ok").fetchone()[0] == 0


def test_rounds_and_reviews(tmp_path, state_url):
    store = Store(tmp_path / "data", state_url)
    with store.session() as s:
        r1 = state.open_round(session=s, requested_episodes=10, seed=1, plan={"episodes": 10})
        r2 = state.open_round(session=s, requested_episodes=10, seed=2, plan={})
        assert (r1.id, r2.id) == ("r0001", "r0002")
        state.finish_round(session=s, round_id=r1.id)
        assert [r.status for r in state.list_rounds(session=s)] == ["complete", "running"]
        state.add_review(session=s, review=state.Review(episode_id="e1", round_id="r0001", reviewer="ann", decision="reject"))
        state.add_review(session=s, review=state.Review(episode_id="e1", round_id="r0001", reviewer="bo", decision="approve"))
        kept = s.exec(select(state.Review).order_by(state.Review.id)).all()
    assert [(r.reviewer, r.decision) for r in kept] == [("ann", "reject"), ("bo", "approve")]  # every decision is kept


def test_run_lock_refuses_a_second_writer(tmp_path):
    store = Store(tmp_path / "data")
    other = Store(tmp_path / "data")
    with store.run_lock():
        with pytest.raises(StorageError, match="another flywheel run"):
            with other.run_lock():
                pass
    with other.run_lock():
        pass


def test_data_dir_that_is_a_file_is_a_clear_error(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(StorageError, match="not a directory"):
        Store(f)


def test_unreachable_state_url_is_one_line_and_creates_nothing(tmp_path):
    with pytest.raises(StateError) as exc:
        Store(tmp_path / "data", "postgresql+psycopg://postgres@127.0.0.1:1/nope")
    assert "\n" not in str(exc.value) and "cannot open the state database" in str(exc.value)
    assert not (tmp_path / "data").exists()


def test_empty_tables_are_visible_to_cursors(tmp_path):
    con = Store(tmp_path / "data").duck()
    assert list(iter_records(con, "tasks")) == []  # streams through a cursor of its own
    assert con.cursor().execute("SELECT count(*) FROM feedback").fetchone()[0] == 0


def test_read_only_store_creates_nothing(tmp_path):
    with pytest.raises(StorageError, match="no flywheel data"):
        Store(tmp_path / "missing", create=False)
    assert not (tmp_path / "missing").exists()
    Store(tmp_path / "data")
    Store(tmp_path / "data", create=False)
