"""Normalised call signatures: the shared vocabulary of replay, dedup and heuristics.

Arguments are parsed once per step. Two signatures come out of it:
- the *exact* call ``[kind, tool, normalised arguments]`` (the exact-duplicate key);
- the *near* call, which leaves out free text a paraphrase would change (finish's
  summary and claims, ask_user's wording) so that two rollouts doing the same thing
  get the same shingles.
"""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np
import pandas as pd

from warehouse.ids import canonical_json, digest

_SPACE = re.compile(r"\s+")
_PUNCT = re.compile(r"[^\w\s]")


def normalise_text(text: str) -> str:
    """Lower case, single spaces, trimmed."""
    return _SPACE.sub(" ", (text or "").strip().lower())


def normalise_instruction(text: str) -> str:
    """Text for character n-grams: lower case, punctuation dropped, single spaces."""
    return _SPACE.sub(" ", _PUNCT.sub(" ", (text or "").lower())).strip()


def normalise_value(value: Any) -> Any:
    """Strings normalised, dict keys sorted, recursively."""
    if isinstance(value, str):
        return normalise_text(value)
    if isinstance(value, dict):
        return {k: normalise_value(v) for k, v in sorted(value.items())}
    if isinstance(value, list):
        return [normalise_value(v) for v in value]
    return value


def parse_arguments(raw: pd.Series) -> list[dict[str, Any]]:
    """JSON argument text to dicts; unparseable text becomes ``{"__raw__": text}``."""
    out: list[dict[str, Any]] = []
    for text in raw.tolist():
        if text is None:
            out.append({})
            continue
        try:
            value = json.loads(text)
        except (TypeError, ValueError):
            value = {"__raw__": str(text)}
        out.append(value if isinstance(value, dict) else {"__value__": value})
    return out


def near_call(kind: str, tool: str, args: dict[str, Any]) -> str | None:
    """The call as dedup sees it; None for steps that say nothing about the work."""
    if kind == "tool_call":
        return canonical_json([tool, normalise_value(args)])
    if kind == "finish":
        return canonical_json(["finish", normalise_value(args.get("status")), normalise_value(args.get("answer"))])
    if kind == "ask_user":
        return "ask_user"
    return None


def call_columns(steps: pd.DataFrame) -> pd.DataFrame:
    """Per planner step: the exact call text and the near-call text (or None)."""
    args = parse_arguments(steps["action_arguments"])
    kinds = steps["action_kind"].tolist()
    tools = steps["action_tool"].fillna("").tolist()
    exact = [canonical_json([k, t, normalise_value(a)]) for k, t, a in zip(kinds, tools, args)]
    near = [near_call(k, t, a) for k, t, a in zip(kinds, tools, args)]
    return pd.DataFrame({"exact_call": exact, "near_call": near, "args": args}, index=steps.index)


def exact_keys(episodes: pd.DataFrame, steps: pd.DataFrame, calls: pd.DataFrame) -> np.ndarray:
    """Exact-duplicate key per episode: normalised intent, planner calls, final state digest.

    The same definition as :func:`curation.checks.exact_key`, so keys of earlier rounds match."""
    planner = steps["actor"].to_numpy() == "planner"
    joined = (
        pd.DataFrame({"episode_id": steps["episode_id"].to_numpy()[planner], "c": calls["exact_call"].to_numpy()[planner]})
        .groupby("episode_id", sort=False)["c"]
        .agg(lambda cs: "[" + ",".join(cs) + "]")
    )
    keys = []
    for eid, instr, final in zip(episodes["episode_id"], episodes["instruction"], episodes["final_state_hash"]):
        call_list = joined.get(eid, "[]")
        text = canonical_json([normalise_text(instr or ""), "\x00", final or ""])
        # canonical_json of the nested calls list equals joining canonical call texts with commas
        keys.append(digest(text.replace('"\\u0000"', call_list, 1), 24))
    return np.asarray(keys, dtype=object)
