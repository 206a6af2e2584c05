"""curation.frame.query_frame gives DuckDB's own ``df()`` frame (same values, same dtypes), faster:
on columns of every type with the nulls, empty strings and all-null columns real rounds hold, and
on what the cascade reads from a round of its own next to an imported one (no rewards, no tasks)."""

from __future__ import annotations

import json

import duckdb
import pandas as pd
import pytest

from curation import frame
from flows.stages.curate import cascade_input
from tests.conftest import cli_env, flywheel
from tests.curation_data import build_round
from warehouse.store import Store

TYPES = """
    SELECT * FROM (VALUES
      ('e-1', 1::BIGINT, 7::INTEGER, true, 0.5::DOUBLE, 'Grüße, 東京 ☎', NULL::VARCHAR, '', [1, 2], '{"a":1}'::JSON,
       TIMESTAMP '2026-03-01 10:00:00', DATE '2026-03-01', NULL::BOOLEAN),
      ('e-2', 2, NULL, NULL, NULL, NULL, NULL, 'x', NULL, NULL, NULL, NULL, NULL),
      ('e-3', 3, 9, false, 1e300, 'tab\tnew\nline', NULL, NULL, [], 'null'::JSON, NULL, DATE '1970-01-01', NULL)
    ) t(episode_id, n, small, ok, f, text, all_null, maybe, list, js, ts, d, no_bool)
"""


def _same(con: duckdb.DuckDBPyConnection, sql: str, params: dict | None = None,
          query_frame=frame.query_frame) -> pd.DataFrame:
    want = con.execute(sql, params).df()
    got = query_frame(con, sql, params)
    assert got.dtypes.to_dict() == want.dtypes.to_dict(), sql
    pd.testing.assert_frame_equal(got, want, check_exact=True)
    # each value as df() gives it: None where None, NaN where NaN, a list as the same array
    assert {c: [repr(v) for v in got[c].tolist()] for c in got} == {c: [repr(v) for v in want[c].tolist()] for c in want}
    return got


@pytest.mark.parametrize("where", ["", "WHERE n = 2", "WHERE n > 1", "WHERE n > 9", "WHERE text IS NOT NULL"])
def test_every_column_type_with_nulls_reads_as_df_reads_it(where):
    con = duckdb.connect()
    out = _same(con, f"SELECT * FROM ({TYPES}) {where}")
    assert len(out) == {"": 3, "WHERE n = 2": 1, "WHERE n > 1": 2, "WHERE n > 9": 0, "WHERE text IS NOT NULL": 2}[where]


def test_parameters_reach_the_query():
    con = duckdb.connect()
    assert _same(con, f"SELECT * FROM ({TYPES}) WHERE episode_id = $e", {"e": "e-3"})["n"].tolist() == [3]


def test_what_the_cascade_reads_is_what_df_reads(tmp_path, monkeypatch):
    data = tmp_path / "flywheel-data"
    build_round(data, episodes=24, rollouts=2)  # r0001: the phone's own episodes, curated
    convs = [{"messages": [{"role": "user", "content": f"Text {who} that I'm late"},
                           {"role": "assistant", "content": "Sent.", "tool_calls": [
                               {"id": "c1", "type": "function",
                                "function": {"name": "messages_send", "arguments": json.dumps({"to": who})}}]},
                           {"role": "tool", "tool_call_id": "c1", "content": "ok"},
                           {"role": "assistant", "content": "Done."}], **extra}
             for who, extra in (("Ann", {}), ("Bob", {"reward": 1.0}), ("Cy", {"reward": 0}))]
    src = tmp_path / "convs.jsonl"
    src.write_text("".join(json.dumps(c) + "\n" for c in convs))
    proc = flywheel("import", str(src), "--format", "openai-chat", env=cli_env(None), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    checked = []

    def compared(con, sql, params=None):
        checked.append(sql)
        return _same(con, sql, params)

    monkeypatch.setattr(frame, "query_frame", compared)
    store = Store(data)
    for round_id in ("r0001", "r0002"):  # the second round has earlier representatives to read too
        inp = cascade_input(store, round_id)
        inp.fetch_results(inp.episodes["episode_id"].tolist())
        inp.steps_of(inp.episodes["episode_id"].tolist()[:5])  # the cascade reads steps a chunk at a time
        assert len(inp.episodes) >= 24 if round_id == "r0001" else len(inp.episodes) == 3
    # episodes, steps, results per round; each round's earlier representatives in two reads (the last rounds'
    # and the older ones': cross-split checks reach every round)
    assert len(checked) == 2 * 3 + 1 + 2 * 2
    imported = cascade_input(store, "r0002").episodes
    assert imported["success"].isna().sum() == 1 and (imported["source"] == "external").all()  # one without a reward
