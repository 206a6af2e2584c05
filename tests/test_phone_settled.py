"""Verdicts the incremental verifier stops re-checking stay what they were: for each kind in
``stepplan.SETTLED_WHEN``, once a check over a list of calls gives the settled verdict, no list of
calls that extends it gives another (the finish arguments aside: the verifier re-runs every check on
a finish)."""

from __future__ import annotations

import random

import pytest

from warehouse.contract import Requirement

from generators.phone.stepplan import SETTLED_WHEN
from generators.phone.verifier import check_outcome

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
