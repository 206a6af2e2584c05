"""The rule for a rejection after a lead's adjudication (review_app.final), on SQLite and PostgreSQL:
a lead's word settles the decisions it saw; a rejection recorded after it reopens the episode, so a
standing rejection is never outvoted by an earlier word."""

from __future__ import annotations

import json

from flows.export_cmd import export
from review_app import accounts, decisions
from review_app.agreement import Overlap
from review_app.final import final_decisions
from tests.conftest import export_dir
from tests.review_fixtures import PASSWORD, make_accounts, make_round
from tests.test_review_final import _sound_successes
from warehouse.settings import Settings
from warehouse.store import Store

BOTH = Overlap(1.0, 2)


def _decide(store: Store, eid: str, who: str, decision: str) -> None:
    decisions.record_decision(store, reviewer=who, round_id="r0001", episode_id=eid, decision=decision,
                              reason_code="wrong_result" if decision == "reject" else "")


def _adjudicate(store: Store, eid: str, decision: str) -> None:
    decisions.adjudicate(store, lead="lea", round_id="r0001", episode_id=eid, decision=decision,
                         reason_code="wrong_result" if decision == "reject" else "")


def _exported(store: Store, out) -> list[str]:
    settings = Settings(data_dir=store.data_dir, review_overlap=1.0, review_overlap_reviewers=2)
    _, manifest = export(store, out, fmt="openai", include_verified=False, settings=settings)
    return [json.loads(line)["metadata"]["episode_id"]
            for name in manifest["files"] for line in (export_dir(out, manifest) / name).read_text().splitlines()]


def test_a_rejection_after_the_leads_approval_reopens_the_episode(tmp_path, state_url):
    store = Store(tmp_path / "d", state_url)
    make_round(store, n_tasks=8)
    make_accounts(store)
    accounts.add_reviewer(store, "cy", "reviewer", PASSWORD)
    eid = _sound_successes(store)[0]
    _decide(store, eid, "bob", "reject")
    _decide(store, eid, "ann", "approve")
    assert final_decisions(store, None, BOTH)[eid].status == "disputed"
    _adjudicate(store, eid, "approve")
    assert final_decisions(store, None, BOTH)[eid].decision == "approve" and _exported(store, tmp_path / "a") == [eid]

    _decide(store, eid, "ann", "reject")  # two new rejections after the lead's word
    _decide(store, eid, "cy", "reject")
    final = final_decisions(store, None, BOTH)[eid]
    assert final.decision == "reject" and final.status == "decided"
    assert _exported(store, tmp_path / "b") == []

    _adjudicate(store, eid, "approve")  # the lead looked again, after the rejections: their word counts
    assert final_decisions(store, None, BOTH)[eid].status == "adjudicated" and _exported(store, tmp_path / "c") == [eid]


def test_one_new_rejection_beside_a_standing_approval_is_a_dispute_again(tmp_path, state_url):
    store = Store(tmp_path / "d", state_url)
    make_round(store, n_tasks=8)
    make_accounts(store)
    accounts.add_reviewer(store, "cy", "reviewer", PASSWORD)
    eid = _sound_successes(store)[0]
    _decide(store, eid, "bob", "reject")
    _decide(store, eid, "ann", "approve")
    _adjudicate(store, eid, "approve")
    _decide(store, eid, "cy", "reject")
    final = final_decisions(store, None, BOTH)[eid]
    assert (final.decision, final.status) == (None, "disputed")  # back in the lead's queue, exported nowhere
    assert _exported(store, tmp_path / "a") == []


def test_an_approval_after_the_leads_rejection_changes_nothing(tmp_path):
    store = Store(tmp_path / "d")
    make_round(store, n_tasks=8)
    make_accounts(store)
    eid = _sound_successes(store)[0]
    _decide(store, eid, "bob", "reject")
    _decide(store, eid, "ann", "approve")
    _adjudicate(store, eid, "reject")
    _decide(store, eid, "bob", "approve")
    final = final_decisions(store, None, BOTH)[eid]
    assert (final.decision, final.status) == ("reject", "adjudicated") and _exported(store, tmp_path / "a") == []
