"""What a round's model calls cost: every call journaled for it (the planner's, the simulated
user's, the task writer's, curation's judges'), by role and model, in tokens and, where the model
has a price (``openai.prices``), dollars."""

from __future__ import annotations

from typing import Any

from warehouse import state
from warehouse.store import Store

ROLES = ("planner", "user", "writer", "judge")


def round_costs(store: Store, con: Any, prices: dict[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    """Per round: ``model_usage`` (one row per role and model: calls, tokens, dollars), token totals,
    the planner's model latency, ``cost_usd`` (None when no model of the round has a price) and
    ``unpriced_models`` (models that were called and have no price: the dollars leave them out).

    A round without journaled planner calls (an import, a scripted round) takes its planner tokens
    from what its episodes recorded. A reply journaled before replies named their model counts
    under the round's planner model."""
    with store.session() as s:
        usage = state.model_usage(session=s)
    episodes: dict[str, dict[str, Any]] = {}
    for rid, model, pt, ct, lat in con.execute(
        "SELECT e.round_id, e.model, sum(o.prompt_tokens), sum(o.completion_tokens), sum(o.latency_ms) "
        "FROM episodes e JOIN outcomes o USING (episode_id) GROUP BY e.round_id, e.model ORDER BY 1, 2"
    ).fetchall():
        mine = episodes.setdefault(rid, {"model": "", "latency_ms": 0.0, "rows": []})
        mine["model"] = mine["model"] or model or ""  # a reference demonstration's episodes name no model
        mine["latency_ms"] += lat or 0
        if pt or ct:
            mine["rows"].append({"role": "planner", "model": model or "", "calls": None,
                                 "prompt_tokens": int(pt or 0), "completion_tokens": int(ct or 0)})
    out = {}
    for rid in sorted(set(usage) | set(episodes)):
        seen = episodes.get(rid, {"model": "", "latency_ms": 0.0, "rows": []})
        rows = [dict(r, model=r["model"] or (seen["model"] if r["role"] == "planner" else "")) for r in usage.get(rid, [])]
        if not any(r["role"] == "planner" for r in rows):
            rows += seen["rows"]
        out[rid] = priced(rows, prices or {}) | {"model_latency_s": round(seen["latency_ms"] / 1000, 3)}
    return out


def priced(rows: list[dict[str, Any]], prices: dict[str, Any]) -> dict[str, Any]:
    """``rows`` merged per role and model, each with its dollars, and the round's totals."""
    merged: dict[tuple[str, str], dict[str, Any]] = {}
    for r in rows:
        m = merged.setdefault((r["role"], r["model"]), {**r, "calls": 0, "prompt_tokens": 0, "completion_tokens": 0})
        m["calls"] = None if r["calls"] is None or m["calls"] is None else m["calls"] + r["calls"]
        m["prompt_tokens"] += r["prompt_tokens"]
        m["completion_tokens"] += r["completion_tokens"]
    table = sorted(merged.values(), key=lambda r: (ROLES.index(r["role"]), r["model"]))
    for r in table:
        price = prices.get(r["model"])
        r["cost_usd"] = None if price is None else round(
            r["prompt_tokens"] / 1e6 * price.input_per_mtok + r["completion_tokens"] / 1e6 * price.output_per_mtok, 6)
    costs = [r["cost_usd"] for r in table if r["cost_usd"] is not None]
    return {
        "prompt_tokens": sum(r["prompt_tokens"] for r in table),
        "completion_tokens": sum(r["completion_tokens"] for r in table),
        "cost_usd": round(sum(costs), 6) if costs else None,
        "unpriced_models": sorted({r["model"] or "(unknown)" for r in table if r["cost_usd"] is None
                                   and (r["prompt_tokens"] or r["completion_tokens"])}),
        "model_usage": table,
    }


NO_COSTS = {"prompt_tokens": 0, "completion_tokens": 0, "cost_usd": None, "unpriced_models": [], "model_usage": [],
            "model_latency_s": 0.0}
