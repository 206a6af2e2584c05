"""The operational state database: rounds, batches, shards, reviews.

SQLite (WAL) by default, PostgreSQL through a URL. SQLModel families: a base
with the fields, a table model. CRUD functions take ``*, session``.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.exc import SQLAlchemyError
from sqlmodel import JSON, Column, Field, Session, SQLModel, create_engine, select

from warehouse import db_faults, label_studio_tables, ratelimit, review_tables, shard_intents  # noqa: F401  (tables)
from warehouse.contract import FALLBACK, GAVE_UP_KEY, USER_KEY, WRITER_KEY
from warehouse.errors import StateError, StateLost, first_line
from warehouse.settings import redact_url
from warehouse.timestamps import UtcDateTime, utcnow
from warehouse.upsert import insert_for


class RoundBase(SQLModel):
    number: int = Field(index=True, unique=True)
    status: str = "running"  # running, complete
    requested_episodes: int = 0
    seed: int = 0
    plan: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))
    created_at: datetime = Field(default_factory=utcnow, sa_type=UtcDateTime)
    finished_at: datetime | None = Field(default=None, sa_type=UtcDateTime)


class Round(RoundBase, table=True):
    __tablename__ = "rounds"
    id: str = Field(primary_key=True)


class Batch(SQLModel, table=True):
    __tablename__ = "batches"
    id: str = Field(primary_key=True)
    round_id: str = Field(index=True, foreign_key="rounds.id")
    tasks_tried: int = 0
    tasks_kept: int = 0
    rejections: dict[str, int] = Field(default_factory=dict, sa_column=Column(JSON))


class Shard(SQLModel, table=True):
    """A Parquet file that was renamed into place. Never rewritten."""

    __tablename__ = "shards"
    id: str = Field(primary_key=True)  # "{table}/{round_id}/{key}"
    round_id: str = Field(index=True)
    key: str = Field(index=True)  # the unit of work this file belongs to
    table_name: str
    path: str  # relative to the data directory
    rows: int
    checksum: str
    created_at: datetime = Field(default_factory=utcnow, sa_type=UtcDateTime)


class PlanProposal(SQLModel, table=True):
    """The competence planner's proposal for the next round, as the flows last computed it.

    The review app's release page shows it (it may not import the planner); a lead edits
    and approves it with a release. Refreshed whenever its inputs change (a round ends,
    feedback arrives, ``flywheel plan``, ``flywheel review`` starts)."""

    __tablename__ = "plan_proposals"
    id: str = Field(primary_key=True)  # "next": there is one proposal at a time
    data: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))  # what ``flywheel plan --json`` prints
    computed_at: datetime = Field(default_factory=utcnow, sa_type=UtcDateTime)


WITHDRAWN = "withdrawn"  # a decision taken back (deleted in Label Studio): that vote stops counting


class ReviewBase(SQLModel):
    episode_id: str = Field(index=True)
    round_id: str = Field(index=True)
    reviewer: str
    decision: str  # approve, reject, needs_fix
    reason: str = ""
    first_wrong_step: int | None = None
    # with a first wrong step: True when the agent recovered (only that step is masked),
    # False when every later assistant turn is masked too (the default)
    recovered: bool = Field(default=False, sa_column_kwargs={"server_default": sa.false()})
    decided_at: datetime = Field(default_factory=utcnow, sa_type=UtcDateTime)


class Review(ReviewBase, table=True):
    __tablename__ = "reviews"
    id: int | None = Field(default=None, primary_key=True)


SQLITE_BUSY_S = 30  # how long a SQLite write waits for another process's lock before it gives up


def _sqlite_pragmas(dbapi_conn, _record) -> None:
    cur = dbapi_conn.cursor()
    cur.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_S * 1000}")
    # Switching to WAL takes an exclusive lock; only the first connection ever needs to.
    if cur.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
        cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.close()


def make_sql_engine(url: str, reconnect_s: float = db_faults.RECONNECT_S) -> sa.Engine:
    """An engine for ``url`` with its tables created; one line of error if it cannot connect. Once
    open, a database over the network that drops away is reconnected to for up to ``reconnect_s``
    seconds (see :mod:`warehouse.db_faults`)."""
    try:
        if url.startswith("sqlite"):
            engine = create_engine(url, connect_args={"timeout": SQLITE_BUSY_S})
            event.listen(engine, "connect", _sqlite_pragmas)
        else:
            engine = create_engine(url, pool_pre_ping=True)
        with _setup_lock(engine):
            _create_tables(engine)
        # from here on, a database that goes away is waited for, then one line saying to rerun (opening
        # it is "cannot open", at once: a wrong URL is not worth waiting for)
        db_faults.reconnect_patiently(engine, reconnect_s)
        event.listen(engine, "handle_error", _lost_database(url))
    except (SQLAlchemyError, ImportError, ValueError) as exc:
        raise StateError(f"cannot open the state database {redact(url)}: {first_line(exc)}{_read_only_hint(url)}") \
            from exc
    return engine


def _read_only_hint(url: str) -> str:
    """Why a SQLite file may not open: its directory is read-only (SQLite must write its WAL beside it)."""
    try:
        path = sa.engine.make_url(url).database if url.startswith("sqlite") else None
    except (SQLAlchemyError, ValueError):
        return ""
    if not path or path == ":memory:" or path.startswith("file:"):
        return ""
    folder = os.path.dirname(os.path.abspath(path))
    return f" (the directory {folder} is read-only)" if os.path.isdir(folder) and not os.access(folder, os.W_OK) else ""


# What a state database says when it went away or cannot write any more (PostgreSQL
# restarted or stopped, a full disk under SQLite): the command stops in one line and its
# rerun finishes the work, since everything committed before stays committed.
_FULL = ("disk is full", "no space left", "could not extend file", "disk i/o error")
_LOST = ("connection", "server closed", "terminating", "shutting down", "starting up")


def _lost_database(url: str):
    def handle(ctx) -> None:
        if ctx.is_pre_ping:  # the pool reconnects by itself when a pooled connection was cut
            return
        text = first_line(ctx.original_exception)
        if "disk is full" in text.lower():  # SQLite's words for a full disk (or a size cap it was given)
            text += " (no space left on the device?)"
        if "readonly database" in text.lower() or "read-only" in text.lower():  # SQLite; PostgreSQL's hot standby
            raise StateError(f"cannot write to the state database {redact(url)}: {text} (is the data directory, or "
                             "the database, read-only?)") from ctx.original_exception
        if "database is locked" in text.lower():  # SQLite, after its busy timeout: another process held it
            raise StateError(f"the state database {redact(url)} stayed locked by another process for "
                             f"{SQLITE_BUSY_S} s; rerun the same command when it is done (nothing committed is lost)") \
                from ctx.original_exception
        if any(s in text.lower() for s in _FULL):
            raise StateError(f"the state database {redact(url)} failed: {text}; "
                             "rerun the same command once it has room (nothing committed is lost)") \
                from ctx.original_exception
        if ctx.is_disconnect or any(s in text.lower() for s in _LOST):
            raise StateLost(f"the state database {redact(url)} failed: {text}; "
                            "rerun the same command once it is back (nothing committed is lost)") \
                from ctx.original_exception
    return handle


def _create_tables(engine: sa.Engine) -> None:
    """Create missing tables and add missing columns (see :func:`_setup_lock` for several processes)."""
    with engine.connect() as conn:
        if conn.dialect.name == "postgresql":  # held until the commit
            conn.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": _SCHEMA_LOCK_KEY})
        SQLModel.metadata.create_all(conn)
        add_missing_columns(conn)
        conn.commit()


_SCHEMA_LOCK_KEY = 0x466C7977  # PostgreSQL advisory lock taken while the tables are made ("Flyw")


@contextmanager
def _setup_lock(engine: sa.Engine) -> Iterator[None]:
    """One process at a time sets up a SQLite database file (its first connection switches it to WAL,
    then the tables are made): several processes opening a new database at once (reviewers, a running
    flow) would otherwise each see a table missing and race to create it, or meet SQLite's lock at a
    moment its busy timeout does not cover. An OS lock on ``<file>.lock`` beside it, held for those
    milliseconds and released at once when a process dies. PostgreSQL takes an advisory lock instead
    (:func:`_create_tables`)."""
    path = engine.url.database if engine.dialect.name == "sqlite" else None
    if not path or path == ":memory:" or path.startswith("file:"):
        yield
        return
    try:
        fh = open(f"{path}.lock", "a")  # noqa: SIM115  (closed below)
    except OSError:  # a directory this process cannot write to: SQLite says so itself, in one line
        yield
        return
    try:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        yield
    finally:
        fh.close()


def add_missing_columns(conn: sa.Connection) -> list[str]:
    """The migration of a state database made by an earlier version: every column the
    models have and its tables lack is added (each such column has a server default or
    is nullable, so existing rows stay valid), in ``conn``'s transaction. Returns ``table.column`` of those added."""
    inspector = sa.inspect(conn)
    existing = set(inspector.get_table_names())
    added = []
    for table in SQLModel.metadata.sorted_tables:
        if table.name not in existing:
            continue
        have = {c["name"] for c in inspector.get_columns(table.name)}
        for col in table.columns:
            if col.name in have:
                continue
            ddl = f"ALTER TABLE {table.name} ADD COLUMN {col.name} {col.type.compile(dialect=conn.dialect)}"
            if col.server_default is not None:
                default = col.server_default.arg
                text = default.compile(dialect=conn.dialect) if isinstance(default, sa.ClauseElement) else f"'{default}'"
                ddl += f" DEFAULT {text}"
            if not col.nullable:
                if col.server_default is None:
                    raise StateError(f"cannot add {table.name}.{col.name} to an existing database: no default")
                ddl += " NOT NULL"
            conn.execute(sa.text(ddl))
            added.append(f"{table.name}.{col.name}")
    return added


