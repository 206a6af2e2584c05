"""Normalised call signatures: the shared vocabulary of replay, dedup and heuristics.

Arguments are parsed once per step. Two signatures come out of it:
- the *exact* call ``[kind, tool, normalised arguments]`` (the exact-duplicate key);
- the *near* call, which leaves out free text a paraphrase would change (finish's
  summary and claims, ask_user's wording) so that two rollouts doing the same thing
  get the same shingles. A text turn of an imported conversation (``message``, the
  agent's or the user's) is the exception: there the words are the work, so both keys
  carry its normalised text ("change my flight" and "cancel my flights" differ).
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


def parse_argument(text: str | None) -> dict[str, Any]:
    """JSON argument text to a dict; unparseable text becomes ``{"__raw__": text}``, no text ``{}``."""
    if text is None:
        return {}
    try:
        value = json.loads(text)
    except (TypeError, ValueError):
        return {"__raw__": str(text)}
    return value if isinstance(value, dict) else {"__value__": value}


def near_call(kind: str, tool: str, args: dict[str, Any]) -> str | None:
    """The call as dedup sees it; None for steps that say nothing about the work."""
    if kind == "tool_call":
        return canonical_json([tool, normalise_value(args)])
    if kind == "finish":  # its structured fields; the free-text summary and claims are wording
        return canonical_json(["finish", normalise_value({k: v for k, v in args.items() if k not in ("summary", "claims")})])
    if kind == "ask_user":
        return "ask_user"
    if kind == "message":  # a text turn of an imported conversation: what was said is the work
        return canonical_json(["message", normalise_value(args)])
    return None


def call_columns(steps: pd.DataFrame) -> pd.DataFrame:
    """Per step: the exact call text, the near-call text (or None) and the parsed arguments.

    Memoised on the raw (kind, tool, arguments) text: rollouts repeat the same calls, so
    most steps are parsed once per distinct call. The parsed dicts are shared between
    steps with equal text; treat them as read-only."""
    memo: dict[tuple, tuple[str, str | None, dict]] = {}
    exact, near, args = [], [], []
    texts = steps["action_text"].fillna("").tolist() if "action_text" in steps else [""] * len(steps)
    for kind, tool, raw, text in zip(steps["action_kind"].tolist(), steps["action_tool"].fillna("").tolist(),
                                     steps["action_arguments"].tolist(), texts):
        key = (kind, tool, raw, text if kind == "message" else "")
        hit = memo.get(key)
        if hit is None:
            # a text turn (``message``) is its text: two conversations saying different things differ
            parsed = {"text": text} if kind == "message" else parse_argument(raw)
            hit = memo[key] = (canonical_json([kind, tool, normalise_value(parsed)]), near_call(kind, tool, parsed), parsed)
        exact.append(hit[0]), near.append(hit[1]), args.append(hit[2])
    return pd.DataFrame({"exact_call": exact, "near_call": near, "args": args}, index=steps.index)


def exact_keys(episodes: pd.DataFrame, steps: pd.DataFrame, calls: pd.DataFrame) -> np.ndarray:
    """Exact-duplicate key per episode: normalised intent, planner calls, final state digest.

    The same definition as :func:`curation.checks.exact_key`, so keys of earlier rounds match."""
    # the planner's steps, and the user's text turns of an imported conversation (what they asked for)
    planner = (steps["actor"].to_numpy() == "planner") | ((steps["actor"].to_numpy() == "user")
                                                         & (steps["action_kind"].to_numpy() == "message"))
    step_eids = steps["episode_id"].to_numpy()[planner]
    texts = calls["exact_call"].to_numpy()[planner]
    eids = episodes["episode_id"].to_numpy()
    # steps are ordered by episode id like ``episodes``: each episode's calls are one slice
    lo = np.searchsorted(step_eids, eids, side="left")
    hi = np.searchsorted(step_eids, eids, side="right")
    keys = []
    for a, b, instr, final in zip(lo, hi, episodes["instruction"].tolist(), episodes["final_state_hash"].tolist()):
        call_list = "[" + ",".join(texts[a:b]) + "]"
        text = canonical_json([normalise_text(instr or ""), "\x00", final or ""])
        # canonical_json of the nested calls list equals joining canonical call texts with commas
        keys.append(digest(text.replace('"\\u0000"', call_list, 1), 24))
    return np.asarray(keys, dtype=object)
