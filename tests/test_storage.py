"""Storage: the contract round-trips through Parquet, shards are atomic and recorded,
orphans are removed, DuckDB sees only recorded shards; on SQLite and PostgreSQL."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from sqlmodel import select

from warehouse import shard_intents, state
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
from warehouse.errors import ConfigError, StateError, StorageError
from warehouse.ids import episode_id, task_id
from warehouse.query import iter_records
from warehouse.schemas import TABLES, from_row, to_row
from warehouse.settings import S3Settings
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


@dataclass
class Backend:
    """Where a storage test keeps its shards: a local directory, or a bucket of moto's S3 server."""

    data_dir: Path | str
    tmp: Path
    server: object | None = None  # tests.s3_server.S3Server
    bucket: str = ""

    def store(self, state_url: str | None = None, local: str = "local") -> Store:
        if self.server is None:
            return Store(self.data_dir, state_url)
        s3 = S3Settings(endpoint_url=self.server.endpoint, access_key=self.server.access_key,
                        secret_key=self.server.secret_key)
        # a bucket needs its state elsewhere: the test's PostgreSQL, or a SQLite file on this machine
        return Store(self.data_dir, state_url or f"sqlite:///{self.tmp / 'state.db'}", s3=s3,
                     local_dir=self.tmp / local)

    def objects(self) -> list[str]:
        """Every object in the data directory (relative paths)."""
        if self.server is None:
            return sorted(p.relative_to(self.data_dir).as_posix() for p in Path(self.data_dir).rglob("*")
                          if p.is_file() and p.parent != Path(self.data_dir))
        # a key ending in "/" is a folder marker (pyarrow's delete leaves one for the parent): not an object here
        return [k.removeprefix("wh/") for k in self.server.keys(self.bucket, "wh/") if not k.endswith("/")]

    def put(self, relpath: str, data: bytes) -> None:
        """Write an object behind the store's back (what a killed run leaves)."""
        if self.server is None:
            (Path(self.data_dir) / relpath).write_bytes(data)
        else:
            self.server.client().put_object(Bucket=self.bucket, Key=f"wh/{relpath}", Body=data)


@pytest.fixture(params=["local", "s3"])
def backend(request, tmp_path) -> Backend:
    """Each storage test runs on a local data directory and on an s3:// one (moto's server)."""
    if request.param == "local":
        return Backend(tmp_path / "data", tmp_path)
    server = request.getfixturevalue("s3_server")
    bucket = server.new_bucket()
    return Backend(f"s3://{bucket}/wh", tmp_path, server, bucket)


def test_commit_writes_and_records_atomically(backend, state_url):
    store = backend.store(state_url)
    eps = [_episode(i) for i in range(5)]
    store.commit_unit("r0001", "s00000", {"episodes": eps, "steps": [_step(e.episode_id, 0) for e in eps]})
    assert store.done_keys("r0001", "episodes") == {"s00000"}
    con = store.duck()
    assert con.execute("SELECT count(*) FROM episodes").fetchone()[0] == 5
    assert con.execute("SELECT count(*) FROM steps WHERE action_tool = 'contacts_create'").fetchone()[0] == 5
    assert [e.episode_id for e in iter_records(con, "episodes")] == sorted(e.episode_id for e in eps)
    # exactly the two shards, whole, no temporary left
    assert backend.objects() == ["shards/episodes/r0001/s00000.parquet", "shards/steps/r0001/s00000.parquet"]
    (episodes_file,) = store.readable(store.recorded())["episodes"]
    assert pq.read_table(episodes_file).num_rows == 5


def test_orphans_are_invisible_and_removed(backend, state_url):
    store = backend.store(state_url)
    store.commit_unit("r0001", "s00000", {"episodes": [_episode(1)]})
    # A run killed between the write and the record leaves an object the database does not know,
    # but whose intent it declared before writing it.
    (recorded,) = store.readable(store.recorded())["episodes"]
    with store.session() as s:
        # s00003: killed before the put
        shard_intents.declare(session=s, paths=["shards/episodes/r0001/s00001.parquet",
                                                "shards/episodes/r0001/s00003.parquet"])
    backend.put("shards/episodes/r0001/s00001.parquet", Path(recorded).read_bytes())
    backend.put("shards/episodes/r0001/s00002.parquet.tmp-123", b"partial")
    # files nobody declared are not ours: an export someone wrote there, a look-alike of a temporary
    backend.put("shards/episodes/r0001/their-export.parquet", Path(recorded).read_bytes())
    backend.put("shards/episodes/r0001/notes.tmp-old.txt", "ünïcode\nnotes".encode())
    assert store.duck().execute("SELECT count(*) FROM episodes").fetchone()[0] == 1
    removed = store.clean_orphans()
    assert sorted(removed) == sorted(
        ["shards/episodes/r0001/s00001.parquet", "shards/episodes/r0001/s00002.parquet.tmp-123"]
    )
    assert backend.objects() == ["shards/episodes/r0001/notes.tmp-old.txt", "shards/episodes/r0001/s00000.parquet",
                                 "shards/episodes/r0001/their-export.parquet"]
    assert store.duck().execute("SELECT count(*) FROM episodes").fetchone()[0] == 1
    with store.session() as s:
        assert shard_intents.pending(session=s) == set()  # every intent is settled
    assert store.clean_orphans() == []