def redact(url: str) -> str:
    """The URL with any password hidden (also when it does not parse)."""
    return redact_url(url)


# --- rounds -------------------------------------------------------------------------


def latest_round(*, session: Session) -> Round | None:
    return session.exec(select(Round).order_by(Round.number.desc())).first()


def next_round_id(*, session: Session) -> str:
    """The id :func:`open_round` gives the next round (stable while the writer lock is held)."""
    last = latest_round(session=session)
    return f"r{(1 if last is None else last.number + 1):04d}"


def open_round(
    *, session: Session, requested_episodes: int, seed: int, plan: dict[str, Any], shards: list[Shard] | None = None
) -> Round:
    """Create the next round. With ``shards`` (an import: everything written already) the round
    is created complete and its shards recorded in the same transaction: all or nothing."""
    last = latest_round(session=session)
    number = 1 if last is None else last.number + 1
    rnd = Round(id=f"r{number:04d}", number=number, requested_episodes=requested_episodes, seed=seed, plan=plan)
    if shards is not None:
        if any(shard.round_id != rnd.id for shard in shards):
            raise StateError(f"shards written for another round than the next one ({rnd.id}); rerun")
        rnd.status, rnd.finished_at = "complete", utcnow()
        for shard in shards:
            session.merge(shard)
        shard_intents.clear(session=session, paths=[shard.path for shard in shards])
    session.add(rnd)
    session.commit()
    session.refresh(rnd)
    return rnd


