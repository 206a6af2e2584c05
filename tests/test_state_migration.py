"""A state database made by an earlier version gains the new columns when opened; its
rows keep their meaning. On SQLite and PostgreSQL."""

from __future__ import annotations

import sqlalchemy as sa
from sqlmodel import Session, SQLModel, select

from warehouse import review_tables as rt
from warehouse import state

NEW_COLUMNS = {"reviews": "recovered", "adjudications": "recovered", "review_drafts": "recovered"}


def _create_old_tables(engine: sa.Engine) -> None:
    """The review tables as the version before "recovered" created them, with a row each."""
    old = sa.MetaData()
    for name, new in NEW_COLUMNS.items():
        sa.Table(name, old, *[c.copy() for c in SQLModel.metadata.tables[name].columns if c.name != new])
    old.create_all(engine)
    when = "2026-01-01 00:00:00+00"
    with engine.begin() as conn:
        conn.execute(sa.text("INSERT INTO reviews (episode_id, round_id, reviewer, decision, reason, first_wrong_step, "
                             f"decided_at) VALUES ('e1', 'r0001', 'ann', 'approve', '', 2, '{when}')"))
        conn.execute(sa.text("INSERT INTO adjudications (episode_id, round_id, lead, decision, reason, first_wrong_step, "
                             f"decided_at) VALUES ('e1', 'r0001', 'lea', 'approve', '', 1, '{when}')"))


def test_an_old_state_database_gains_the_recovered_column(tmp_path, state_url):
    url = state_url or f"sqlite:///{tmp_path / 'state.db'}"
    old = sa.create_engine(url)
    _create_old_tables(old)
    old.dispose()
    engine = state.make_sql_engine(url)  # what every command does when it opens the database
    cols = {t: {c["name"] for c in sa.inspect(engine).get_columns(t)} for t in NEW_COLUMNS}
    assert all(NEW_COLUMNS[t] in c for t, c in cols.items()), cols
    with Session(engine) as s:
        [review] = s.exec(select(state.Review)).all()
        [adj] = s.exec(select(rt.Adjudication)).all()
        assert (review.first_wrong_step, review.recovered) == (2, False)  # an old mark masks from its step on
        assert adj.recovered is False
        s.add(state.Review(episode_id="e2", round_id="r0001", reviewer="ann", decision="approve",
                           first_wrong_step=1, recovered=True))
        s.commit()
        assert s.exec(select(state.Review).where(state.Review.episode_id == "e2")).one().recovered is True
    with engine.connect() as conn:
        assert state.add_missing_columns(conn) == []  # a second open changes nothing
    engine.dispose()


def test_an_old_journal_of_judge_replies_gains_its_usage_and_counts_as_unknown(tmp_path, state_url):
    url = state_url or f"sqlite:///{tmp_path / 'state.db'}"
    old = sa.create_engine(url)
    usage = {"model", "prompt_tokens", "completion_tokens"}
    meta = sa.MetaData()
    sa.Table("judge_replies", meta, *[c.copy() for c in SQLModel.metadata.tables["judge_replies"].columns
                                      if c.name not in usage])
    meta.create_all(old)
    with old.begin() as conn:
        conn.execute(sa.text("INSERT INTO judge_replies (key, round_id, judge, text, created_at) "
                             "VALUES ('k1', 'r0001', 'judge-1', '{}', '2026-01-01 00:00:00+00')"))
    old.dispose()
    engine = state.make_sql_engine(url)
    with Session(engine) as s:
        state.append_judge_reply(session=s, key="k2", round_id="r0001", judge="judge-1", text="{}",
                                 usage=("m", 120, 8))
        reply = {"content": "x", "tool_calls": [], "prompt_tokens": 50, "completion_tokens": 5, "model": "m"}
        state.append_replies(session=s, round_id="r0001", replies=[
            ("e1", 0, reply), ("e1", 1, reply), ("user:e1", 0, reply), ("writer:t1", 0, reply),
            ("e2", 0, {k: v for k, v in reply.items() if k != "model"})])  # journaled before replies named it
        rows = sorted(state.model_usage(session=s)["r0001"], key=lambda r: (r["role"], r["model"]))
    # the old judge row counts as a call of an unknown model with no tokens; the new one with its usage
    assert rows == [{"role": "judge", "model": "", "calls": 1, "prompt_tokens": 0, "completion_tokens": 0},
                    {"role": "judge", "model": "m", "calls": 1, "prompt_tokens": 120, "completion_tokens": 8},
                    {"role": "planner", "model": "", "calls": 1, "prompt_tokens": 50, "completion_tokens": 5},
                    {"role": "planner", "model": "m", "calls": 2, "prompt_tokens": 100, "completion_tokens": 10},
                    {"role": "user", "model": "m", "calls": 1, "prompt_tokens": 50, "completion_tokens": 5},
                    {"role": "writer", "model": "m", "calls": 1, "prompt_tokens": 50, "completion_tokens": 5}]
    engine.dispose()
