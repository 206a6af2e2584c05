"""The review gate's logic without a browser: passwords, overlap, agreement, queue paging,
release selection; on SQLite and PostgreSQL."""

from __future__ import annotations

import json

import pytest

from review_app import accounts, decisions, queue, release
from review_app.agreement import cohen_kappa, resolve
from review_app.data import Overlap
from review_app.final import final_decisions
from tests.conftest import export_dir
from tests.review_fixtures import PASSWORD, make_accounts, make_round
from warehouse.errors import InputError
from warehouse.store import Store


def test_passwords_are_salted_scrypt_hashes():
    a, b = accounts.hash_password("pw-123456"), accounts.hash_password("pw-123456")
    assert a != b and a.startswith("scrypt$") and "pw-123456" not in a
    assert accounts.verify_password("pw-123456", a)
    assert not accounts.verify_password("pw-1234567", a)
    assert not accounts.verify_password("pw-123456", "garbage")


def test_cohen_kappa_matches_a_hand_computed_case():
    # 10 items: both say yes on 4, both no on 3, disagree on 3 -> po = .7,
    # pe = (.6*.5 + .4*.5) = .5, kappa = .4
    a = ["y"] * 4 + ["n"] * 3 + ["y", "y", "n"]
    b = ["y"] * 4 + ["n"] * 3 + ["n", "n", "y"]
    assert cohen_kappa(a, b) == pytest.approx(0.4)
    assert cohen_kappa(["y", "y"], ["y", "y"]) == 1.0
    assert cohen_kappa([], []) is None


def test_resolution_of_an_episode():
    assert resolve({}, 1).status == "unreviewed"
    assert resolve({"ann": "approve"}, 2).status == "partial"
    assert resolve({"ann": "approve", "bob": "approve"}, 2).decision == "approve"
    assert resolve({"ann": "approve", "bob": "reject"}, 2).status == "disputed"
    assert resolve({"ann": "approve", "bob": "reject"}, 2, "reject").decision == "reject"


def test_no_anonymous_or_unknown_reviewer_decides(tmp_path, state_url):
    store = Store(tmp_path / "d", state_url)
    ids = make_round(store, n_tasks=2)
    make_accounts(store)
    for who in ("", "  ", "mallory"):
        with pytest.raises(InputError):
            decisions.record_decision(store, reviewer=who, round_id="r0001", episode_id=ids[0], decision="approve")
    with pytest.raises(InputError, match="at least"):
        accounts.add_reviewer(store, "zed", "reviewer", "short")
    with pytest.raises(InputError, match="already exists"):
        accounts.add_reviewer(store, "ann", "lead", PASSWORD)
    with pytest.raises(InputError, match="not a lead"):
        decisions.adjudicate(store, lead="ann", round_id="r0001", episode_id=ids[0], decision="approve")
    with pytest.raises(InputError, match="not a step"):
        decisions.record_decision(
            store, reviewer="ann", round_id="r0001", episode_id=ids[0], decision="approve", first_wrong_step=99
        )


def test_queue_pages_cover_every_episode_once(tmp_path):
    store = Store(tmp_path / "d")
    ids = make_round(store, n_tasks=7)
    make_accounts(store)
    ann = accounts.User("ann", "reviewer")
    seen = []
    for offset in range(0, 10, 3):
        page = queue.queue_page(store, ann, queue.QueueFilter(), limit=3, offset=offset)
        assert page.total == 7
        seen += [r["episode_id"] for r in page.rows]
    assert sorted(seen) == sorted(ids)


def test_the_queue_shows_a_new_round_and_its_curation_as_soon_as_they_are_committed(tmp_path):
    # the queue's rows are kept in memory per set of shards: a commit must never leave them stale
    store = Store(tmp_path / "d")
    first = make_round(store, n_tasks=3)
    make_accounts(store)
    ann = accounts.User("ann", "reviewer")
    assert queue.queue_page(store, ann, queue.QueueFilter()).total == 3
    second = make_round(store, n_tasks=4, families=("F03", "F04"))
    page = queue.queue_page(store, ann, queue.QueueFilter(), limit=50)
    assert page.total == 7 and sorted(r["episode_id"] for r in page.rows) == sorted(first + second)
    assert queue.queue_page(store, ann, queue.QueueFilter(round_ids=["r0002"])).total == 4
    after = queue.next_episode(store, ann, queue.QueueFilter(), page.rows[-1]["episode_id"])
    assert after is not None and after.wrapped and after.episode_id == page.rows[0]["episode_id"]