def test_recording_a_shard_settles_its_intent(backend, state_url):
    store = backend.store(state_url)
    store.commit_unit("r0001", "s00000", {"episodes": [_episode(1)], "steps": [_step(_episode(1).episode_id, 0)]})
    with store.session() as s:
        assert shard_intents.pending(session=s) == set()
    assert store.clean_orphans() == []
    assert len(backend.objects()) == 2


def test_empty_warehouse_has_typed_views(backend, state_url):
    con = backend.store(state_url).duck()
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


def test_run_lock_refuses_a_second_writer(backend, state_url):
    # a bucket with PostgreSQL state: an advisory lock every machine takes; else a file lock
    store = backend.store(state_url)
    other = backend.store(state_url)
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


def test_a_bucket_needs_a_state_url_and_keys(s3_server, tmp_path):
    url = f"s3://{s3_server.new_bucket()}/wh"
    with pytest.raises(ConfigError, match="set state_url"):
        Store(url, None, s3=S3Settings(endpoint_url=s3_server.endpoint), local_dir=tmp_path)
    with pytest.raises(ConfigError, match="no s3.access_key and s3.secret_key"):
        Store(url, f"sqlite:///{tmp_path / 'state.db'}", s3=S3Settings(endpoint_url=s3_server.endpoint),
              local_dir=tmp_path)
    assert not (tmp_path / "state.db").exists()


def test_a_bucket_shard_is_fetched_once_and_checked_against_its_checksum(s3_server, tmp_path):
    bucket = s3_server.new_bucket()
    backend = Backend(f"s3://{bucket}/wh", tmp_path, s3_server, bucket)
    store = backend.store()
    store.commit_unit("r0001", "s00000", {"episodes": [_episode(i) for i in range(3)]})
    assert store.duck().execute("SELECT count(*) FROM episodes").fetchone()[0] == 3
    # changed in the bucket behind the warehouse's back: the cached copy is what was recorded
    backend.put("shards/episodes/r0001/s00000.parquet", b"not the recorded shard")
    assert store.duck().execute("SELECT count(*) FROM episodes").fetchone()[0] == 3
    # a machine with an empty cache fetches it, and refuses what does not match the record
    with pytest.raises(StorageError, match="does not match its recorded checksum"):
        backend.store(local="other-machine").duck()
    s3_server.client().delete_object(Bucket=bucket, Key="wh/shards/episodes/r0001/s00000.parquet")
    with pytest.raises(StorageError, match="is missing from the bucket"):
        backend.store(local="third-machine").duck()


def test_a_sqlite_state_database_locked_too_long_is_one_clear_line(tmp_path, monkeypatch):
    import sqlite3

    monkeypatch.setattr(state, "SQLITE_BUSY_S", 1)  # a reviewer's write, say, that never lets go
    store = Store(tmp_path / "data")
    holder = sqlite3.connect(tmp_path / "data" / "state.db", isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(StateError, match=r"stayed locked by another process for 1 s; rerun") as err:
            store.commit_unit("r0001", "k", {"episodes": [_episode(1)]})
        assert "internal" not in str(err.value)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    store.commit_unit("r0001", "k", {"episodes": [_episode(1)]})  # once let go, the same write goes through
    assert store.done_keys("r0001", "episodes") == {"k"}


def test_json_columns_read_back_as_json_reads_them():
    """A record's JSON columns are read by orjson where it gives json's value, by json elsewhere: NaN,
    Infinity, integers beyond 64 bits (orjson would make them floats), lone surrogates, duplicate keys."""
    import json

    from warehouse.schemas import read_json

    texts = ['{"a": NaN}', "[Infinity, -Infinity]", "123456789012345678901234567890", "-9223372036854775809",
             "18446744073709551615", '{"n": 99999999999999999999}', '"\\ud800"', '{"a":1,"a":2}', "1e400", "-0.0",
             '{"x": [1.5, "é", null, true, {"y": -2}]}', '"\\u0000"', "0.1", "1E5", "[]", '"1234567890123456789"',
             '{"é€": 12345678901234567890}', '["\ud800", 99999999999999999999]', '{"ü": 1844674407370955161}']
    for text in texts:
        assert repr(read_json(text)) == repr(json.loads(text)), text
    for bad in ["{", "[1,]", "{'a': 1}", "nan", ""]:
        with pytest.raises(ValueError):
            read_json(bad)


def test_long_digit_runs_are_found_as_a_regular_expression_finds_them():
    """read_json's test for integers beyond 64 bits: a run of 19 ASCII digits, wherever it is (after
    characters of several bytes, lone surrogates, other scripts' digits), and no shorter run."""
    import random
    import re

    from warehouse.schemas import has_long_digits

    alphabet = ["0", "1", "9", "5", "a", " ", "é", "€", "\ud800", "٣", "𝟘", "-", ".", '"']
    rng = random.Random(7)
    texts = ["9" * 18, "9" * 19, "é" + "1" * 19, "1" * 18 + "٣", "𝟘" * 25, "1" * 9 + "é" + "1" * 10, ""]
    texts += ["".join(rng.choice(alphabet) if rng.random() < 0.3 else rng.choice("0123456789")
                      for _ in range(rng.randint(0, 60))) for _ in range(3000)]
    found = [has_long_digits(t) for t in texts]
    assert found == [re.search("[0-9]{19}", t) is not None for t in texts]
    assert any(found) and not all(found)  # the sample holds runs and near misses both
