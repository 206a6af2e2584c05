"""Verdicts the incremental verifier stops re-checking stay what they were: for each kind in
``stepplan.SETTLED_WHEN``, once a check over a list of calls gives the settled verdict, no list of
calls that extends it gives another; and a finish changes no verdict of a check that does not read the
finish arguments (so a finish re-runs only those that do)."""

from __future__ import annotations

import random

import pytest

from generators.phone.families import FAMILIES
from generators.phone.stepplan import FINISH_BLIND, SETTLED_WHEN
from generators.phone.verifier import check_outcome
from warehouse.contract import Requirement

TOOLS = ["contacts_search", "mail_send", "notes_create"]
ARGS = [{}, {"query": "ann"}, {"query": "Ann "}, {"to": "a@b.c"}, {"to": "x@y.z", "body": "hi"}]


def _want(rng: random.Random) -> dict:
    return {"tool": rng.choice(TOOLS), "arguments": rng.choice(ARGS)}


def _params(kind: str, rng: random.Random) -> dict:
    if kind == "order":
        return {"sequence": [_want(rng) for _ in range(rng.randint(1, 3))]}
    if kind == "forbidden":
        return {**_want(rng), "include_failed": rng.random() < 0.5}
    return _want(rng)


@pytest.mark.parametrize("kind", sorted(SETTLED_WHEN))
def test_a_settled_verdict_survives_every_later_call(kind):
    rng = random.Random(kind)
    settled = 0
    for _ in range(300):
        req = Requirement(id="r", kind=kind, description=kind, params=_params(kind, rng))
        calls: list[dict] = []
        verdict_seen = False
        for index in range(8):
            calls.append({"index": index, "tool": rng.choice(TOOLS), "arguments": rng.choice(ARGS),
                          "ok": rng.random() < 0.8, "call_id": f"step-{index}", "result": None})
            verdict = check_outcome(req, [], calls, None)[0]
            if verdict_seen:
                assert verdict == SETTLED_WHEN[kind], (req.params, calls)
            verdict_seen = verdict_seen or verdict == SETTLED_WHEN[kind]
        settled += verdict_seen
    assert settled > 30  # the random calls reach the settled verdict often enough to test it


STATUSES = ["completed", "needs_user", "infeasible", "partial"]
FINISHES = [None, {"status": "completed"}, {"status": "infeasible", "answer": "unknown", "summary": "s"},
            {"status": "completed", "answer": 3, "claims": [{"fact": "x", "call_id": "step-0"}]}, {}]


def _requirements_of_every_family() -> list[Requirement]:
    out = []
    for family in FAMILIES.values():
        for seed in range(3):
            for difficulty in range(1, family.max_difficulty + 1):
                out += family.make_task(seed, difficulty).requirements
    return out


def test_a_finish_cannot_change_the_verdict_of_a_check_blind_to_it():
    """On a finish the verifier re-runs only the checks that read the finish arguments: every other kind
    (``stepplan.FINISH_BLIND``) gives the same verdict whatever they are, over the families' own requirements
    and random lists of the calls their reference solutions make."""
    rng, compared = random.Random("finish"), 0
    pool = [{"tool": a.tool, "arguments": a.arguments} for family in FAMILIES.values()
            for a in family.reference_actions(family.make_task(0, 1)) if a.kind in ("tool_call", "ask_user")]
    reqs = [r for r in _requirements_of_every_family() if r.kind in FINISH_BLIND]
    reqs += [Requirement(id="x", kind="exact_call", description="", params=rng.choice(pool)) for _ in range(20)]
    assert {r.kind for r in reqs} == FINISH_BLIND  # every kind, with the params the families give it
    for req in reqs:
        for _ in range(5):
            calls = [{"index": i, **rng.choice(pool), "ok": rng.random() < 0.8, "call_id": f"step-{i}",
                      "result": {"session_id": "sa-0001"}} for i in range(rng.randint(0, 8))]
            own = [{"status": status, "answer": req.params.get("expected", "unknown")} for status in STATUSES]
            verdicts = {check_outcome(req, [], calls, finish)[0] for finish in FINISHES + own}
            assert len(verdicts) == 1, (req.kind, req.params, calls)
            compared += 1
    assert compared > 200
