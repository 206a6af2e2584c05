"""The review queue: what people should look at first, filtered and paginated in DuckDB.

Order: episodes curation routed to people (a ``routing`` mark that did not pass), then
failures, then the rest (the sample), each by episode id. Each episode's narrow queue row
(ids, family, outcome, rank) is joined from the Parquet shards once per set of shards and
kept in memory (:func:`review_app.data.warehouse_cursor`); a render joins only the review
state to it, and only one page of rows leaves DuckDB, with the total from a window count in
the same query.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from curation.routing import CHECK as ROUTING_CHECK
from review_app.accounts import User
from review_app.data import Overlap, review_connection, warehouse_cursor
from warehouse.contract import REFERENCE_POLICY
from warehouse.store import Store

ROUTED = f"\"check\" = '{ROUTING_CHECK}' AND NOT passed"  # curation asks for human eyes

# reviewer status filter -> SQL condition over q (the joined queue row)
_MINE = "coalesce(list_contains(s.reviewers, ?), false)"  # the only parameter of a status filter
STATUS_FILTERS: dict[str, str] = {
    "to review": f"coalesce(s.status, 'unreviewed') IN ('unreviewed', 'partial') AND NOT {_MINE}",
    "unreviewed": "s.status IS NULL",
    "reviewed by me": _MINE,
    "partial": "s.status = 'partial'",
    "disputed": "s.status = 'disputed'",
    "decided": "s.status IN ('decided', 'adjudicated')",
    "any": "TRUE",
}


@dataclass
class QueueFilter:
    """What the reviewer asked to see. Empty lists and None mean no filter."""

    round_ids: list[str] = field(default_factory=list)
    families: list[str] = field(default_factory=list)
    capabilities: list[str] = field(default_factory=list)
    success: bool | None = None
    marks: list[str] = field(default_factory=list)  # any of these mark values
    status: str = "to review"
    text: str = ""  # in the instruction, or in a tool call's name or arguments (any case)


# the queue's order is (rank, episode id): routed first, then failures, then the rest
QUEUE_ROWS = f"""
    WITH routed AS (SELECT DISTINCT episode_id, true AS routed FROM marks WHERE {ROUTED})
    SELECT e.episode_id, e.round_id, e.family, e.split, e.policy, e.task_id, o.success, o.progress, o.steps,
           coalesce(r.routed, false) AS routed,
           CASE WHEN coalesce(r.routed, false) THEN 0 WHEN NOT o.success THEN 1 ELSE 2 END AS rank
    FROM episodes e JOIN outcomes o USING (episode_id) LEFT JOIN routed r USING (episode_id)
"""


@dataclass
class QueuePage:
    rows: list[dict[str, Any]]
    total: int
    offset: int


def _conditions(flt: QueueFilter, user: User) -> tuple[str, list[str], list[Any]]:
    """The joins, WHERE conditions and their parameters of ``flt`` over the queue's row."""
    where = [STATUS_FILTERS[flt.status]]
    params: list[Any] = [user.name] if "?" in STATUS_FILTERS[flt.status] else []
    if flt.families:
        where.append("q.family IN (SELECT unnest(?::VARCHAR[]))")
        params.append(flt.families)
    if flt.success is not None:
        where.append("q.success = ?")
        params.append(flt.success)
    joins = ""
    if flt.capabilities:
        joins = "LEFT JOIN tasks t USING (task_id)"
        where.append("len(list_intersect(t.capabilities, ?::VARCHAR[])) > 0")
        params.append(flt.capabilities)
    if flt.marks:
        where.append("q.episode_id IN (SELECT episode_id FROM marks WHERE mark IN (SELECT unnest(?::VARCHAR[])))")
        params.append(flt.marks)
    if flt.text.strip():
        where.append(_TEXT)
        params += [flt.text.strip().lower()] * 3
    return joins, where, params


# a literal substring (strpos, not LIKE: % and _ in what is searched for are only themselves)
_TEXT = """(q.episode_id IN (SELECT episode_id FROM episodes WHERE strpos(lower(instruction), ?) > 0) OR q.episode_id IN (
    SELECT episode_id FROM steps
    WHERE strpos(lower(coalesce(action_tool, '')), ?) > 0 OR strpos(lower(coalesce(action_arguments, '')), ?) > 0))"""


