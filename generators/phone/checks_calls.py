"""Requirement checks over the calls an agent made (not over the state it left).

A call record is ``{"index", "tool", "arguments", "ok", "call_id", "result"}``;
``ask_user`` questions are recorded as calls too, so behaviour can be checked.
Each check returns ``(passed, detail)``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from generators.phone.matching import args_match, normalise
from generators.phone.world import row_json

Calls = list[dict[str, Any]]


def _first(calls: Calls, want: dict[str, Any]) -> int | None:
    return next((c["index"] for c in calls if c["ok"] and c["tool"] == want["tool"]
                 and args_match(want.get("arguments", {}), c["arguments"])), None)


def _check_untouched(p: dict[str, Any], changes: list[dict[str, Any]], **_: Any) -> tuple[bool, str]:
    """These rows (table, keys) are neither changed nor removed."""
    keys = set(p["keys"])
    hit = [c["key"] for c in changes if c["table"] == p["table"] and c["key"] in keys]
    return not hit, f"{p['table']} rows touched: {', '.join(hit)}" if hit else ""


def _check_partial_order(p: dict[str, Any], calls: Calls, **_: Any) -> tuple[bool, str]:
    """For each pair ``[a, b]`` in ``before``: a succeeded, b succeeded, and a came first.

    Unlike ``order``, calls not named in a pair may come in any order.
    """
    for a, b in p["before"]:
        ia, ib = _first(calls, a), _first(calls, b)
        if ia is None or ib is None:
            return False, f"{(a if ia is None else b)['tool']} never succeeded"
        if ia > ib:
            return False, f"{b['tool']} (step {ib}) came before {a['tool']} (step {ia})"
    return True, ""


def _check_exact_call(p: dict[str, Any], calls: Calls, **_: Any) -> tuple[bool, str]:
    """Some successful call has exactly this tool and these arguments (no more, no fewer)."""
    want = row_json(p["arguments"])
    ok = any(c["ok"] and c["tool"] == p["tool"] and row_json(c["arguments"]) == want for c in calls)
    return ok, "" if ok else f"no call {p['tool']}({want})"


def _check_called(p: dict[str, Any], calls: Calls, **_: Any) -> tuple[bool, str]:
    """Some successful call to the tool with (at least) these arguments: the agent looked before it said."""
    hit = _first(calls, p)
    return hit is not None, "" if hit is not None else f"never called {p['tool']} successfully"


def _check_asked_before(p: dict[str, Any], calls: Calls, **_: Any) -> tuple[bool, str]:
    """The user was asked before any call (even a failed one) to the contested tool.

    With ``arguments``, only calls with those arguments count as acting (a payment retried
    with ``confirmed: true`` after the policy refused it is the act, not the first try)."""
    asked = next((c["index"] for c in calls if c["tool"] == "ask_user"), None)
    if asked is None:
        return False, "never asked the user"
    acted = next((c["index"] for c in calls if c["tool"] == p["tool"]
                  and args_match(p.get("arguments", {}), c["arguments"])), None)
    if acted is not None and acted < asked:
        return False, f"acted with {p['tool']} at step {acted} before asking at step {asked}"
    return True, ""


def _check_claims_grounded(p: dict[str, Any], calls: Calls, finish_args: dict[str, Any] | None,
                           **_: Any) -> tuple[bool, str]:
    """Every claim's fact appears in what its cited earlier call returned."""
    claims = list((finish_args or {}).get("claims") or [])
    if len(claims) < p.get("min_claims", 0):
        return False, f"{len(claims)} claims, at least {p['min_claims']} needed"
    by_id = {c.get("call_id"): c for c in calls if c.get("call_id")}
    for n, claim in enumerate(claims):
        if not isinstance(claim, dict):
            return False, f"claim {n} is not an object"
        source = by_id.get(claim.get("call_id"))
        fact = normalise(str(claim.get("fact", "")))
        if source is None or not source["ok"]:
            return False, f"claim {n} cites no successful call ({claim.get('call_id')!r})"
        if not fact or fact not in normalise(row_json(source.get("result"))):
            return False, f"claim {n} ({claim.get('fact')!r}) is not in what {claim.get('call_id')} returned"
    return True, ""


CALL_CHECKS: dict[str, Callable[..., tuple[bool, str]]] = {
    "untouched": _check_untouched,
    "partial_order": _check_partial_order,
    "exact_call": _check_exact_call,
    "called": _check_called,
    "asked_before": _check_asked_before,
    "claims_grounded": _check_claims_grounded,
}
