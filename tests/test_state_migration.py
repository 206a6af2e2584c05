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
    engine = state.make_engine(url)  # what every command does when it opens the database
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
