"""The review app through Streamlit's AppTest: sign-in, queue, decisions, first error,
drafts, adjudication and the release gate, on a real round in a real state database."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlmodel import select
from streamlit.testing.v1 import AppTest

from curation.routing import CHECK as ROUTING_CHECK
from review_app import decisions
from review_app.plain_text import as_text as shown
from tests.review_fixtures import PASSWORD, make_accounts, make_round
from warehouse import review_tables as rt
from warehouse import state
from warehouse.store import Store

APP = str(Path(__file__).resolve().parents[1] / "review_app" / "app.py")


@pytest.fixture
def world(tmp_path, monkeypatch):
    data = tmp_path / "d"
    store = Store(data)
    ids = make_round(store, n_tasks=6)
    make_accounts(store)
    monkeypatch.setenv("FLYWHEEL_DATA_DIR", str(data))
    monkeypatch.setenv("FLYWHEEL_REVIEW_OVERLAP", "0")  # one reviewer per episode unless a test says otherwise
    return store, ids


def _signed_in(name: str, password: str = PASSWORD) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.text_input(key="signin_name").input(name)
    at.text_input(key="signin_password").input(password)
    at.button[0].click().run()
    assert not at.exception
    return at


def _reviews(store: Store) -> list[state.Review]:
    with store.session() as s:
        return list(s.exec(select(state.Review).order_by(state.Review.id)))


def test_sign_in_refuses_a_wrong_password_and_shows_nothing(world):
    at = _signed_in("ann", "wrong password")
    assert any("Wrong name or password" in shown(e.value) for e in at.error)
    assert "user" not in at.session_state
    assert not [b for b in at.button if b.key and b.key.startswith("open-")]
    at = _signed_in("nobody")
    assert "user" not in at.session_state


def test_only_leads_see_adjudication_and_release(world):
    assert "Release" not in _signed_in("ann").sidebar.radio(key="nav").options
    assert {"Adjudication", "Release"} <= set(_signed_in("lea").sidebar.radio(key="nav").options)


def test_queue_puts_routed_episodes_first_then_failures_and_filters(world):
    store, ids = world
    con = store.duck()
    ok = [e for (e,) in con.execute("SELECT episode_id FROM outcomes WHERE success ORDER BY 1").fetchall()]
    bad = [e for (e,) in con.execute("SELECT episode_id FROM outcomes WHERE NOT success ORDER BY 1").fetchall()]
    # what the real cascade routed to people (make_round runs it), not a mark made up here
    routed = [e for (e,) in con.execute(
        f"SELECT episode_id FROM marks WHERE \"check\" = '{ROUTING_CHECK}' AND NOT passed ORDER BY 1"
    ).fetchall()]
    assert ok and bad and routed
    assert set(routed) & set(ok), "the cascade's sample routes some successes, so routing order differs from failures-first"
    at = _signed_in("ann")
    opened = [b.key.removeprefix("open-") for b in at.button if b.key and b.key.startswith("open-")]
    assert opened == [*routed, *[e for e in bad if e not in routed], *[e for e in ok if e not in routed]]
    at.sidebar.selectbox(key="f_success").select("failures").run()
    opened = [b.key.removeprefix("open-") for b in at.button if b.key and b.key.startswith("open-")]
    assert opened == bad
    at.sidebar.selectbox(key="f_success").select("any").run()
    at.sidebar.multiselect(key="f_family").select("F02").run()
    fams = {r[0] for r in con.execute("SELECT family FROM episodes").fetchall()}
    assert fams == {"F01", "F02"}
    shown = {b.key.removeprefix("open-") for b in at.button if b.key and b.key.startswith("open-")}
    f02 = {e for (e,) in con.execute("SELECT episode_id FROM episodes WHERE family = 'F02'").fetchall()}
    assert shown == f02


def test_decisions_are_saved_at_once_with_who_and_when_and_leave_the_queue(world):
    store, ids = world
    at = _signed_in("ann")
    at.button(key="kb_next").click().run()
    eid = at.session_state["episode_id"]
    at.button(key="kb_reject").click().run()
    # the error names the reasons as the Reason list shows them, not by their codes
    [error] = [shown(e.value) for e in at.error]
    assert "needs a reason" in error and decisions.REJECT_REASONS["wrong_result"] in error, error
    assert "wrong_result" not in error
    assert _reviews(store) == []
    at.selectbox(key="d_reason").select("wrong_result").run()
    at.text_input(key="d_text").input("deleted the wrong contact").run()
    at.button(key="kb_reject").click().run()
    assert not at.exception
    assert any(shown(s.value).startswith("Saved: reject by ann") for s in at.success)
    [r] = _reviews(store)
    assert (r.episode_id, r.reviewer, r.decision, r.reason) == (eid, "ann", "reject", "wrong_result: deleted the wrong contact")
    assert r.decided_at is not None
    at.button(key="kb_next").click().run()
    assert at.session_state["episode_id"] != eid  # decided episodes leave ann's queue
    at.button(key="kb_approve").click().run()
    assert [r.decision for r in _reviews(store)] == ["reject", "approve"]


def test_first_wrong_step_is_marked_from_the_keyboard_buttons_and_kept_as_a_draft(world):
    store, ids = world
    con = store.duck()
    long_ep = con.execute("SELECT episode_id FROM outcomes WHERE steps >= 3 ORDER BY episode_id LIMIT 1").fetchone()[0]
    at = _signed_in("ann")
    at.session_state["episode_id"] = long_ep
    at.session_state["nav_to"] = "Episode"
    at.run()
    at.button(key="kb_step_next").click().run()
    at.button(key="kb_step_next").click().run()
    at.button(key="kb_step_prev").click().run()
    assert at.session_state["step"] == 1
    at.button(key="kb_mark_error").click().run()
    # the navigator counts steps as the step panel and the first wrong step do: from 0
    n = store.duck().execute("SELECT steps FROM outcomes WHERE episode_id = ?", [long_ep]).fetchone()[0]
    captions = [shown(c.value) for c in at.caption]
    assert any(c.startswith(f"step 1 of steps 0–{n - 1} ·") for c in captions), captions
    assert "First wrong step: **1**" in captions
    assert any(shown(m.value).startswith("**Step 1**") for m in at.markdown)
    # The browser closes before a decision: the draft is in the state database.
    with store.session() as s:
        draft = rt.get_draft(session=s, episode_id=long_ep, reviewer="ann")
    assert draft is not None and draft.first_wrong_step == 1
    again = _signed_in("ann")
    again.session_state["episode_id"] = long_ep
    again.session_state["nav_to"] = "Episode"
    again.run()
    assert again.session_state["d_first_error"] == 1 and again.session_state["step"] == 1
    again.selectbox(key="d_reason").select("loop_or_waste").run()
    again.sidebar.radio(key="nav").set_value("Queue").run()
    again.sidebar.radio(key="nav").set_value("Episode").run()
    assert again.selectbox(key="d_reason").value == "loop_or_waste"  # reloaded from the draft after leaving the page
    again.button(key="kb_fix").click().run()
    [r] = _reviews(store)
    assert (r.decision, r.first_wrong_step, r.reason) == ("needs_fix", 1, "loop_or_waste")
    with store.session() as s:
        assert rt.get_draft(session=s, episode_id=long_ep, reviewer="ann") is None


def test_recovered_is_toggled_with_its_own_key_only_after_a_first_wrong_step(world):
    store, ids = world
    long_ep = store.duck().execute(
        "SELECT episode_id FROM outcomes WHERE steps >= 3 ORDER BY episode_id LIMIT 1").fetchone()[0]
    at = _signed_in("ann")
    at.session_state["episode_id"] = long_ep
    at.session_state["nav_to"] = "Episode"
    at.run()
    assert at.button(key="kb_recovered").disabled  # nothing to recover from yet
    at.button(key="kb_step_next").click().run()
    at.button(key="kb_mark_error").click().run()
    assert not at.button(key="kb_recovered").disabled
    at.button(key="kb_recovered").click().run()
    assert at.session_state["d_recovered"] is True
    assert any("recovered" in shown(c.value) for c in at.caption)
    with store.session() as s:
        draft = rt.get_draft(session=s, episode_id=long_ep, reviewer="ann")
    assert (draft.first_wrong_step, draft.recovered) == (1, True)
    at.button(key="kb_mark_error").click().run()  # unmarking the step drops "recovered" with it
    assert at.session_state["d_recovered"] is False and at.button(key="kb_recovered").disabled
    at.button(key="kb_mark_error").click().run()
    at.button(key="kb_recovered").click().run()
    at.button(key="kb_recovered").click().run()  # a second press takes it back
    at.button(key="kb_recovered").click().run()
    at.button(key="kb_approve").click().run()
    assert not at_errors(at)
    [r] = _reviews(store)
    assert (r.decision, r.first_wrong_step, r.recovered) == ("approve", 1, True)


def test_disagreements_go_to_the_leads_adjudication_queue(world, monkeypatch):
    store, ids = world
    monkeypatch.setenv("FLYWHEEL_REVIEW_OVERLAP", "1")  # every episode needs two reviewers
    eid = ids[0]
    decisions.record_decision(store, reviewer="ann", round_id="r0001", episode_id=eid, decision="approve")
    decisions.record_decision(
        store, reviewer="bob", round_id="r0001", episode_id=eid, decision="reject", reason_code="hallucination"
    )
    bob = _signed_in("bob")
    bob.sidebar.selectbox(key="f_status").select("disputed").run()
    assert [b.key for b in bob.button if b.key and b.key.startswith("open-")] == [f"open-{eid}"]
    lea = _signed_in("lea")
    lea.sidebar.radio(key="nav").set_value("Adjudication").run()
    assert lea.button(key=f"adj-submit-{eid}")
    # no decision is preselected: Settle pressed without one settles nothing
    assert lea.selectbox(key=f"adj-decision-{eid}").value is None
    lea.button(key=f"adj-submit-{eid}").click().run()
    assert any(f"Choose a decision for {eid}" in shown(e.value) for e in lea.error)
    with store.session() as s:
        assert rt.adjudications(session=s) == {}
    lea.selectbox(key=f"adj-decision-{eid}").select("reject").run()
    lea.selectbox(key=f"adj-reason-{eid}").select("hallucination").run()
    lea.number_input(key=f"adj-step-{eid}").set_value(0).run()
    lea.checkbox(key=f"adj-recovered-{eid}").check().run()
    lea.button(key=f"adj-submit-{eid}").click().run()
    assert not at_errors(lea)
    assert any(f"Settled {eid}: reject" in shown(s.value) for s in lea.success)
    assert not [b for b in lea.button if b.key == f"adj-submit-{eid}"]
    with store.session() as s:
        [adj] = rt.adjudications(session=s).values()
    assert (adj.episode_id, adj.lead, adj.decision, adj.first_wrong_step, adj.recovered) == (eid, "lea", "reject", 0, True)


def at_errors(at: AppTest) -> list[str]:
    return [shown(e.value) for e in at.error] + ([str(at.exception)] if at.exception else [])


def test_a_lead_approves_a_release_with_the_planners_proposal_edited_in_place(world, tmp_path):
    from flows.planning import refresh_proposal
    from warehouse.settings import load_settings

    store, ids = world
    for eid in ids[:3]:
        decisions.record_decision(store, reviewer="ann", round_id="r0001", episode_id=eid, decision="approve")
    lea = _signed_in("lea")
    lea.sidebar.radio(key="nav").set_value("Release").run()
    assert any("No plan proposed yet" in shown(i.value) for i in lea.info)
    assert not [b for b in lea.button if b.key == "rel_approve"]
    settings = load_settings(data_dir=store.data_dir, round={"episodes": 40})
    proposal = refresh_proposal(store, settings, ["F01", "F02", "F03"])
    lea.run()
    assert lea.text_input(key="rel_version").value == "v0001"
    # The proposal is a table of families a round can generate, each with its share and reason.
    assert lea.number_input(key="plan-share-F01").value == pytest.approx(proposal["mix"][0]["share"])
    assert not [w for w in lea.number_input if w.key == "plan-share-external"]
    assert any("no feedback yet" in shown(c.value) for c in lea.caption)
    # The lead drops F03 and raises F02's level; shares are renormalised.
    lea.number_input(key="plan-share-F03").set_value(0.0)
    lea.number_input(key="plan-level-F02").set_value(2)
    lea.number_input(key="rel_episodes").set_value(30).run()
    lea.button(key="rel_approve").click().run()
    assert not at_errors(lea)
    assert any("Approved rel-0001: v0001 with 3 episodes" in shown(s.value) for s in lea.success)
    with store.session() as s:
        [rel] = rt.list_releases(session=s)
    plan = rel.sampling_plan
    assert (rel.approved_by, rel.episodes, plan["episodes"]) == ("lea", 3, 30)
    assert plan["families"] == {"F01": 0.5, "F02": 0.5} and plan["difficulties"] == {"F01": 1, "F02": 2}
    assert plan["edited"] is True
    assert lea.text_input(key="rel_version").value == "v0002"
    assert any("rel-0001" in shown(c.value) for c in lea.caption)  # the last release is shown beside the new one
    # nothing approved since: the same episodes again, said before the lead approves
    assert any("exactly the episodes of rel-0001" in shown(w.value) for w in lea.warning)
    decisions.record_decision(store, reviewer="ann", round_id="r0001", episode_id=ids[3], decision="approve")
    lea.run()
    assert not any("exactly the episodes" in shown(w.value) for w in lea.warning)
    # Every share at 0 is refused in place, and nothing is released.
    for fam in ("F01", "F02", "F03"):
        lea.number_input(key=f"plan-share-{fam}").set_value(0.0)
    lea.button(key="rel_approve").click().run()
    assert any("every family's share is 0" in shown(e.value) for e in lea.error)
    with store.session() as s:
        assert len(rt.list_releases(session=s)) == 1


def test_a_failed_episode_shows_its_attribution_beside_the_outcome(world):
    store, _ = world
    eid, side, category, kind, step = store.duck().execute(
        "SELECT episode_id, json_extract_string(failure, '$.side'), json_extract_string(failure, '$.category'), "
        "json_extract_string(failure, '$.type'), json_extract_string(failure, '$.step') FROM outcomes "
        "WHERE NOT success ORDER BY episode_id LIMIT 1").fetchone()
    assert category  # the round's failures are attributed
    at = _signed_in("ann")
    at.session_state["episode_id"] = eid
    at.session_state["nav_to"] = "Episode"
    at.run()
    assert not at.exception
    assert any(f"failure: {side}/{category} ({kind}) at step {step}" in shown(c.value) for c in at.caption), \
        [shown(c.value) for c in at.caption]


def test_the_queue_and_the_episode_say_which_split_an_episode_is_in(world):
    store, _ = world
    splits = dict(store.duck().execute("SELECT episode_id, split FROM episodes").fetchall())
    held = sorted(e for e, sp in splits.items() if sp == "challenge")
    assert held and len(held) < len(splits)  # the round holds both
    at = _signed_in("ann")
    held_rows = [shown(m.value) for m in at.markdown if "challenge: held out" in shown(m.value)]
    assert len(held_rows) == len(held), [shown(m.value) for m in at.markdown]
    for eid in (held[0], next(e for e, sp in sorted(splits.items()) if sp != "challenge")):
        at.session_state["episode_id"] = eid
        at.session_state["nav_to"] = "Episode"
        at.run()
        assert not at.exception
        [line] = [shown(c.value) for c in at.caption if shown(c.value).startswith(eid)]
        assert f"split {splits[eid]}" in line and ("held out" in line) == (splits[eid] == "challenge"), line


def test_dashboard_renders_its_plots(world):
    store, ids = world
    decisions.record_decision(store, reviewer="ann", round_id="r0001", episode_id=ids[0], decision="approve")
    ann = _signed_in("ann")
    ann.sidebar.radio(key="nav").set_value("Dashboard").run()
    assert not ann.exception
    assert len(ann.get("vega_lite_chart")) == 5  # funnel, family, capability, throughput, the rounds' mix
    assert any("no feedback yet" in shown(c.value) for c in ann.caption)
    # Two feedback batches: competence per family over batches is plotted too.
    from datetime import UTC, datetime, timedelta

    from flows.planning import refresh_proposal
    from warehouse.contract import FeedbackRecord
    from warehouse.settings import load_settings

    for i in range(2):
        store.commit_unit("feedback", f"b{i}", {"feedback": [
            FeedbackRecord(task_id=f"t{j}", family="F01", difficulty=1, success=j % (i + 2) == 0, batch=f"b{i}",
                           recorded_at=datetime(2026, 3, 1, tzinfo=UTC) + timedelta(days=i)) for j in range(10)]})
    refresh_proposal(store, load_settings(data_dir=store.data_dir), ["F01", "F02"])
    ann.run()
    assert len(ann.get("vega_lite_chart")) == 6


def test_the_app_reads_the_config_file_flywheel_review_passes(world, tmp_path, monkeypatch):
    import sys

    from flows.review_cmd import streamlit_command
    from review_app.agreement import in_overlap
    from warehouse.settings import load_settings

    store, ids = world
    cfg = tmp_path / "team.toml"
    cfg.write_text("review_overlap = 1.0\nreview_overlap_reviewers = 2\n")
    monkeypatch.delenv("FLYWHEEL_REVIEW_OVERLAP")  # the file, not the environment, sets the overlap here
    cmd = streamlit_command(load_settings(cfg), 8599, cfg)
    assert cmd[cmd.index("--config") + 1] == str(cfg.resolve())
    # an episode one reviewer settles under the default overlap (0.1), but not under the file's (1.0)
    eid = next(e for e in sorted(ids) if not in_overlap(e, 0.1))
    decisions.record_decision(store, reviewer="ann", round_id="r0001", episode_id=eid, decision="approve")
    monkeypatch.setattr(sys, "argv", ["app.py", *cmd[cmd.index("--") + 1:]])
    opened = [b.key.removeprefix("open-") for b in _signed_in("bob").button if b.key and b.key.startswith("open-")]
    assert eid in opened  # partial: it waits for a second reviewer
    monkeypatch.setattr(sys, "argv", ["app.py"])
    opened = [b.key.removeprefix("open-") for b in _signed_in("bob").button if b.key and b.key.startswith("open-")]
    assert eid not in opened  # without the file one reviewer decides it


def test_next_episode_skips_forward_through_the_whole_queue(world):
    """``n`` without a decision: each press opens the episode after the current one; at the end
    the queue starts again, and the reviewer is told."""
    at = _signed_in("ann")
    order = [b.key.removeprefix("open-") for b in at.button if b.key and b.key.startswith("open-")]
    assert len(order) == 6
    seen = []
    for _ in range(7):
        at.button(key="kb_next").click().run()
        assert not at_errors(at)
        seen.append(at.session_state["episode_id"])
    assert seen == [*order, order[0]]
    assert any("end of the queue" in shown(i.value) for i in at.info)


def test_the_queue_page_is_clamped_before_its_rows_are_read(world, monkeypatch):
    """On page 2, a filter that leaves one page shows that page's rows, not 'Nothing to review'."""
    from review_app.views import queue_view

    store, _ = world
    monkeypatch.setattr(queue_view, "PAGE_SIZE", 4)
    at = _signed_in("ann")
    at.number_input(key="q_page").set_value(2).run()
    assert len([b for b in at.button if b.key and b.key.startswith("open-")]) == 2  # 6 episodes, 4 a page
    at.sidebar.multiselect(key="f_family").select("F02").run()
    f02 = {e for (e,) in store.duck().execute("SELECT episode_id FROM episodes WHERE family = 'F02'").fetchall()}
    assert len(f02) == 3
    assert {b.key.removeprefix("open-") for b in at.button if b.key and b.key.startswith("open-")} == f02
    assert not any("Nothing to review" in shown(i.value) for i in at.info)
    assert at.number_input(key="q_page").value == 1
    assert any(shown(c.value).startswith("page 1 of 1") for c in at.caption)
