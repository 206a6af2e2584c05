"""What exports read, streamed: episodes with their marks, outcome and task, and their steps.

Both streams are ordered by (task_id, episode_id), so a consumer can merge them and
group rollouts by task while holding only one task's episodes in memory.

They are read a slice of whole tasks at a time (:func:`task_slices`, about
:data:`SLICE_EPISODES` episodes each, in task order), so no query holds a round: at a
million episodes one query over the whole round (the marks pivoted, joined to the tasks,
sorted) held 4-6 GiB, and DuckDB stopped with an out-of-memory error under a
``memory_limit`` rather than spill it. Each slice scans the tables again (a filter on the
task id), which costs a few percent of an export's time at a million.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import duckdb

from warehouse.contract import REFERENCE_POLICY

_MARK_CHECKS = ("schema", "replay", "heuristics", "exact_duplicate", "near_duplicate", "selection", "routing", "verified")


# The rounds are a query parameter (``$rounds``), never spliced into the SQL text.
_ROUNDS_FILTER = "e.round_id IN (SELECT unnest($rounds::VARCHAR[]))"
SLICE_EPISODES = 100_000  # episodes per slice: at this size a slice's two queries hold a few hundred MiB
Bounds = tuple[str | None, str | None]  # a slice: (after, upto] task ids, None for no bound
WHOLE: Bounds = (None, None)
MODEL_ATTEMPT = f"e.policy <> '{REFERENCE_POLICY}'"  # SQL: an attempt of the model, not a reference demonstration


def _in_slice(col: str, bounds: Bounds) -> str:
    """SQL: ``col`` within the slice ``bounds`` (its values are the parameters ``$after`` and ``$upto``)."""
    after, upto = bounds
    return "".join([f" AND {col} > $after" if after is not None else "", f" AND {col} <= $upto" if upto is not None else ""])


def _params(round_ids: list[str], bounds: Bounds) -> dict[str, Any]:
    after, upto = bounds
    return {"rounds": list(round_ids), **({"after": after} if after is not None else {}),
            **({"upto": upto} if upto is not None else {})}


def episode_sql(round_ids: list[str], tool_schemas: bool = False, inferred: bool = False, messages: bool = False,
                bounds: Bounds = WHOLE) -> str:
    """Episodes of the rounds (of the tasks in ``bounds``) with marks, outcome and task; ``tool_schemas`` /
    ``inferred``: the tasks table has the ``tool_schemas`` / ``tool_schemas_inferred`` column (older data has not)."""
    pivot = ",\n".join(
        f"max(mark) FILTER (WHERE \"check\" = '{c}') AS m_{c}, bool_and(passed) FILTER (WHERE \"check\" = '{c}') AS p_{c}"
        for c in _MARK_CHECKS
    )
    episodes = f"{_ROUNDS_FILTER}{_in_slice('e.task_id', bounds)}"
    # the marks of the slice's episodes alone are pivoted, and its tasks' rows alone deduplicated
    return f"""
        WITH m AS (
            SELECT episode_id, {pivot},
                   max(detail) FILTER (WHERE "check" = 'heuristics') AS heuristics_detail,
                   max(reason) FILTER (WHERE "check" = 'selection') AS selection_reason
            FROM marks WHERE episode_id IN (SELECT e.episode_id FROM episodes e WHERE {episodes})
            GROUP BY episode_id
        )
        SELECT e.episode_id, e.task_id, e.round_id, e.family, e.template, e.split, e.instruction, e.policy,
               e.model, e.rollout, e.source, {"e.messages" if messages else "NULL"} AS messages,
               o.success, o.progress, o.steps AS n_steps, o.tool_calls, o.prompt_tokens, o.completion_tokens,
               json_extract_string(o.failure, '$.type') AS failure_type,
               json_extract_string(o.failure, '$.side') AS failure_side,
               json_extract_string(o.failure, '$.category') AS failure_category,
               t.seed, t.difficulty, t.tools AS task_tools, t.split AS task_split,
               {"t.tool_schemas" if tool_schemas else "NULL"} AS task_tool_schemas,
               {"t.tool_schemas_inferred" if inferred else "NULL"} AS task_tool_schemas_inferred,
               m.* EXCLUDE (episode_id)
        FROM episodes e
        LEFT JOIN outcomes o USING (episode_id)
        LEFT JOIN (SELECT DISTINCT ON (task_id) * FROM tasks WHERE true{_in_slice('task_id', bounds)}) t
            ON t.task_id = e.task_id
        LEFT JOIN m ON m.episode_id = e.episode_id
        WHERE {episodes}
        ORDER BY e.task_id, e.episode_id
    """


def step_sql(round_ids: list[str], bounds: Bounds = WHOLE) -> str:
    return f"""
        SELECT s.episode_id, s."index", s.actor, s.action_kind, s.action_tool, s.action_arguments, s.action_call_id,
               s.action_text, s.action_raw, s.feedback_ok, s.feedback_error, s.feedback_result, s.feedback_notices,
               s.verification_label, s.verification_progress
        FROM steps s JOIN episodes e USING (episode_id)
        WHERE {_ROUNDS_FILTER}{_in_slice('e.task_id', bounds)}
        ORDER BY e.task_id, s.episode_id, s."index"
    """


def task_slices(con: duckdb.DuckDBPyConnection, round_ids: list[str], size: int | None = None) -> list[Bounds]:
    """Consecutive slices of the rounds' tasks in task order, whole tasks of about ``size`` (default
    :data:`SLICE_EPISODES`) episodes each (a task of more is a slice of its own); together they cover
    every episode once."""
    sql = f"""
        SELECT max(task_id) FROM (
            SELECT task_id, (sum(n) OVER (ORDER BY task_id) - n) // $size AS slice
            FROM (SELECT e.task_id, count(*) AS n FROM episodes e WHERE {_ROUNDS_FILTER} GROUP BY e.task_id)
        ) GROUP BY slice ORDER BY 1
    """
    ends = [r[0] for r in con.cursor().execute(sql, {"rounds": list(round_ids), "size": size or SLICE_EPISODES}).fetchall()]
    # the first slice has no lower bound and the last no upper one
    return [(ends[i - 1] if i else None, end if i < len(ends) - 1 else None) for i, end in enumerate(ends)] or [WHOLE]


def _rows(con: duckdb.DuckDBPyConnection, sql: str, round_ids: list[str], batch: int,
          bounds: Bounds = WHOLE) -> Iterator[dict[str, Any]]:
    cur = con.cursor()  # a cursor of its own, closed once read, so two streams can be read at once
    try:
        for rb in cur.sql(sql, params=_params(round_ids, bounds)).to_arrow_reader(batch):
            yield from rb.to_pylist()
    finally:
        cur.close()


def episodes_with_steps(
    con: duckdb.DuckDBPyConnection, round_ids: list[str], batch: int = 4096
) -> Iterator[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """(episode row, its step rows in order), streamed in (task_id, episode_id) order, a slice at a time."""
    flags = (has_column(con, "tasks", "tool_schemas"), has_column(con, "tasks", "tool_schemas_inferred"),
             has_column(con, "episodes", "messages"))
    for bounds in task_slices(con, round_ids):
        steps = _rows(con, step_sql(round_ids, bounds), round_ids, batch, bounds)
        pending = next(steps, None)
        for ep in _rows(con, episode_sql(round_ids, *flags, bounds=bounds), round_ids, batch, bounds):
            own = []
            while pending is not None and pending["episode_id"] == ep["episode_id"]:
                own.append(pending)
                pending = next(steps, None)
            yield ep, own
        steps.close()


def episode_rows(con: duckdb.DuckDBPyConnection, round_ids: list[str], batch: int = 4096,
                 bounds: Bounds | None = None) -> Iterator[dict[str, Any]]:
    """Episode rows (as :func:`episode_sql`) without their steps, in (task_id, episode_id) order: of the tasks in
    ``bounds``, or of every slice in turn (None)."""
    tool_schemas = has_column(con, "tasks", "tool_schemas")
    for b in [bounds] if bounds is not None else task_slices(con, round_ids):
        yield from _rows(con, episode_sql(round_ids, tool_schemas, bounds=b), round_ids, batch, b)


def episode_count(con: duckdb.DuckDBPyConnection, round_ids: list[str]) -> int:
    """How many episodes :func:`episode_rows` yields for ``round_ids``."""
    sql = f"SELECT count(*) FROM episodes e WHERE {_ROUNDS_FILTER}"
    return con.cursor().execute(sql, {"rounds": list(round_ids)}).fetchone()[0]


def has_column(con: duckdb.DuckDBPyConnection, table: str, column: str) -> bool:
    """Whether ``table``'s view has ``column`` (shards of older schema versions lack newer columns)."""
    try:
        return column in {d[0] for d in con.execute(f"SELECT * FROM {table} LIMIT 0").description}
    except duckdb.Error:
        return False


