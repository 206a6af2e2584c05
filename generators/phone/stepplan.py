"""What per-step verification derives from a task's requirements alone, made once per task.

:class:`generators.phone.stepverify.IncrementalVerifier` needs, per requirement, what it reads (which
table, which tools' calls), whether its verdict can settle, and every verdict at the start (nothing
changed, nothing called). All of it follows from the requirements, so the rollouts of a task share one
:class:`VerifierPlan`, kept beside the task's initial world and made again whenever the requirements
differ from the ones it was made from (compared in full at every reset, so a requirement changed in
place is seen too).
"""

from __future__ import annotations

import copy
from typing import Any

from generators.phone.verifier import CHECKS, STATE_KINDS, STATE_TABLES, check_outcome
from warehouse.contract import Requirement


def calls_read(req: Requirement) -> frozenset[str] | None:
    """The tools whose calls can change a non-state check's result (None: any call can).

    Every check may also read the finish arguments; a kind not named here reads every call."""
    p, kind = req.params, req.kind
    try:
        if kind in ("answer", "finish_status"):
            return frozenset()
        if kind in ("forbidden", "exact_call", "called"):
            return frozenset([p["tool"]])
        if kind == "order":
            return frozenset(w["tool"] for w in p["sequence"])
        if kind == "partial_order":
            return frozenset(x["tool"] for pair in p["before"] for x in pair)
        if kind == "asked_before":
            return frozenset(["ask_user", p["tool"]])
        if kind == "skill_gating":
            return frozenset(["load_skill", *p["tools"]])
        if kind == "handoff":
            return frozenset(["start_subagent", "run_subagent", p.get("after")])
        if kind == "no_fabrication":
            return frozenset(p.get("write_tools", ()))
    except (KeyError, TypeError, AttributeError):  # odd params: the check itself says what is wrong
        pass
    return None


# kinds that, until the finish arguments exist, fail or pass without reading a call
READ_CALLS_ONCE_FINISHED = frozenset(["claims_grounded", "no_fabrication"])
# kinds whose verdict, once it is this one, no later call can change (calls are only appended, and none of
# these reads the finish arguments): a call that came stays come, an order once matched stays matched,
# a forbidden call once made stays made
SETTLED_WHEN = {"called": True, "exact_call": True, "order": True, "forbidden": False}
# kinds whose check never reads the finish arguments: a finish (which records no call) cannot change their verdict
FINISH_BLIND = frozenset(["called", "exact_call", "order", "forbidden", "partial_order", "asked_before",
                          "skill_gating", "handoff", "efficiency"])


def requirements_signature(reqs: list[Requirement]) -> list[tuple[Any, ...]]:
    """Every field of the requirements a plan reads (params by value)."""
    return [(r.id, r.kind, r.weight, r.hard, r.noop_passes, r.params) for r in reqs]


class VerifierPlan:
    """The requirement-only part of an incremental verifier (never changed once made)."""

    def __init__(self, reqs: list[Requirement]):
        self.reqs = reqs
        self.signature = copy.deepcopy(requirements_signature(reqs))  # a copy: params changed in place show
        self.ids = [r.id for r in reqs]
        self.weights = [r.weight for r in reqs]
        self.total = sum(r.weight for r in reqs)
        self.hard = [i for i, r in enumerate(reqs) if r.hard]
        self.hard_ids = {r.id for r in reqs if r.hard}
        self.noop = {r.id for r in reqs if r.noop_passes}
        self.state = [i for i, r in enumerate(reqs) if r.kind in STATE_KINDS]
        self.other = [i for i, r in enumerate(reqs) if r.kind not in STATE_KINDS]
        # which call checks a new call of a tool re-runs (before and after the finish arguments exist)
        self.by_tool: tuple[dict[Any, list[int]], dict[Any, list[int]]] = ({}, {})
        self.any_call: tuple[list[int], list[int]] = ([], [])
        for i in self.other:
            reads = calls_read(reqs[i])
            for finished in (0, 1):
                if not finished and reqs[i].kind in READ_CALLS_ONCE_FINISHED:
                    continue  # reads no call until then
                if reads is None:
                    self.any_call[finished].append(i)
                for tool in reads or ():
                    self.by_tool[finished].setdefault(tool, []).append(i)
        # each requirement's check (None: an unknown kind, which fails) and its params, looked up once
        self.checks = [(CHECKS.get(r.kind), r.params) for r in reqs]
        self.settles = [SETTLED_WHEN.get(r.kind) for r in reqs]  # None: never settled
        self.reads_finish = [i for i in self.other if reqs[i].kind not in FINISH_BLIND]  # re-run on a finish
        self.forbidden = [i for i, r in enumerate(reqs) if r.kind == "forbidden"]
        # the one table a state check reads, or None: every table (allowed_changes)
        self.reads = {i: None if reqs[i].kind == "allowed_changes"
                      else STATE_TABLES.get(reqs[i].kind) or reqs[i].params.get("table") for i in self.state}
        # the definition keeps state results by id: of state checks sharing an id, the last one's counts
        last = {reqs[i].id: i for i in self.state}
        self.source = {i: last[reqs[i].id] for i in self.state}
        # at the start nothing has changed and nothing was called
        self.own = tuple(check_outcome(r, [], [], None)[0] for r in reqs)
        self.flags = tuple(self.own[self.source.get(i, i)] for i in range(len(reqs)))
        self.passing = frozenset(self.ids[i] for i, f in enumerate(self.flags) if f)

    def fits(self, reqs: list[Requirement]) -> bool:
        """Whether this plan was made from requirements equal to ``reqs``."""
        return requirements_signature(reqs) == self.signature


def plan_for(reqs: list[Requirement], kept: dict[str, Any]) -> VerifierPlan:
    """The plan for ``reqs``, from ``kept`` (a dict shared by the episodes of one initial world) when it fits."""
    plan = kept.get("plan")
    if plan is None or not plan.fits(reqs):
        plan = kept["plan"] = VerifierPlan(reqs)
    return plan
