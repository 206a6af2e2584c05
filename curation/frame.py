"""The columns the cascade reads, pulled from the warehouse in one query per table.

The cascade works on columns (Arrow, then pandas/numpy), not on one pydantic object
per row: at 100k episodes that is the difference between seconds and minutes. Each
query states exactly what it reads, so every step declares its inputs.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import duckdb
import pandas as pd
import pyarrow as pa

from warehouse.contract import TaskSpec
from warehouse.schemas import TABLES, from_row


def query_frame(con: duckdb.DuckDBPyConnection, sql: str, params: dict | None = None) -> pd.DataFrame:
    """``con.execute(sql, params).df()``, the same frame, faster: DuckDB's ``df()`` makes a Python string
    of every value and pandas then its string column of them (about a second for 100,000 episodes'
    steps), while Arrow hands pandas the strings at once. Only columns of strings (with at least one)
    go that way; DuckDB converts the rest by its own rules (a nullable integer stays an integer, an
    all-null column is an object column), so the dtypes are those of ``df()``."""
    table = con.sql(sql, params=params).to_arrow_table()
    strings = [f.name for f in table.schema
               if pa.types.is_string(f.type) and table.column(f.name).null_count < len(table)]
    rest = [n for n in table.column_names if n not in strings]
    if not strings:
        return duckdb.from_arrow(table, connection=con).df()
    parts = [table.select(strings).to_pandas()]
    if rest:
        parts.append(duckdb.from_arrow(table.select(rest), connection=con).df())
    return pd.concat(parts, axis=1)[table.column_names]


EPISODE_COLUMNS = """
    e.episode_id, e.round_id, e.task_id, e.family, e.template, e.split, e.instruction, e.policy,
    e.model, e.rollout, e.source, e.schema_version,
    o.episode_id IS NOT NULL AS has_outcome, o.termination, o.finish_status, o.success, o.progress,
    o.final_state_hash, o.steps AS outcome_steps, o.tool_calls, o.prompt_tokens, o.completion_tokens,
    o.claims,
    json_extract_string(o.failure, '$.type') AS failure_type,
    t.task_id IS NOT NULL AS has_task, t.difficulty, t.step_budget, t.optimal_steps, t.seed,
    t.public_params AS task_values,
    s.n_steps, s.n_planner_steps, s.min_index, s.max_index, s.n_distinct_index
"""


def episode_frame(con: duckdb.DuckDBPyConnection, round_id: str) -> pd.DataFrame:
    """One row per episode of ``round_id``: episode, outcome, task and step counts."""
    sql = f"""
        WITH s AS (
            SELECT episode_id, count(*) AS n_steps, min("index") AS min_index, max("index") AS max_index,
                   count(*) FILTER (WHERE coalesce(actor, '') NOT LIKE 'subagent%') AS n_planner_steps,
                   count(DISTINCT "index") AS n_distinct_index
            FROM steps WHERE episode_id IN (SELECT episode_id FROM episodes WHERE round_id = $r)
            GROUP BY episode_id
        )
        SELECT {EPISODE_COLUMNS}
        FROM episodes e
        LEFT JOIN outcomes o USING (episode_id)
        LEFT JOIN (SELECT DISTINCT ON (task_id) task_id, difficulty, step_budget, optimal_steps, seed, public_params
                   FROM tasks) t ON t.task_id = e.task_id
        LEFT JOIN s ON s.episode_id = e.episode_id
        WHERE e.round_id = $r
        ORDER BY e.episode_id
    """
    return query_frame(con, sql, {"r": round_id})


def step_frame(con: duckdb.DuckDBPyConnection, round_id: str, episode_ids: list[str] | None = None) -> pd.DataFrame:
    """One row per step of ``round_id``'s episodes (those of ``episode_ids`` only, when given), ordered by
    episode and index.

    Free-form results are left out (they are large); the claims check fetches the few
    it needs."""
    columns = """episode_id, "index", actor, action_kind, action_tool, action_arguments, action_call_id,
               CASE WHEN action_kind = 'message' THEN action_text END AS action_text,
               feedback_ok, json_extract_string(feedback_error, '$.code') AS error_code,
               verification_label"""
    if episode_ids is None:
        return query_frame(con, f"""
            SELECT {columns} FROM steps
            WHERE episode_id IN (SELECT episode_id FROM episodes WHERE round_id = $r)
            ORDER BY episode_id, "index"
        """, {"r": round_id})
    con.register("_chunk", pa.table({"episode_id": pa.array(episode_ids, pa.string())}))
    try:
        return query_frame(con, f"""
            SELECT {columns} FROM steps
            WHERE episode_id IN (SELECT episode_id FROM _chunk)
              AND episode_id IN (SELECT episode_id FROM episodes WHERE round_id = $r)
            ORDER BY episode_id, "index"
        """, {"r": round_id})
    finally:
        con.unregister("_chunk")


def step_results(con: duckdb.DuckDBPyConnection, episode_ids: list[str]) -> pd.DataFrame:
    """Call ids and results of the given episodes' steps (for grounding claims)."""
    if not episode_ids:
        return pd.DataFrame(columns=["episode_id", "index", "action_call_id", "feedback_ok", "feedback_result"])
    con.register("_want", pd.DataFrame({"episode_id": episode_ids}))
    try:
        return query_frame(
            con, 'SELECT episode_id, "index", action_call_id, feedback_ok, feedback_result FROM steps '
            "WHERE episode_id IN (SELECT episode_id FROM _want) ORDER BY episode_id, \"index\"")
    finally:
        con.unregister("_want")