def finish_round(*, session: Session, round_id: str) -> None:
    rnd = session.get(Round, round_id)
    if rnd is not None and rnd.status != "complete":
        rnd.status = "complete"
        rnd.finished_at = utcnow()
        session.add(rnd)
        session.commit()


def list_rounds(*, session: Session) -> list[Round]:
    return list(session.exec(select(Round).order_by(Round.number)))


# --- shards -------------------------------------------------------------------------


def record_shards(*, session: Session, shards: list[Shard]) -> None:
    """Record renamed shard files in one transaction (all or none), which also clears their intents."""
    for shard in shards:
        session.merge(shard)
    shard_intents.clear(session=session, paths=[shard.path for shard in shards])
    session.commit()


def recorded_keys(*, session: Session, round_id: str, table_name: str) -> set[str]:
    rows = session.exec(select(Shard.key).where(Shard.round_id == round_id, Shard.table_name == table_name))
    return set(rows)


def shard_files(*, session: Session, table_name: str, round_ids: list[str] | None = None) -> list[tuple[str, str]]:
    """``(path, checksum)`` of the recorded shards of a table, by path."""
    return shard_files_by_table(session=session, table_names=[table_name], round_ids=round_ids)[table_name]


def shard_files_by_table(*, session: Session, table_names: list[str],
                         round_ids: list[str] | None = None) -> dict[str, list[tuple[str, str]]]:
    """Per table, ``(path, checksum)`` of its recorded shards of ``round_ids`` (None: every round), by path: one
    statement for all the tables (an episode page asks for five, under load every round trip to a server waits)."""
    stmt = select(Shard.table_name, Shard.path, Shard.checksum).where(Shard.table_name.in_(table_names))
    if round_ids:
        # no round id holds a NUL, and PostgreSQL refuses one even as a query parameter
        stmt = stmt.where(Shard.round_id.in_([r for r in round_ids if "\x00" not in r] or [""]))
    out: dict[str, list[tuple[str, str]]] = {t: [] for t in table_names}
    for table, path, checksum in session.exec(stmt):
        out[table].append((path, checksum))
    return {t: sorted(files) for t, files in out.items()}


