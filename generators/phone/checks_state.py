"""Requirement checks that read only the state diff: the rows a task must change, and the only ones it may.

Their own module so that what re-runs a world (:mod:`generators.phone.heldout`) can check a diff without
the verifier, which reaches it through the service checks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from generators.phone.matching import fields_match


def check_state_diff(p: dict[str, Any], changes: list[dict[str, Any]], brief: bool = False,
                     **_: Any) -> tuple[bool, str]:
    """Rows of ``p["table"]`` were added, updated and removed as ``p`` lists (``brief``: stop at the first
    problem, without wording it)."""
    table, match, per_field = p["table"], p.get("match", "normalised"), p.get("field_match", {})
    mine = [c for c in changes if c["table"] == table]
    problems = []
    added = p.get("added", [])
    free = [c for c in mine if c["op"] == "added"] if added else []
    for want in added:  # each expected row needs its own added row
        hit = next((c for c in free if fields_match(want, c["after"], match, per_field)), None)
        if hit is None:
            if brief:
                return False, ""
            problems.append(f"no added row matches {want}")
        else:
            free.remove(hit)
    for want in p.get("updated", []):
        hit = next((c for c in mine if c["op"] == "updated" and c["key"] == want["key"]), None)
        if hit is None or not fields_match(want["fields"], hit["after"], match, per_field):
            if brief:
                return False, ""
            problems.append(f"{want['key']} not updated to {want['fields']}")
    gone = p.get("removed", [])
    removed = {c["key"] for c in mine if c["op"] == "removed"} if gone else set()
    problems += [f"{k} not removed" for k in gone if k not in removed]
    return not problems, "; ".join(problems)


ALL_OPS = ("added", "updated", "removed")


def _allowed(rule: dict[str, Any], change: dict[str, Any]) -> bool:
    return (rule["table"] == change["table"] and ("keys" not in rule or change["key"] in rule["keys"])
            and change["op"] in rule.get("ops", ALL_OPS))


def check_allowed_changes(p: dict[str, Any], changes: list[dict[str, Any]], brief: bool = False,
                          **_: Any) -> tuple[bool, str]:
    """No row changed but those ``p["allow"]`` lets through (each rule a table, perhaps keys, ops and a cap;
    ``brief``: the verdict alone)."""
    rules = p.get("allow", [])
    if brief:
        return _allows_all(rules, changes), ""
    extra = [c for c in changes if not any(_allowed(r, c) for r in rules)]
    for r in rules:  # a rule may cap how many rows it lets through (e.g. one added contact)
        if "max" in r and sum(_allowed(r, c) for c in changes) > r["max"]:
            extra.append({"table": r["table"], "key": f"more than {r['max']}", "op": "changes"})
    detail = ", ".join(f"{c['op']} {c['table']}/{c['key']}" for c in extra)
    return not extra, f"collateral changes: {detail}" if extra else ""


def _allows_all(rules: list[dict[str, Any]], changes: list[dict[str, Any]]) -> bool:
    """:func:`check_allowed_changes`'s verdict, without collecting what fails (a step asks for it often)."""
    for c in changes:  # as any(_allowed(r, c) for r in rules), inlined
        table, key, op = c["table"], c["key"], c["op"]
        for r in rules:
            if r["table"] == table and ("keys" not in r or key in r["keys"]) and op in r.get("ops", ALL_OPS):
                break
        else:
            return False
    return all(sum(_allowed(r, c) for c in changes) <= r["max"] for r in rules if "max" in r)


STATE_CHECKS: dict[str, Callable[..., tuple[bool, str]]] = {
    "state_diff": check_state_diff,
    "allowed_changes": check_allowed_changes,
}
