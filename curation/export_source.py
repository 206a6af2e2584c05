"""What exports read, streamed: episodes with their marks, outcome and task, and their steps.

Both streams are ordered by (task_id, episode_id), so a consumer can merge them and
group rollouts by task while holding only one task's episodes in memory.
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
MODEL_ATTEMPT = f"e.policy <> '{REFERENCE_POLICY}'"  # SQL: an attempt of the model, not a reference demonstration


def episode_sql(round_ids: list[str], tool_schemas: bool = False, inferred: bool = False, messages: bool = False) -> str:
    """Episodes of the rounds with marks, outcome and task; ``tool_schemas`` / ``inferred``: the tasks table has
    the ``tool_schemas`` / ``tool_schemas_inferred`` column (older data has not)."""
    pivot = ",\n".join(
        f"max(mark) FILTER (WHERE \"check\" = '{c}') AS m_{c}, bool_and(passed) FILTER (WHERE \"check\" = '{c}') AS p_{c}"
        for c in _MARK_CHECKS
    )
    return f"""
        WITH m AS (
            SELECT episode_id, {pivot},
                   max(detail) FILTER (WHERE "check" = 'heuristics') AS heuristics_detail,
                   max(reason) FILTER (WHERE "check" = 'selection') AS selection_reason
            FROM marks GROUP BY episode_id
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
        LEFT JOIN (SELECT DISTINCT ON (task_id) * FROM tasks) t ON t.task_id = e.task_id
        LEFT JOIN m ON m.episode_id = e.episode_id
        WHERE {_ROUNDS_FILTER}
        ORDER BY e.task_id, e.episode_id
    """


def step_sql(round_ids: list[str]) -> str:
    return f"""
        SELECT s.episode_id, s."index", s.actor, s.action_kind, s.action_tool, s.action_arguments, s.action_call_id,
               s.action_text, s.action_raw, s.feedback_ok, s.feedback_error, s.feedback_result, s.feedback_notices,
               s.verification_label, s.verification_progress
        FROM steps s JOIN episodes e USING (episode_id)
        WHERE {_ROUNDS_FILTER}
        ORDER BY e.task_id, s.episode_id, s."index"
    """


def _rows(con: duckdb.DuckDBPyConnection, sql: str, round_ids: list[str], batch: int) -> Iterator[dict[str, Any]]:
    reader = con.cursor().sql(sql, params={"rounds": list(round_ids)}).to_arrow_reader(batch)
    for rb in reader:
        yield from rb.to_pylist()


def episodes_with_steps(
    con: duckdb.DuckDBPyConnection, round_ids: list[str], batch: int = 4096
) -> Iterator[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """(episode row, its step rows in order), streamed in (task_id, episode_id) order."""
    steps = _rows(con, step_sql(round_ids), round_ids, batch)
    pending = next(steps, None)
    sql = episode_sql(round_ids, has_column(con, "tasks", "tool_schemas"), has_column(con, "tasks", "tool_schemas_inferred"),
                      has_column(con, "episodes", "messages"))
    for ep in _rows(con, sql, round_ids, batch):
        own = []
        while pending is not None and pending["episode_id"] == ep["episode_id"]:
            own.append(pending)
            pending = next(steps, None)
        yield ep, own


def episode_rows(con: duckdb.DuckDBPyConnection, round_ids: list[str], batch: int = 4096) -> Iterator[dict[str, Any]]:
    """Episode rows (as :func:`episode_sql`) without their steps, in (task_id, episode_id) order."""
    return _rows(con, episode_sql(round_ids, has_column(con, "tasks", "tool_schemas")), round_ids, batch)


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


def task_sql(round_ids: list[str]) -> str:
    """One row per task of the rounds with the group statistics of the model's rollouts (reference
    demonstrations are counted apart: they are not the model's attempts)."""
    return f"""
        SELECT t.*, g.rollouts, g.successes, g.mean_progress, g.reference_demonstrations, g.policies, g.rounds
        FROM (SELECT DISTINCT ON (task_id) * FROM tasks) t
        JOIN (
            SELECT e.task_id, count(*) FILTER (WHERE {MODEL_ATTEMPT}) AS rollouts,
                   count(*) FILTER (WHERE o.success AND {MODEL_ATTEMPT}) AS successes,
                   avg(o.progress) FILTER (WHERE {MODEL_ATTEMPT}) AS mean_progress,
                   count(*) FILTER (WHERE NOT {MODEL_ATTEMPT}) AS reference_demonstrations,
                   list(DISTINCT e.policy ORDER BY e.policy) AS policies,
                   list(DISTINCT e.round_id ORDER BY e.round_id) AS rounds
            FROM episodes e JOIN outcomes o USING (episode_id)
            WHERE {_ROUNDS_FILTER}
            GROUP BY e.task_id
        ) g USING (task_id)
        ORDER BY t.task_id
    """


def task_rows(con: duckdb.DuckDBPyConnection, round_ids: list[str], batch: int = 4096) -> Iterator[dict[str, Any]]:
    return _rows(con, task_sql(round_ids), round_ids, batch)