def all_shard_paths(*, session: Session) -> set[str]:
    return set(session.exec(select(Shard.path)))


# --- batches ------------------------------------------------------------------------


def save_batch(*, session: Session, batch: Batch) -> None:
    session.merge(batch)
    session.commit()


def batches_of(*, session: Session, round_id: str) -> list[Batch]:
    return list(session.exec(select(Batch).where(Batch.round_id == round_id)))


# --- reviews ------------------------------------------------------------------------


def add_review(*, session: Session, review: Review) -> Review:
    session.add(review)
    session.commit()
    session.refresh(review)
    return review


def latest_review(*, session: Session, episode_id: str, reviewer: str) -> Review | None:
    """The reviewer's latest decision on the episode (the one that is theirs), or None."""
    stmt = (select(Review).where(Review.episode_id == episode_id, Review.reviewer == reviewer)
            .order_by(Review.id.desc()))
    return session.exec(stmt).first()


# --- model replies (the journal that makes model calls exactly-once) ---------------


class ModelReply(SQLModel, table=True):
    """One model reply, committed as it arrives and before it is acted on; never updated."""

    __tablename__ = "model_replies"
    episode_id: str = Field(primary_key=True)
    step_index: int = Field(primary_key=True)
    round_id: str = Field(index=True)
    reply: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))
    created_at: datetime = Field(default_factory=utcnow, sa_type=UtcDateTime)


Place = tuple[str, int]  # (conversation key, step index): where a reply is journaled


def append_replies(*, session: Session, round_id: str,
                   replies: list[tuple[str, int, dict[str, Any]]]) -> dict[Place, dict[str, Any]]:
    """Journal ``(key, step index, reply)`` rows in one transaction (one insert of many rows, not one
    per reply). First write wins: a place journaled already, by anyone, keeps its reply, as does the
    first of two rows at one place. Returns the reply kept at each place, which is the one to act on."""
    first: dict[Place, dict[str, Any]] = {}
    for key, index, reply in replies:
        first.setdefault((key, index), reply)
    if not first:
        return {}
    insert = insert_for(session.get_bind().dialect.name)
    table = ModelReply.__table__
    now = utcnow()
    rows = [{"episode_id": key, "step_index": index, "round_id": round_id, "reply": reply, "created_at": now}
            for (key, index), reply in first.items()]
    statement = insert(table).on_conflict_do_nothing().returning(table.c.episode_id, table.c.step_index)
    written = {(key, index) for key, index in session.execute(statement, rows)}
    kept = dict(first)
    for key, index in first.keys() - written:  # journaled before: that reply stands
        kept[(key, index)] = session.get(ModelReply, (key, index)).reply
    session.commit()
    return kept


def journaled_keys(*, session: Session, round_id: str) -> set[str]:
    """The conversations of a round that have journaled replies (their keys, not their replies)."""
    table = ModelReply.__table__
    return set(session.scalars(sa.select(table.c.episode_id).where(table.c.round_id == round_id).distinct()))


