"""Requirement checks for the agent services: memory diff, skill gating, sub-agent handoff,
no fabricated unknowns, efficiency, and an authored skill that re-runs on a fresh instance.

Same shape as the other checks: ``(params, changes=, calls=, finish_args=) -> (passed, detail)``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from generators.phone.heldout import rerun_saved_skill
from generators.phone.matching import fields_match, normalise

Calls = list[dict[str, Any]]
UNKNOWN_ANSWERS = {"unknown", "not known", "i don't know", "i do not know", "no answer", "not found"}


def _memory_diff(p: dict[str, Any], changes: list[dict[str, Any]], **_: Any) -> tuple[bool, str]:
    """Memory changed exactly as asked: records added (by fields), updated in place (same id), superseded
    (old one marked, a successor with the value), deleted (tombstoned); and nothing else in memory."""
    mine = [c for c in changes if c["table"] == "memories"]
    problems, used = [], set()
    for want in p.get("added", []):
        hit = next((c for c in mine if c["op"] == "added" and c["key"] not in used
                    and fields_match(want, c["after"], "normalised", p.get("field_match", {}))), None)
        problems += [] if hit else [f"no memory added like {want}"]
        used |= {hit["key"]} if hit else set()
    for want in p.get("updated", []):
        hit = next((c for c in mine if c["op"] == "updated" and c["key"] == want["id"]), None)
        if hit is None or hit["after"]["status"] != "active" or not fields_match(
                want["fields"], hit["after"], "normalised", p.get("field_match", {})):
            problems.append(f"{want['id']} not updated in place to {want['fields']}")
        used.add(want["id"])
    for want in p.get("superseded", []):
        old = next((c for c in mine if c["key"] == want["id"] and c["after"] and c["after"]["status"] == "superseded"),
                   None)
        new = next((c for c in mine if c["op"] == "added" and old and c["key"] == old["after"]["superseded_by"]), None)
        if old is None or new is None or not fields_match(want["fields"], new["after"], "normalised",
                                                          p.get("field_match", {})):
            problems.append(f"{want['id']} not superseded by a record with {want['fields']}")
        else:
            used |= {old["key"], new["key"]}
    for key in p.get("deleted", []):
        hit = next((c for c in mine if c["key"] == key and c["after"] and c["after"]["status"] == "deleted"), None)
        problems += [] if hit else [f"{key} not deleted"]
        used.add(key)
    extra = [f"{c['op']} {c['key']}" for c in mine if c["key"] not in used]
    if extra and not p.get("allow_other", False):
        problems.append(f"other memory changes: {', '.join(extra)}")
    return not problems, "; ".join(problems)


def _skill_gating(p: dict[str, Any], calls: Calls, **_: Any) -> tuple[bool, str]:
    """The skill was loaded before any call to a tool it gates, and a gated tool was then used."""
    gated = set(p["tools"])
    loaded = next((c["index"] for c in calls if c["tool"] == "load_skill" and c["ok"]
                   and c["arguments"].get("name") == p["skill"]), None)
    first = next((c for c in calls if c["tool"] in gated), None)
    if loaded is None:
        return False, f"skill {p['skill']} never loaded"
    if first is None or not any(c["ok"] for c in calls if c["tool"] in gated):
        return False, f"no gated tool of {p['skill']} was used"
    if first["index"] < loaded:
        return False, f"{first['tool']} called at step {first['index']} before load_skill at step {loaded}"
    return True, ""


def _handoff(p: dict[str, Any], calls: Calls, brief: bool = False, **_: Any) -> tuple[bool, str]:
    """A session of the agent was started with these inputs (normalised; the ones named) and then run (to
    success, or to failure with ``run_ok: false``);
    with ``after``, only once that tool had succeeded (its prerequisite)."""
    want, prereq = p["inputs"], p.get("after")
    for c in calls:
        if c["tool"] != "start_subagent" or not c["ok"] or c["arguments"].get("agent") != p["agent"]:
            continue
        got = c["arguments"].get("inputs", {})
        if not isinstance(got, dict) or not fields_match(want, got, "normalised", p.get("field_match", {})):
            continue
        sid = (c.get("result") or {}).get("session_id")
        ran = next((r for r in calls if r["tool"] == "run_subagent" and r["arguments"].get("session_id") == sid
                    and r["index"] > c["index"] and r["ok"] == p.get("run_ok", True)), None)
        if ran is None:
            return False, f"session {sid} was started with the right inputs but never run"
        if prereq and not any(x["ok"] and x["tool"] == prereq and x["index"] < c["index"] for x in calls):
            return False, f"the {p['agent']} agent was started before {prereq} succeeded"
        return True, ""
    return False, "" if brief else f"no {p['agent']} session started with inputs {want}"


def _no_fabrication(p: dict[str, Any], finish_args: dict[str, Any] | None, calls: Calls, **_: Any) -> tuple[bool, str]:
    """The agent said the fact is unknown instead of making one up: no answer (or an 'unknown' one), and
    no write carried a value the knowledge did not hold."""
    if finish_args is None:
        return False, "never finished"
    answer = finish_args.get("answer")
    if answer not in (None, "") and normalise(str(answer)) not in UNKNOWN_ANSWERS:
        return False, f"answered {answer!r} where the fact is unknown"
    for c in calls:
        if c["ok"] and c["tool"] in p.get("write_tools", ()):
            return False, f"acted on an unknown fact with {c['tool']} at step {c['index']}"
    return True, ""


def _efficiency(p: dict[str, Any], calls: Calls, **_: Any) -> tuple[bool, str]:
    """No more calls (tool calls and questions) than the optimal plus ``slack``."""
    used, limit = len(calls), p["optimal"] + p.get("slack", 2)
    return used <= limit, "" if used <= limit else f"{used} calls, the optimal needs {p['optimal']}"


def _skill_reruns(p: dict[str, Any], changes: list[dict[str, Any]], **_: Any) -> tuple[bool, str]:
    """An agent-saved skill, run on a fresh held-out instance with its arguments, makes the expected change."""
    saved = [c["after"] for c in changes if c["table"] == "skills" and c["op"] == "added"
             and c["after"]["source"] == "agent"]
    if not saved:
        return False, "no skill was saved"
    return rerun_saved_skill(saved[-1], p)


SERVICE_CHECKS: dict[str, Callable[..., tuple[bool, str]]] = {
    "memory_diff": _memory_diff,
    "skill_gating": _skill_gating,
    "handoff": _handoff,
    "no_fabrication": _no_fabrication,
    "efficiency": _efficiency,
    "skill_reruns": _skill_reruns,
}
