"""Opening an episode asks the state database one statement, outside a transaction (issue 33: under 20
reviewers on PostgreSQL every round trip to the server waits its turn for a core; an open used to be a
transaction of five queries, one per table, where SQLite answers in the process)."""

from __future__ import annotations

import sqlite3

from sqlalchemy import event

from review_app.episode import load_episode
from tests.review_fixtures import make_round
from warehouse.store import Store


def _statements(store: Store) -> list[tuple[str, bool]]:
    """(statement, whether its connection committed it by itself) for each statement the store sends from now."""
    seen: list[tuple[str, bool]] = []

    def sent(conn, _cursor, statement, *_args) -> None:
        raw = conn.connection.dbapi_connection
        alone = raw.isolation_level is None if isinstance(raw, sqlite3.Connection) else raw.autocommit
        seen.append((statement, alone))

    event.listen(store.engine, "before_cursor_execute", sent)
    return seen


def test_an_episode_open_is_one_statement_with_no_transaction(tmp_path, state_url):
    store = Store(tmp_path / "d", state_url)
    ids = make_round(store, n_tasks=3)
    seen = _statements(store)
    view = load_episode(store, ids[1], "r0001")
    assert view.episode.episode_id == ids[1] and view.steps
    assert len(seen) == 1 and seen[0][1], seen
