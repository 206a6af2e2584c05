"""Marks as columns: every cascade step returns a frame of marks, one row per episode.

A mark says which step made it (``check``), what it decided (``mark``, ``passed``)
and why (``reason``, ``detail``). Building them as columns keeps 100k episodes cheap;
``to_arrow`` gives the warehouse's ``marks`` schema.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from warehouse.contract import REFERENCE_POLICY
from warehouse.ids import plain_json
from warehouse.schemas import TABLES

MARK_COLUMNS = ["episode_id", "round_id", "check", "mark", "passed", "reason", "detail"]


def reference_demonstrations(episodes: pd.DataFrame) -> np.ndarray:
    """Which episodes are reference demonstrations (the reference solution followed, not the model's attempts)."""
    if "policy" not in episodes:
        return np.zeros(len(episodes), dtype=bool)
    return (episodes["policy"] == REFERENCE_POLICY).to_numpy(dtype=bool)


def marks_frame(
    episodes: pd.DataFrame,
    check: str,
    mark: Sequence[str] | np.ndarray | str,
    passed: Sequence[bool] | np.ndarray | bool,
    reason: Sequence[str] | np.ndarray | str = "",
    detail: Sequence[dict[str, Any] | None] | None = None,
) -> pd.DataFrame:
    """One mark of ``check`` per row of ``episodes`` (which needs episode_id and round_id)."""
    n = len(episodes)
    details = [plain_json(d) if d else "{}" for d in detail] if detail is not None else ["{}"] * n
    return pd.DataFrame(
        {
            "episode_id": episodes["episode_id"].to_numpy(),
            "round_id": episodes["round_id"].to_numpy(),
            "check": check,
            "mark": np.broadcast_to(np.asarray(mark, dtype=object), n),
            "passed": np.broadcast_to(np.asarray(passed, dtype=bool), n).copy(),
            "reason": np.broadcast_to(np.asarray(reason, dtype=object), n),
            "detail": details,
        },
        columns=MARK_COLUMNS,
    )


def to_arrow(marks: pd.DataFrame) -> pa.Table:
    """Marks in the warehouse's ``marks`` schema."""
    schema = TABLES["marks"].schema
    arrays = [pa.array(marks[c].tolist() if c != "passed" else marks[c].astype(bool), type=schema.field(c).type)
              for c in MARK_COLUMNS]
    return pa.Table.from_arrays(arrays, schema=schema)

