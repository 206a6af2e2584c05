"""One DuckDB connection per page render: the warehouse views plus the review state.

Reviews and adjudications live in the state database (SQLite or PostgreSQL); they are
read once per render with a plain SQL select and registered as Arrow tables, so the
queue can join, filter, sort and paginate in one DuckDB query.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import duckdb
import pyarrow as pa
from sqlmodel import select

from review_app.agreement import Overlap, overlap_sql
from warehouse import review_tables as rt
from warehouse import query, state
from warehouse.schemas import TABLES
from warehouse.store import Store

_BASES: OrderedDict[tuple, duckdb.DuckDBPyConnection] = OrderedDict()
_BASES_LOCK = threading.Lock()
_MAX_BASES = 8

_REVIEW_SCHEMA = pa.schema(
    [("episode_id", pa.string()), ("reviewer", pa.string()), ("decision", pa.string()), ("rid", pa.int64())]
)
_ADJ_SCHEMA = pa.schema([("episode_id", pa.string()), ("decision", pa.string()), ("aid", pa.int64())])


def review_connection(store: Store, round_ids: list[str] | None, overlap: Overlap) -> duckdb.DuckDBPyConnection:
    """Warehouse views, and ``votes`` (latest decision per episode and reviewer),
    ``adjudicated`` (latest lead decision per episode) and ``status`` (one row per
    reviewed episode: reviewers, decision that counts, status; see review_app.agreement)."""
    con = warehouse_cursor(store, round_ids)
    with store.session() as s:
        rstmt = select(state.Review.episode_id, state.Review.reviewer, state.Review.decision, state.Review.id)
        astmt = select(rt.Adjudication.episode_id, rt.Adjudication.decision, rt.Adjudication.id)
        if round_ids:
            rstmt = rstmt.where(state.Review.round_id.in_(round_ids))
            astmt = astmt.where(rt.Adjudication.round_id.in_(round_ids))
        reviews = s.exec(rstmt).all()
        adjs = s.exec(astmt).all()
    con.register("_reviews", pa.Table.from_pylist([dict(zip(_REVIEW_SCHEMA.names, r)) for r in reviews], _REVIEW_SCHEMA))
    con.register("_adj", pa.Table.from_pylist([dict(zip(_ADJ_SCHEMA.names, a)) for a in adjs], _ADJ_SCHEMA))
    con.execute(
        "CREATE TEMP VIEW votes AS SELECT episode_id, reviewer, decision FROM _reviews "
        "QUALIFY row_number() OVER (PARTITION BY episode_id, reviewer ORDER BY rid DESC) = 1"
    )
    con.execute(
        "CREATE TEMP VIEW adjudicated AS SELECT episode_id, decision FROM _adj "
        "QUALIFY row_number() OVER (PARTITION BY episode_id ORDER BY aid DESC) = 1"
    )
    required = f"CASE WHEN {overlap_sql('v.episode_id', overlap.share)} THEN {overlap.reviewers} ELSE 1 END"
    con.execute(
        f"""
        CREATE TEMP VIEW status AS
        SELECT v.episode_id,
               list(v.reviewer ORDER BY v.reviewer) AS reviewers,
               count(*) AS n_reviews,
               {required} AS required,
               CASE WHEN any_value(a.decision) IS NOT NULL THEN 'adjudicated'
                    WHEN count(DISTINCT v.decision) > 1 THEN 'disputed'
                    WHEN count(*) < {required} THEN 'partial'
                    ELSE 'decided' END AS status,
               CASE WHEN any_value(a.decision) IS NOT NULL THEN any_value(a.decision)
                    WHEN count(DISTINCT v.decision) = 1 AND count(*) >= {required} THEN any_value(v.decision)
                    END AS final
        FROM votes v LEFT JOIN adjudicated a USING (episode_id)
        GROUP BY v.episode_id
        """
    )
    return con


def warehouse_cursor(store: Store, round_ids: list[str] | None) -> duckdb.DuckDBPyConnection:
    """A cursor with the warehouse views over the recorded shards of ``round_ids``.

    Binding views reads every shard's footer; with many shards that is most of a page
    render, so the bound connection is kept per set of shard files (a new shard makes a
    new key) and each render gets its own cursor (DuckDB cursors are one per thread;
    temporary views registered on one are invisible to the others)."""
    with store.session() as s:
        paths = {t: state.shard_paths(session=s, table_name=t, round_ids=round_ids) for t in TABLES}
    key = (str(store.data_dir), store.state_url, tuple((t, tuple(p)) for t, p in sorted(paths.items())))
    with _BASES_LOCK:
        base = _BASES.get(key)
        if base is None:
            base = query.connect(store.data_dir, paths)
            for table, files in paths.items():
                if not files:  # an empty table is a registered Arrow object, which cursors cannot see
                    base.execute(f"DROP VIEW {table}")
                    base.execute(f"CREATE TABLE {table} AS SELECT * FROM _{table}_empty")
            _BASES[key] = base
            while len(_BASES) > _MAX_BASES:
                _BASES.popitem(last=False)  # not closed: a render may still use a cursor of it
        else:
            _BASES.move_to_end(key)
        return base.cursor()