def test_the_review_data_layer_reads_a_bucket(tmp_path, s3_server):
    """The app's pages read an s3:// warehouse: the queue, an episode, a decision's effect on the
    funnel; a second reviewer's machine (an empty read cache) sees the same."""
    from review_app import dashboard, episode
    from warehouse.settings import S3Settings

    url, s3 = f"s3://{s3_server.new_bucket()}/review", S3Settings(
        endpoint_url=s3_server.endpoint, access_key=s3_server.access_key, secret_key=s3_server.secret_key)
    state_url = f"sqlite:///{tmp_path / 'state.db'}"
    store = Store(url, state_url, s3=s3, local_dir=tmp_path / "writer")
    ids = make_round(store, n_tasks=4)
    make_accounts(store)
    ann = accounts.User("ann", "reviewer")
    decisions.record_decision(store, reviewer="ann", round_id="r0001", episode_id=ids[0], decision="approve")
    reader = Store(url, state_url, s3=s3, local_dir=tmp_path / "reader")
    page = queue.queue_page(reader, ann, queue.QueueFilter(status="any"), limit=10)
    assert sorted(r["episode_id"] for r in page.rows) == sorted(ids)
    view = episode.load_episode(reader, ids[1], "r0001")
    assert view.episode.episode_id == ids[1] and view.steps and view.task is not None and view.marks
    funnel = {row["stage"]: row["count"] for row in dashboard.funnel(reader, "r0001", Overlap())}
    assert funnel["3 episodes collected"] == funnel["4 episodes curated"] == 4
    assert funnel["5 episodes reviewed"] == 1  # ann's decision, in the state database
    assert dashboard.funnel(store, "r0001", Overlap()) == dashboard.funnel(reader, "r0001", Overlap())
    assert (tmp_path / "reader" / "s3-cache" / "shards").is_dir()  # read through the reader's own cache


def test_a_release_holds_the_decisions_made_before_it(tmp_path, state_url):
    store = Store(tmp_path / "d", state_url)
    ids = make_round(store, n_tasks=4)
    make_accounts(store)
    ov = Overlap(0.0, 2)
    plan = {"episodes": 10, "families": {"F01": 0.5, "F02": 0.5}}
    with pytest.raises(InputError, match="nothing is approved"):
        release.approve_release(store, lead="lea", dataset_version="v1", round_ids=["r0001"], sampling_plan=plan, overlap=ov)
    decisions.record_decision(store, reviewer="ann", round_id="r0001", episode_id=ids[0], decision="approve")
    decisions.record_decision(store, reviewer="ann", round_id="r0001", episode_id=ids[1], decision="approve")
    with pytest.raises(InputError, match="not a lead"):
        release.approve_release(store, lead="ann", dataset_version="v1", round_ids=["r0001"], sampling_plan=plan, overlap=ov)
    rel = release.approve_release(store, lead="lea", dataset_version="v1", round_ids=["r0001"], sampling_plan=plan, overlap=ov)
    # Later decisions change what is approved now, not what the release holds.
    decisions.record_decision(store, reviewer="ann", round_id="r0001", episode_id=ids[2], decision="approve")
    decisions.record_decision(
        store, reviewer="ann", round_id="r0001", episode_id=ids[0], decision="reject", reason_code="wrong_result"
    )
    assert release.release_episode_ids(store, rel) == sorted(ids[:2])
    now = {e for e, f in final_decisions(store, ["r0001"], ov).items() if f.decision == "approve"}
    assert now == {ids[1], ids[2]}
    with pytest.raises(InputError, match="already released"):
        release.approve_release(store, lead="lea", dataset_version="v1", round_ids=["r0001"], sampling_plan=plan, overlap=ov)