def masked_steps(ep: dict[str, Any]) -> set[int]:
    """Step indices the heuristics marked wrong (left out of the SFT loss)."""
    text = ep.get("heuristics_detail")
    if not text:
        return set()
    return set(json.loads(text).get("masked_steps", []))


def task_sql(round_ids: list[str], bounds: Bounds = WHOLE) -> str:
    """One row per task of the rounds (in ``bounds``) with the group statistics of the model's rollouts (reference
    demonstrations are counted apart: they are not the model's attempts)."""
    return f"""
        SELECT t.*, g.rollouts, g.successes, g.mean_progress, g.reference_demonstrations, g.policies, g.rounds
        FROM (SELECT DISTINCT ON (task_id) * FROM tasks WHERE true{_in_slice('task_id', bounds)}) t
        JOIN (
            SELECT e.task_id, count(*) FILTER (WHERE {MODEL_ATTEMPT}) AS rollouts,
                   count(*) FILTER (WHERE o.success AND {MODEL_ATTEMPT}) AS successes,
                   avg(o.progress) FILTER (WHERE {MODEL_ATTEMPT}) AS mean_progress,
                   count(*) FILTER (WHERE NOT {MODEL_ATTEMPT}) AS reference_demonstrations,
                   list(DISTINCT e.policy ORDER BY e.policy) AS policies,
                   list(DISTINCT e.round_id ORDER BY e.round_id) AS rounds
            FROM episodes e JOIN outcomes o USING (episode_id)
            WHERE {_ROUNDS_FILTER}{_in_slice('e.task_id', bounds)}
            GROUP BY e.task_id
        ) g USING (task_id)
        ORDER BY t.task_id
    """


def task_rows(con: duckdb.DuckDBPyConnection, round_ids: list[str], batch: int = 4096,
              bounds: Bounds | None = None) -> Iterator[dict[str, Any]]:
    """Rows of :func:`task_sql` in task order: of the tasks in ``bounds``, or of every slice in turn (None)."""
    for b in [bounds] if bounds is not None else task_slices(con, round_ids):
        yield from _rows(con, task_sql(round_ids, b), round_ids, batch, b)