def replies_at(*, session: Session, round_id: str, key: str) -> dict[int, dict[str, Any]]:
    """The journaled replies of one conversation of a round: step index -> reply."""
    table = ModelReply.__table__
    rows = session.execute(sa.select(table.c.step_index, table.c.reply)
                           .where(table.c.episode_id == key, table.c.round_id == round_id))
    return {index: reply for index, reply in rows}


class JudgeReply(SQLModel, table=True):
    """One model judge's reply to one prompt (keyed by a digest of the judge, its model and the
    prompt), committed as it arrives, so a curation killed midway asks no judge twice."""

    __tablename__ = "judge_replies"
    key: str = Field(primary_key=True)
    round_id: str = Field(index=True)
    judge: str
    text: str = ""
    created_at: datetime = Field(default_factory=utcnow, sa_type=UtcDateTime)
    # what the call cost (rows journaled before these columns existed: unknown model, no tokens)
    model: str = Field(default="", sa_column_kwargs={"server_default": ""})
    prompt_tokens: int = Field(default=0, sa_column_kwargs={"server_default": "0"})
    completion_tokens: int = Field(default=0, sa_column_kwargs={"server_default": "0"})


def judge_reply(*, session: Session, key: str) -> str | None:
    """The journaled reply at ``key``, or None."""
    row = session.get(JudgeReply, key)
    return None if row is None else row.text


def append_judge_reply(*, session: Session, key: str, round_id: str, judge: str, text: str,
                       usage: tuple[str, int, int] = ("", 0, 0)) -> None:
    """Journal one judge reply (first write wins) and commit it; ``usage``: (model, prompt tokens,
    completion tokens) of its call."""
    if session.get(JudgeReply, key) is None:
        model, prompt, completion = usage
        session.add(JudgeReply(key=key, round_id=round_id, judge=judge, text=text, model=model,
                               prompt_tokens=prompt, completion_tokens=completion))
        session.commit()


def model_usage(*, session: Session) -> dict[str, list[dict[str, Any]]]:
    """What every round asked of models, from the journals: round id -> one row per role (planner,
    user, writer, judge) and model, with calls and tokens. Each answered call is journaled once,
    so a call is counted once, whatever was replayed, rerun or later discarded."""
    table = ModelReply.__table__
    key = table.c.episode_id
    role = sa.case((key.startswith(USER_KEY), "user"), (key.startswith(WRITER_KEY), "writer"), else_="planner")
    model = sa.func.coalesce(table.c.reply["model"].as_string(), "")
    prompt = sa.func.coalesce(table.c.reply["prompt_tokens"].as_integer(), 0)
    completion = sa.func.coalesce(table.c.reply["completion_tokens"].as_integer(), 0)
    replies = (sa.select(table.c.round_id, role, model, sa.func.count(), sa.func.sum(prompt), sa.func.sum(completion))
               .where(table.c.reply[FALLBACK].as_string().is_(None))  # a user reply the endpoint never gave
               .where(~key.startswith(GAVE_UP_KEY))  # where the endpoint gave up: no reply
               .group_by(table.c.round_id, role, model))
    judges = JudgeReply.__table__.c
    verdicts = sa.select(judges.round_id, sa.literal("judge"), judges.model, sa.func.count(),
                         sa.func.sum(judges.prompt_tokens), sa.func.sum(judges.completion_tokens)
                         ).group_by(judges.round_id, judges.model)
    out: dict[str, list[dict[str, Any]]] = {}
    for rid, who, name, calls, p, c in [*session.execute(replies), *session.execute(verdicts)]:
        out.setdefault(rid, []).append({"role": who, "model": name or "", "calls": int(calls),
                                        "prompt_tokens": int(p or 0), "completion_tokens": int(c or 0)})
    return out


def save_proposal(*, session: Session, data: dict[str, Any]) -> PlanProposal:
    """Store the planner's proposal for the next round (replacing the last one)."""
    row = session.get(PlanProposal, "next") or PlanProposal(id="next")
    row.data = data
    row.computed_at = utcnow()
    session.add(row)
    session.commit()
    session.refresh(row)
    return row


def get_proposal(*, session: Session) -> PlanProposal | None:
    return session.get(PlanProposal, "next")