def test_an_adjudication_carries_the_leads_first_wrong_step_into_exports(tmp_path):
    from flows.export_cmd import export

    store = Store(tmp_path / "d")
    make_round(store, n_tasks=6)
    make_accounts(store)
    # a sound, verified episode with a step after the first, so masking step 1 shows
    eid, n = store.duck().execute(
        "SELECT episode_id, o.steps FROM outcomes o JOIN marks m USING (episode_id) WHERE o.success AND o.steps >= 2 "
        "GROUP BY ALL HAVING bool_and(m.passed OR m.\"check\" IN ('routing', 'judges')) ORDER BY 1 LIMIT 1"
    ).fetchone()
    ov = Overlap(1.0, 2)  # every episode needs two reviewers
    decisions.record_decision(store, reviewer="ann", round_id="r0001", episode_id=eid, decision="approve")
    decisions.record_decision(
        store, reviewer="bob", round_id="r0001", episode_id=eid, decision="reject", reason_code="wrong_result"
    )
    assert final_decisions(store, None, ov)[eid].status == "disputed"
    decisions.adjudicate(
        store, lead="lea", round_id="r0001", episode_id=eid, decision="approve",
        reason_code="other", reason_text="right result, one wasted step", first_wrong_step=1,
    )
    final = final_decisions(store, None, ov)[eid]
    assert (final.decision, final.status, final.first_wrong_step) == ("approve", "adjudicated", 1)
    assert "one wasted step" in final.reason and final.round_id == "r0001"
    _, manifest = export(store, tmp_path / "x", fmt="sharegpt", include_verified=False,
                         decisions=final_decisions(store, None, ov))
    [row] = [json.loads(line) for name in manifest["files"] for line in (export_dir(tmp_path / "x", manifest) / name).read_text().splitlines()]
    agent = [t for t in row["conversations"] if t["from"] in ("function_call", "gpt")]
    assert row["id"] == eid and len(agent) >= 2
    assert [t["loss"] for t in agent[:2]] == [True, False]  # masked from the lead's step, not the reviewers' (none)


def test_a_decision_for_an_episode_or_round_that_does_not_exist_is_refused(tmp_path, state_url):
    from sqlmodel import select

    from warehouse import review_tables as rt
    from warehouse import state

    store = Store(tmp_path / "d", state_url)
    ids = make_round(store, n_tasks=2)
    make_accounts(store)
    near_miss = ids[0][:-1] + ("0" if ids[0][-1] != "0" else "1")  # one character off a real id
    cases = [
        ("r0002", ids[0], "no round 'r0002'"),
        ("", ids[0], "no round ''"),
        ("r0001", near_miss, f"no episode '{near_miss}' in round r0001"),
        ("r0001", "", "no episode '' in round r0001"),
    ]
    for round_id, eid, message in cases:
        with pytest.raises(InputError, match=message):
            decisions.record_decision(store, reviewer="ann", round_id=round_id, episode_id=eid, decision="approve")
        with pytest.raises(InputError, match=message):
            decisions.adjudicate(store, lead="lea", round_id=round_id, episode_id=eid, decision="approve")
        with pytest.raises(InputError, match=message):
            decisions.save_draft(store, reviewer="ann", round_id=round_id, episode_id=eid, reason_text="x")
    # a step the episode does not have is refused for a lead too (the app passes no step count)
    with pytest.raises(InputError, match="not a step"):
        decisions.adjudicate(store, lead="lea", round_id="r0001", episode_id=ids[0], decision="approve", first_wrong_step=99)
    with pytest.raises(InputError, match="needs a first wrong step"):
        decisions.record_decision(store, reviewer="ann", round_id="r0001", episode_id=ids[0], decision="approve",
                                  recovered=True)
    with store.session() as s:  # nothing was written
        assert s.exec(select(state.Review)).all() == []
        assert s.exec(select(rt.Adjudication)).all() == []
        assert s.exec(select(rt.ReviewDraft)).all() == []
    saved = decisions.record_decision(store, reviewer="ann", round_id="r0001", episode_id=ids[0], decision="approve",
                                      first_wrong_step=0, recovered=True)
    assert (saved.first_wrong_step, saved.recovered) == (0, True)


