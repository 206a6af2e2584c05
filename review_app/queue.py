"""The review queue: what people should look at first, filtered and paginated in DuckDB.

Order: episodes curation routed to people (a ``route`` mark that did not pass), then
failures, then the rest (the sample), each by episode id. Only one page of rows leaves
DuckDB, with the total from a window count in the same query, so a warehouse of
100,000 episodes opens as fast as one of 100.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from review_app.accounts import User
from review_app.data import Overlap, review_connection
from warehouse.store import Store

ROUTED = "\"check\" = 'route' AND NOT passed"  # curation asks for human eyes

# reviewer status filter -> SQL condition over q (the joined queue row)
STATUS_FILTERS: dict[str, str] = {
    "to review": "coalesce(q.status, 'unreviewed') IN ('unreviewed', 'partial') AND NOT q.mine",
    "unreviewed": "q.status IS NULL",
    "reviewed by me": "q.mine",
    "partial": "q.status = 'partial'",
    "disputed": "q.status = 'disputed'",
    "decided": "q.status IN ('decided', 'adjudicated')",
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


@dataclass
class QueuePage:
    rows: list[dict[str, Any]]
    total: int
    offset: int


_COLUMNS = [
    "episode_id", "round_id", "family", "instruction", "success", "progress", "steps",
    "routed", "marks", "status", "final", "reviewers", "total",
]


def queue_page(
    store: Store, user: User, flt: QueueFilter, *, limit: int = 25, offset: int = 0, overlap: Overlap | None = None
) -> QueuePage:
    """One page of the queue for ``user`` under ``flt``."""
    if flt.status not in STATUS_FILTERS:
        raise ValueError(f"unknown status filter {flt.status!r}")
    con = review_connection(store, flt.round_ids or None, overlap or Overlap())
    where = [STATUS_FILTERS[flt.status]]
    params: list[Any] = [user.name]
    if flt.families:
        where.append("q.family IN (SELECT unnest(?::VARCHAR[]))")
        params.append(flt.families)
    if flt.success is not None:
        where.append("q.success = ?")
        params.append(flt.success)
    if flt.capabilities:
        where.append("len(list_intersect(q.capabilities, ?::VARCHAR[])) > 0")
        params.append(flt.capabilities)
    if flt.marks:
        where.append("len(list_intersect(q.all_marks, ?::VARCHAR[])) > 0")
        params.append(flt.marks)
    sql = f"""
        WITH m AS (
            SELECT episode_id,
                   bool_or({ROUTED}) AS routed,
                   list(mark ORDER BY "check") FILTER (WHERE NOT passed) AS failing,
                   list(DISTINCT mark) AS all_marks
            FROM marks GROUP BY episode_id
        ),
        q AS (
            SELECT e.episode_id, e.round_id, e.family, e.instruction, o.success, o.progress, o.steps,
                   coalesce(m.routed, false) AS routed, coalesce(m.failing, []) AS marks,
                   coalesce(m.all_marks, []) AS all_marks, coalesce(t.capabilities, []) AS capabilities,
                   s.status, s.final, coalesce(s.reviewers, []) AS reviewers,
                   coalesce(list_contains(s.reviewers, ?), false) AS mine
            FROM episodes e
            JOIN outcomes o USING (episode_id)
            LEFT JOIN tasks t USING (task_id)
            LEFT JOIN m USING (episode_id)
            LEFT JOIN status s USING (episode_id)
        )
        SELECT episode_id, round_id, family, instruction, success, progress, steps, routed, marks,
               coalesce(status, 'unreviewed'), final, reviewers, count(*) OVER () AS total
        FROM q
        WHERE {' AND '.join(where)}
        ORDER BY CASE WHEN routed THEN 0 WHEN NOT success THEN 1 ELSE 2 END, episode_id
        LIMIT ? OFFSET ?
    """
    rows = con.execute(sql, [*params, limit, offset]).fetchall()
    out = [dict(zip(_COLUMNS, r, strict=True)) for r in rows]
    total = out[0].pop("total") if out else _count_beyond(con, sql, params, offset)
    for r in out:
        r.pop("total", None)
    return QueuePage(out, total, offset)


def _count_beyond(con, sql: str, params: list[Any], offset: int) -> int:
    """The total when the page is empty (an offset past the end): ask once for the count."""
    if offset == 0:
        return 0
    row = con.execute(sql, [*params, 1, 0]).fetchone()
    return row[-1] if row else 0


def next_episode(store: Store, user: User, flt: QueueFilter, after: str | None, overlap: Overlap | None = None) -> str | None:
    """The first episode of the queue other than ``after`` (the one just decided)."""
    page = queue_page(store, user, flt, limit=2, offset=0, overlap=overlap)
    for row in page.rows:
        if row["episode_id"] != after:
            return row["episode_id"]
    return None


def filter_options(store: Store, round_ids: list[str] | None) -> dict[str, list[str]]:
    """Values the filters can take in these rounds: families, capabilities, marks."""
    con = store.duck(round_ids or None)
    fams = [r[0] for r in con.execute("SELECT DISTINCT family FROM episodes ORDER BY 1").fetchall()]
    caps = [r[0] for r in con.execute("SELECT DISTINCT unnest(capabilities) FROM tasks ORDER BY 1").fetchall()]
    marks = [r[0] for r in con.execute("SELECT DISTINCT mark FROM marks ORDER BY 1").fetchall()]
    return {"families": fams, "capabilities": caps, "marks": marks}