class TaskLookup(Mapping):
    """Tasks by id, built on demand from their Arrow rows (50k TaskSpec objects held at
    once would cost far more memory than the columns)."""

    def __init__(self, table: pa.Table):
        self.table = table
        self.index = {tid: i for i, tid in enumerate(table.column("task_id").to_pylist())}

    def __getitem__(self, task_id: str) -> TaskSpec:
        i = self.index[task_id]
        return from_row(TABLES["tasks"], self.table.slice(i, 1).to_pylist()[0])

    def __iter__(self) -> Iterator[str]:
        return iter(self.index)

    def __len__(self) -> int:
        return len(self.index)

    def __contains__(self, task_id: object) -> bool:
        return task_id in self.index

    def split(self, groups: list[list[str]]) -> list[TaskLookup]:
        """The tasks of each group (ids of this lookup), each group a lookup of its own, taken from the
        columns in one pass. Each is a slice of that take; it pickles as its own rows alone (see
        :meth:`__reduce__`), so it is cheap to send to another process."""
        rows = pa.array([self.index[t] for g in groups for t in g], type=pa.int64())
        taken = self.table.take(rows).combine_chunks()
        out, at = [], 0
        for g in groups:
            out.append(TaskLookup(taken.slice(at, len(g))))
            at += len(g)
        return out

    def __reduce__(self) -> tuple:
        # as Arrow IPC, which writes a slice's own rows (a pickled slice would carry its whole table)
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, self.table.schema) as writer:
            writer.write_table(self.table)
        return _lookup_from_ipc, (sink.getvalue(),)

    def specs(self) -> dict[str, TaskSpec]:
        """Every task, built at once (a row at a time costs several times more)."""
        return {row["task_id"]: from_row(TABLES["tasks"], row) for row in self.table.to_pylist()}


def _lookup_from_ipc(data: pa.Buffer) -> TaskLookup:
    return TaskLookup(pa.ipc.open_stream(data).read_all())


def task_lookup(con: duckdb.DuckDBPyConnection, round_id: str, task_ids: list[str] | None = None) -> TaskLookup:
    """The tasks of ``round_id``'s episodes (of those ids only, when given: a large round's tasks are read
    a chunk at a time, their whole rows at once would not fit in memory)."""
    if task_ids is None:
        return TaskLookup(con.sql(
            "SELECT DISTINCT ON (task_id) * FROM tasks WHERE task_id IN (SELECT task_id FROM episodes WHERE round_id = $r)",
            params={"r": round_id},
        ).to_arrow_table())
    con.register("_tasks", pa.table({"task_id": pa.array(task_ids, pa.string())}))
    try:
        return TaskLookup(con.sql(
            "SELECT DISTINCT ON (task_id) * FROM tasks WHERE task_id IN (SELECT task_id FROM _tasks) "
            "AND task_id IN (SELECT task_id FROM episodes WHERE round_id = $r)", params={"r": round_id},
        ).to_arrow_table())
    finally:
        con.unregister("_tasks")


def prior_representatives(
    con: duckdb.DuckDBPyConnection, round_id: str, history: int, *, beyond: bool = False
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(episodes, steps) of up to ``history`` rounds before ``round_id`` that earlier
    cascades kept: sound, not exact or near duplicates. Ordered by episode id. ``beyond``:
    those of every earlier round *outside* that window instead (for the cross-split check)."""
    window = "SELECT DISTINCT round_id FROM episodes WHERE round_id < $r ORDER BY round_id DESC LIMIT $h"
    rounds = (f"SELECT DISTINCT round_id FROM episodes WHERE round_id < $r EXCEPT ({window})" if beyond else window)
    sql_eps = f"""
        WITH r AS ({rounds}),
        keep AS (
            SELECT episode_id FROM marks
            WHERE round_id IN (SELECT round_id FROM r) AND "check" IN ('schema', 'exact_duplicate', 'near_duplicate')
            GROUP BY episode_id HAVING bool_and(passed) AND count(*) = 3
        )
        SELECT e.episode_id, e.round_id, e.task_id, e.family, e.instruction, o.success, t.difficulty, o.steps AS n_steps,
               t.public_params AS task_values, coalesce(t.split, e.split) AS split
        FROM episodes e JOIN keep USING (episode_id) LEFT JOIN outcomes o USING (episode_id)
        LEFT JOIN (SELECT DISTINCT ON (task_id) task_id, difficulty, public_params, split FROM tasks) t ON t.task_id = e.task_id
        ORDER BY e.episode_id
    """
    eps = query_frame(con, sql_eps, {"r": round_id, "h": history})
    if eps.empty:
        return eps, pd.DataFrame(columns=["episode_id", "index", "actor", "action_kind", "action_tool", "action_arguments",
                                          "action_text"])
    con.register("_prior", eps[["episode_id"]])
    try:
        steps = query_frame(
            con, 'SELECT episode_id, "index", actor, action_kind, action_tool, action_arguments, '
            "CASE WHEN action_kind = 'message' THEN action_text END AS action_text FROM steps "
            'WHERE episode_id IN (SELECT episode_id FROM _prior) ORDER BY episode_id, "index"')
    finally:
        con.unregister("_prior")
    return eps, steps