def test_recovered_is_kept_by_the_counting_decision_and_by_adjudication(tmp_path):
    store = Store(tmp_path / "d")
    ids = make_round(store, n_tasks=3)
    make_accounts(store)
    ov = Overlap(1.0, 2)
    a, b, c = ids

    def vote(who, eid, step, recovered, decision="approve"):
        decisions.record_decision(store, reviewer=who, round_id="r0001", episode_id=eid, decision=decision,
                                  reason_code="" if decision == "approve" else "wrong_result",
                                  first_wrong_step=step, recovered=recovered)

    vote("ann", a, 1, True)
    vote("bob", a, 1, True)
    vote("ann", b, 1, True)
    vote("bob", b, 1, False)  # one of them saw no recovery: the whole tail stays masked
    vote("ann", c, 0, False)
    vote("bob", c, 0, False, "reject")
    finals = final_decisions(store, None, ov)
    assert (finals[a].first_wrong_step, finals[a].recovered) == (1, True)
    assert (finals[b].first_wrong_step, finals[b].recovered) == (1, False)
    assert finals[c].status == "disputed"
    decisions.adjudicate(store, lead="lea", round_id="r0001", episode_id=c, decision="approve",
                         first_wrong_step=0, recovered=True)
    final = final_decisions(store, None, ov)[c]
    assert (final.decision, final.first_wrong_step, final.recovered) == ("approve", 0, True)


def test_the_same_decision_twice_in_a_moment_is_recorded_once(tmp_path, state_url):
    """A double click, or Streamlit replaying the button in a second rerun, is one decision."""
    from datetime import timedelta

    from sqlmodel import select

    from warehouse import state

    store = Store(tmp_path / "d", state_url)
    ids = make_round(store, n_tasks=2)
    make_accounts(store)
    kw = dict(round_id="r0001", episode_id=ids[0], decision="reject", reason_code="wrong_result", reason_text="no")
    first = decisions.record_decision(store, reviewer="ann", **kw)
    again = decisions.record_decision(store, reviewer="ann", **kw)
    assert again.id == first.id and again.decided_at == first.decided_at
    decisions.record_decision(store, reviewer="bob", **kw)  # another reviewer: another vote
    decisions.record_decision(store, reviewer="ann", **{**kw, "reason_text": "no, really"})  # changed: a new row
    with store.session() as s:
        rows = [(r.reviewer, r.reason) for r in s.exec(select(state.Review).order_by(state.Review.id))]
    assert rows == [("ann", "wrong_result: no"), ("bob", "wrong_result: no"), ("ann", "wrong_result: no, really")]
    # the window: the same decision later on is recorded again (it says when it was confirmed)
    last = state.Review(episode_id="e", round_id="r", reviewer="ann", decision="approve")
    same = state.Review(episode_id="e", round_id="r", reviewer="ann", decision="approve",
                        decided_at=last.decided_at + decisions.REPEAT_WINDOW - timedelta(milliseconds=1))
    assert decisions.is_repeat(last, same)
    assert not decisions.is_repeat(last, state.Review(**{**same.model_dump(), "decided_at": last.decided_at + decisions.REPEAT_WINDOW}))
    assert not decisions.is_repeat(last, state.Review(**{**same.model_dump(), "first_wrong_step": 0}))
    assert not decisions.is_repeat(None, same)


def test_next_episode_walks_the_whole_queue_and_wraps_at_its_end(tmp_path):
    """Skipping without deciding moves forward through the queue, not between its first two."""
    store = Store(tmp_path / "d")
    make_round(store, n_tasks=5)
    make_accounts(store)
    ann = accounts.User("ann", "reviewer")
    flt = queue.QueueFilter()
    order = [r["episode_id"] for r in queue.queue_page(store, ann, flt, limit=10).rows]
    assert len(order) == 5
    walked, at = [], None
    for _ in range(6):
        nxt = queue.next_episode(store, ann, flt, at)
        walked.append((nxt.episode_id, nxt.wrapped))
        assert nxt.round_id == "r0001"
        at = nxt.episode_id
    assert walked == [(e, False) for e in order] + [(order[0], True)]
    # a decided episode leaves the "to review" queue: next is still the one after it
    decisions.record_decision(store, reviewer="ann", round_id="r0001", episode_id=order[2], decision="approve")
    assert queue.next_episode(store, ann, flt, order[2]).episode_id == order[3]
    # only the current episode left: nowhere to go
    only = queue.QueueFilter(status="reviewed by me")
    assert queue.next_episode(store, ann, only, order[2]) is None
    assert queue.next_episode(store, ann, only, None).episode_id == order[2]