def queue_page(
    store: Store, user: User, flt: QueueFilter, *, limit: int = 25, offset: int = 0, overlap: Overlap | None = None
) -> QueuePage:
    """One page of the queue for ``user`` under ``flt``."""
    if flt.status not in STATUS_FILTERS:
        raise ValueError(f"unknown status filter {flt.status!r}")
    if any("\x00" in r for r in flt.round_ids):  # no round has such an id (and PostgreSQL refuses one)
        return QueuePage([], 0, offset)
    con = review_connection(store, flt.round_ids or None, overlap or Overlap(), QUEUE_ROWS)
    joins, where, params = _conditions(flt, user)
    # Only narrow columns go through the sort; the page's text and marks are fetched after.
    sql = f"""
        SELECT q.episode_id, q.round_id, q.family, q.split, q.policy, q.success, q.progress, q.steps, q.routed,
               coalesce(s.status, 'unreviewed') AS status, s.final, coalesce(s.reviewers, []) AS reviewers,
               count(*) OVER () AS total
        FROM queue_rows q
        LEFT JOIN status s USING (episode_id)
        {joins}
        WHERE {' AND '.join(where)}
        ORDER BY q.rank, q.episode_id
        LIMIT ? OFFSET ?
    """
    cols = ["episode_id", "round_id", "family", "split", "policy", "success", "progress", "steps", "routed", "status", "final", "reviewers", "total"]
    out = [dict(zip(cols, r, strict=True)) for r in con.execute(sql, [*params, limit, offset]).fetchall()]
    total = out[0]["total"] if out else _count_beyond(con, sql, params, offset)
    ids = [r["episode_id"] for r in out]
    text = dict(con.execute("SELECT episode_id, instruction FROM episodes WHERE episode_id IN (SELECT unnest(?::VARCHAR[]))", [ids]).fetchall())
    marks: dict[str, list[str]] = {}
    for eid, mark in con.execute(
        'SELECT episode_id, mark FROM marks WHERE NOT passed AND episode_id IN (SELECT unnest(?::VARCHAR[])) ORDER BY "check"',
        [ids],
    ).fetchall():
        marks.setdefault(eid, []).append(mark)
    for r in out:
        del r["total"]
        r["instruction"] = text.get(r["episode_id"], "")
        r["marks"] = marks.get(r["episode_id"], [])
        r["reference"] = r["policy"] == REFERENCE_POLICY  # a reference demonstration, not the model's attempt
    return QueuePage(out, total, offset)


def _count_beyond(con, sql: str, params: list[Any], offset: int) -> int:
    """The total when the page is empty (an offset past the end): ask once for the count."""
    if offset == 0:
        return 0
    row = con.execute(sql, [*params, 1, 0]).fetchone()
    return row[-1] if row else 0


@dataclass(frozen=True)
class NextEpisode:
    """Where "next episode" goes: the episode, and whether the queue wrapped to its start to find it."""

    episode_id: str
    round_id: str
    wrapped: bool


def next_episode(
    store: Store, user: User, flt: QueueFilter, after: str | None, overlap: Overlap | None = None
) -> NextEpisode | None:
    """The episode after ``after`` in the queue's order under ``flt``, so a reviewer who skips
    walks the whole queue; past the end, the first one again (``wrapped``). ``after`` need not be
    in the queue any more (it was just decided, or the filters changed): its place in the order
    is still known. None when the queue holds nothing but ``after``."""
    if flt.status not in STATUS_FILTERS:
        raise ValueError(f"unknown status filter {flt.status!r}")
    if any("\x00" in r for r in flt.round_ids):
        return None
    con = review_connection(store, flt.round_ids or None, overlap or Overlap(), QUEUE_ROWS)
    joins, where, params = _conditions(flt, user)
    ranked = """
        SELECT q.episode_id, q.round_id, q.rank
        FROM queue_rows q
        LEFT JOIN status s USING (episode_id)
        {joins}
        {where}
    """
    sql = f"""
        WITH here AS (SELECT rank, episode_id FROM ({ranked.format(joins="", where="WHERE q.episode_id = ?")}) LIMIT 1),
        q AS ({ranked.format(joins=joins, where="WHERE " + " AND ".join(where))})
        SELECT q.episode_id, q.round_id,
               here.rank IS NOT NULL AND (q.rank, q.episode_id) <= (here.rank, here.episode_id) AS wrapped
        FROM q LEFT JOIN here ON TRUE
        WHERE q.episode_id IS DISTINCT FROM ?
        ORDER BY wrapped, q.rank, q.episode_id
        LIMIT 1
    """
    row = con.execute(sql, [after, *params, after]).fetchone()
    return NextEpisode(row[0], row[1], bool(row[2])) if row else None


def filter_options(store: Store, round_ids: list[str] | None) -> dict[str, list[str]]:
    """Values the filters can take in these rounds: families, capabilities, marks."""
    con = warehouse_cursor(store, round_ids or None)
    fams = [r[0] for r in con.execute("SELECT DISTINCT family FROM episodes ORDER BY 1").fetchall()]
    caps = [r[0] for r in con.execute("SELECT DISTINCT unnest(capabilities) FROM tasks ORDER BY 1").fetchall()]
    marks = [r[0] for r in con.execute("SELECT DISTINCT mark FROM marks ORDER BY 1").fetchall()]
    return {"families": fams, "capabilities": caps, "marks": marks}


def matching_episodes(
    store: Store, user: User, flt: QueueFilter, overlap: Overlap | None = None, *, limit: int = 100_000
) -> list[dict[str, Any]]:
    """Every episode of the queue under ``flt`` (in its order, up to ``limit``): id, round, family,
    success, whether it is a reference demonstration and whether ``user`` has decided it."""
    if flt.status not in STATUS_FILTERS:
        raise ValueError(f"unknown status filter {flt.status!r}")
    if any("\x00" in r for r in flt.round_ids):
        return []
    con = review_connection(store, flt.round_ids or None, overlap or Overlap(), QUEUE_ROWS)
    joins, where, params = _conditions(flt, user)
    sql = f"""
        SELECT q.episode_id, q.round_id, q.family, q.success, q.policy = ? AS reference,
               coalesce(list_contains(s.reviewers, ?), false) AS mine
        FROM queue_rows q
        LEFT JOIN status s USING (episode_id)
        {joins}
        WHERE {' AND '.join(where)}
        ORDER BY q.rank, q.episode_id
        LIMIT ?
    """
    cols = ["episode_id", "round_id", "family", "success", "reference", "mine"]
    rows = con.execute(sql, [REFERENCE_POLICY, user.name, *params, limit]).fetchall()
    return [dict(zip(cols, r, strict=True)) for r in rows]
