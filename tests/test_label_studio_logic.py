"""The Label Studio sync's logic over the in-memory fake (the real server is in
tests/test_label_studio_server.py): push keyed by episode, pull all-or-nothing, edits and
deletions, unknown choices, a hand-edited config, a failure midway."""

from __future__ import annotations

import re
from html import escape

import pytest
from sqlmodel import select

from review_app import accounts
from review_app.agreement import Overlap
from review_app.decisions import WITHDRAWN, record_decision
from review_app.final import final_decisions
from review_app.label_studio import config
from review_app.label_studio.annotations import parse_result
from review_app.label_studio.client import LabelStudioError
from review_app.label_studio.fake_client import FakeLabelStudio
from review_app.label_studio.sync import differences, episodes_to_push, pull, push, reviewer_names
from review_app.label_studio.tasks import step_choice
from tests.review_fixtures import make_accounts, make_round
from warehouse import review_tables as rt
from warehouse import state
from warehouse.errors import InputError
from warehouse.settings import LabelStudioSettings
from warehouse.store import Store

LS = LabelStudioSettings(url="http://fake", token="pat-good", page_size=3)
ALL = Overlap(share=1.0, reviewers=2)  # every episode needs two agreeing reviewers


def choices(name: str, *values: str) -> dict:
    return {"from_name": name, "to_name": config.TRAJECTORY, "type": "choices", "value": {"choices": list(values)}}


def notes(text: str) -> dict:
    return {"from_name": config.NOTES, "to_name": config.TRAJECTORY, "type": "textarea", "value": {"text": [text]}}


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """One real curated round, copied per test (building it runs the phone and the cascade)."""
    path = tmp_path_factory.mktemp("ls") / "d"
    store = Store(path)
    make_round(store, n_tasks=8)
    make_accounts(store)
    return path


@pytest.fixture
def store(base, tmp_path):
    import shutil

    shutil.copytree(base, tmp_path / "d")
    return Store(tmp_path / "d")


def reviews(store: Store) -> list[state.Review]:
    with store.session() as s:
        return list(s.exec(select(state.Review).order_by(state.Review.id)))


def test_push_routed_only_and_twice_creates_nothing_twice(store):
    fake = FakeLabelStudio(page_size=2)
    routed = episodes_to_push(store, None, everything=False)
    everything = episodes_to_push(store, None, everything=True)
    assert 0 < len(routed) < len(everything) == 8
    first = push(store, fake, LS, round_ids=None)
    assert (first.created, first.updated, first.selected) == (len(routed), 0, len(routed))
    assert sorted(t["data"]["episode_id"] for t in fake.task_data.values()) == routed
    again = push(store, fake, LS, round_ids=None)
    assert (again.created, again.updated, again.unchanged) == (0, 0, len(routed))
    assert len(fake.task_data) == len(routed)
    wider = push(store, fake, LS, round_ids=None, everything=True)
    assert (wider.created, wider.unchanged) == (8 - len(routed), len(routed))
    assert len(fake.task_data) == 8
    # a task whose content changed is updated in place, not duplicated
    tid = fake.task_id_of(routed[0])
    fake.task_data[tid]["data"]["digest"] = "stale"
    fixed = push(store, fake, LS, round_ids=None, everything=True)
    assert (fixed.created, fixed.updated) == (0, 1) and len(fake.task_data) == 8


def test_task_carries_readable_steps_choices_and_a_suggestion(store):
    fake = FakeLabelStudio()
    push(store, fake, LS, round_ids=None, everything=True)
    assert not any("base64" in t["data"]["html"] for t in fake.task_data.values())
    task = max(fake.task_data.values(), key=lambda t: t["data"]["n_steps"])
    data = task["data"]
    assert data["step_choices"][0] == {"value": config.NO_WRONG_STEP}
    assert len(data["step_choices"]) == data["n_steps"] + 1
    assert data["html"].count("<details>") >= 1  # tool calls folded
    assert escape(data["instruction"]).replace("\n", "<br>") in data["html"]
    (pred,) = task["predictions"]
    decision = next(r for r in pred["result"] if r["from_name"] == config.DECISION)["value"]["choices"]
    assert decision[0] in ("approve", "reject", "needs_fix")


def _annotate_all(store, fake, who, decision="approve", **extra):
    out = {}
    for tid, t in fake.task_data.items():
        result = [choices(config.DECISION, decision)]
        if decision == "reject":
            result.append(choices(config.REASON, "wrong_result"))
        result += extra.get("more", [])
        out[t["data"]["episode_id"]] = fake.annotate(tid, who, result)
    return out


def test_two_annotators_agree_and_count_like_the_streamlit_app(store):
    fake = FakeLabelStudio()
    push(store, fake, LS, round_ids=None)
    ann, bob = fake.add_user("ann@example.com"), fake.add_user("Bob.Smith+LS@example.org")
    first = _annotate_all(store, fake, ann)
    summary = pull(store, fake, LS)
    assert summary.new == len(first) and summary.reviewers_created == []  # ann's account holds her address
    finals = final_decisions(store, None, ALL)
    assert {f.status for f in finals.values()} == {"partial"}  # one of two reviewers so far
    _annotate_all(store, fake, bob)
    before = len(reviews(store))
    with pytest.raises(InputError, match=r"^Label Studio user 'Bob.Smith\+LS@example.org' \(annotation \d+ on task "
                                         r"\d+\) has no reviewer account with that e-mail; nothing was pulled; "
                                         r"link it with: flywheel reviewer set NAME --email Bob.Smith\+LS@example.org$"):
        pull(store, fake, LS)
    assert len(reviews(store)) == before  # nothing pulled, no look-alike account made
    with store.session() as s:
        assert sorted(r.name for r in rt.list_reviewers(session=s)) == ["ann", "bob", "lea"]
    accounts.change_account(store, "bob", email="bob.smith+ls@example.org")  # compared in lower case
    summary = pull(store, fake, LS)
    assert summary.new == len(first) and summary.unchanged == len(first)
    finals = final_decisions(store, None, ALL)
    assert {(f.status, f.decision) for f in finals.values()} == {("decided", "approve")}
    assert all(set(f.reviewers) == {"ann", "bob"} for f in finals.values())
    # pulling again changes nothing
    before = len(reviews(store))
    again = pull(store, fake, LS)
    assert (again.new, again.edited, again.unchanged) == (0, 0, 2 * len(first))
    assert len(reviews(store)) == before


def test_a_label_studio_user_counts_as_the_account_with_its_full_email_and_no_other(store):
    from review_app.label_studio.client import RemoteUser

    fake = FakeLabelStudio()
    push(store, fake, LS, round_ids=None)
    tid, data = next(iter(fake.task_data.items()))
    eid = data["data"]["episode_id"]
    impostor = fake.add_user("lea@attacker.example")  # not our lead lea@example.com
    planted = fake.annotate(tid, impostor, [choices(config.DECISION, "approve")])
    with pytest.raises(InputError, match="'lea@attacker.example' .* has no reviewer account with that e-mail"):
        pull(store, fake, LS)
    assert reviews(store) == []
    fake.delete_annotation(planted.id)
    # two people called cy, each with an account holding their address: two votes
    fake2 = fake
    accounts.add_reviewer(store, "cy", "reviewer", "a long password", email="cy@example.com")
    accounts.add_reviewer(store, "cy2", "reviewer", "a long password", email="CY@elsewhere.org")
    one, other = fake2.add_user("cy@example.com"), fake2.add_user("cy@elsewhere.org")
    fake2.annotate(tid, one, [choices(config.DECISION, "approve")])
    fake2.annotate(tid, other, [choices(config.DECISION, "reject"), choices(config.REASON, "hallucination")])
    summary = pull(store, fake2, LS)
    assert summary.reviewers_created == []
    final = final_decisions(store, None, ALL)[eid]
    assert final.status == "disputed" and set(final.reviewers) == {"cy", "cy2"}  # not one vote
    # the first cy changes her address in Label Studio: refused until her account says so too
    fake2.people[one.id] = RemoteUser(one.id, "cy.new@example.com", "cy.new@example.com")
    fake2.annotate(tid, fake2.people[one.id], [choices(config.DECISION, "reject"), choices(config.REASON, "hallucination")])
    with pytest.raises(InputError, match="'cy.new@example.com'"):
        pull(store, fake2, LS)
    accounts.change_account(store, "cy", email="cy.new@example.com")
    pull(store, fake2, LS)
    assert "cy.new" not in {r.reviewer for r in reviews(store)}
    assert final_decisions(store, None, ALL)[eid].decision == "reject"


def test_one_email_is_on_one_account_and_bad_addresses_are_refused(store):
    with pytest.raises(InputError, match="e-mail ann@example.com is already on reviewer 'ann'"):
        accounts.change_account(store, "bob", email="ANN@example.com ")
    with pytest.raises(InputError, match="already on reviewer 'ann'"):
        accounts.add_reviewer(store, "dan", "reviewer", "a long password", email="ann@example.com")
    for bad in ("ann", "a b@example.com", "@example.com", "ann@", "a@b@c", "x\n@y"):
        with pytest.raises(InputError, match="is not an address like name@example.org"):
            accounts.change_account(store, "bob", email=bad)
    accounts.change_account(store, "bob", email="")  # removed
    with store.session() as s:
        assert rt.get_reviewer(session=s, name="bob").email is None


def test_mixed_surfaces_dispute_and_adjudication(store):
    fake = FakeLabelStudio()
    push(store, fake, LS, round_ids=None)
    bob = fake.add_user("bob@example.com")
    tid, data = next(iter(fake.task_data.items()))
    eid = data["data"]["episode_id"]
    record_decision(store, reviewer="ann", round_id=data["data"]["round_id"], episode_id=eid, decision="approve")
    fake.annotate(tid, bob, [choices(config.DECISION, "reject"), choices(config.REASON, "hallucination")])
    pull(store, fake, LS)
    assert final_decisions(store, None, ALL)[eid].status == "disputed"
    diffs = differences(store, fake, LS, ALL)
    assert [d.kind for d in diffs if d.episode_id == eid] == []  # disputed: nothing counts yet
    with store.session() as s:
        rt.add_adjudication(session=s, adjudication=rt.Adjudication(
            episode_id=eid, round_id=data["data"]["round_id"], lead="lea", decision="approve"))
    assert final_decisions(store, None, ALL)[eid].decision == "approve"
    kinds = {d.kind for d in differences(store, fake, LS, ALL) if d.episode_id == eid}
    assert kinds == {"counts_otherwise"}  # Label Studio says reject, the lead said approve


def test_edit_and_delete_in_label_studio(store):
    fake = FakeLabelStudio()
    push(store, fake, LS, round_ids=None)
    ann = fake.add_user("ann@example.com")
    tid, t = next(iter(fake.task_data.items()))
    eid, n = t["data"]["episode_id"], t["data"]["n_steps"]
    a = fake.annotate(tid, ann, [choices(config.DECISION, "approve")])
    pull(store, fake, LS)
    one = Overlap(share=0.0)
    assert final_decisions(store, None, one)[eid].decision == "approve"
    fake.annotate(tid, ann, [choices(config.DECISION, "needs_fix"), choices(config.FIRST_WRONG, step_choice(n - 1, "x")),
                             choices(config.RECOVERED, "recovered"), notes("close")], annotation_id=a.id)
    summary = pull(store, fake, LS)
    assert (summary.new, summary.edited) == (0, 1)
    final = final_decisions(store, None, one)[eid]
    assert (final.decision, final.first_wrong_step) == ("needs_fix", n - 1)
    last = reviews(store)[-1]
    assert (last.recovered, last.reason, last.reviewer) == (True, "close", "ann")
    fake.delete_annotation(a.id)
    summary = pull(store, fake, LS)
    assert summary.withdrawn == 1
    assert reviews(store)[-1].decision == WITHDRAWN
    assert eid not in final_decisions(store, None, one)
    assert pull(store, fake, LS).withdrawn == 0  # once


def test_unknown_choice_pulls_nothing_and_the_fix_pulls_all(store):
    fake = FakeLabelStudio()
    push(store, fake, LS, round_ids=None)
    ann = fake.add_user("ann@example.com")
    made = _annotate_all(store, fake, ann)
    bad_eid = sorted(made)[-1]
    bad = made[bad_eid]
    fake.annotate(bad.task_id, ann, [choices(config.DECISION, "Approve")], annotation_id=bad.id)  # a near miss
    with pytest.raises(InputError, match=rf"annotation {bad.id} by ann@example.com: unknown decision 'Approve'"):
        pull(store, fake, LS)
    assert reviews(store) == []
    fake.annotate(bad.task_id, ann, [choices(config.DECISION, "approve")], annotation_id=bad.id)
    assert pull(store, fake, LS).new == len(made)


def test_hand_edited_config_is_refused_then_push_restores_it(store):
    fake = FakeLabelStudio()
    summary = push(store, fake, LS, round_ids=None)
    pid = summary.project_id
    fake.set_label_config(pid, config.label_config().replace('<Choice value="needs_fix"', '<Choice value="maybe"'))
    with pytest.raises(LabelStudioError, match="'decision' control has unknown choices maybe; missing needs_fix"):
        pull(store, fake, LS)
    assert push(store, fake, LS, round_ids=None).config_restored
    assert pull(store, fake, LS).tasks == summary.created


def test_failure_midway_through_a_pull_leaves_the_database_as_it_was(store):
    fake = FakeLabelStudio(page_size=2)
    push(store, fake, LS, round_ids=None, everything=True)
    ann = fake.add_user("ann@example.com")
    _annotate_all(store, fake, ann)
    fake.fail_after_pages = 2
    with pytest.raises(LabelStudioError, match="dropped the connection"):
        pull(store, fake, LS)
    assert reviews(store) == []
    fake.fail_after_pages = None
    assert pull(store, fake, LS).new == 8
    assert len(reviews(store)) == 8


def test_unreachable_is_one_error_and_nothing_changes(store):
    fake = FakeLabelStudio()
    fake.reachable = False
    with pytest.raises(LabelStudioError, match="cannot reach"):
        push(store, fake, LS, round_ids=None)
    assert fake.task_data == {}


@pytest.mark.parametrize(
    ("result", "problem"),
    [
        ([choices(config.DECISION, "approve", "reject")], "2 choices for 'decision'"),
        ([choices(config.DECISION, "reject")], "a rejection needs a reason"),
        ([choices(config.DECISION, "reject"), choices(config.REASON, "other")], "needs a few words"),
        ([choices(config.DECISION, "approve"), choices(config.REASON, "rude")], "unknown reason 'rude'"),
        ([choices(config.DECISION, "approve"), choices(config.FIRST_WRONG, "9 · search")], "unknown first wrong step"),
        ([choices(config.DECISION, "approve"), choices(config.FIRST_WRONG, "step two")], "unknown first wrong step"),
        ([choices(config.DECISION, "approve"), choices(config.RECOVERED, "recovered")], "needs a first wrong step"),
        ([choices(config.DECISION, "approve"), choices("mood", "happy")], "unknown control 'mood'"),
    ],
)
def test_annotation_near_misses(result, problem):
    with pytest.raises(InputError, match=problem):
        parse_result(result, n_steps=5)


def test_annotation_reads_every_field():
    got = parse_result([choices(config.DECISION, "reject"), choices(config.REASON, "other"), notes("  wrong city "),
                        choices(config.FIRST_WRONG, "2 · send_message"), choices(config.RECOVERED, "recovered")], 5)
    assert (got.decision, got.reason_code, got.reason_text, got.first_wrong_step, got.recovered) == (
        "reject", "other", "wrong city", 2, True)
    assert parse_result([choices(config.FIRST_WRONG, config.NO_WRONG_STEP)], 5) is None  # no decision yet
    assert parse_result([choices(config.DECISION, "approve"), choices(config.FIRST_WRONG, config.NO_WRONG_STEP)],
                        5).first_wrong_step is None


def test_our_config_passes_its_own_check_and_edits_do_not():
    ours = config.label_config()
    assert config.config_problem(ours) is None
    assert "no control named 'recovered'" in config.config_problem(ours.replace('name="recovered"', 'name="rec"'))
    assert "not valid XML" in config.config_problem(ours[:-3])
    assert "no longer lists" in config.config_problem(ours.replace('value="$step_choices"', 'value="$steps"'))


def test_reviewer_names_from_label_studio_users():
    from review_app.label_studio.client import RemoteUser

    by_email = {"ann@example.com": "ann", "jo.ann+x@example.com": "joann"}
    users = [RemoteUser(3, "ann@example.com"), RemoteUser(4, "Jo.Ann+x@Example.com"), RemoteUser(5, "ann@other.org"),
             RemoteUser(6, "", "ann"), RemoteUser(7, "ann", "ann")]
    assert reviewer_names(users, by_email) == {3: "ann", 4: "joann"}


def test_screens_are_served_by_url_and_linked_from_tasks(store):
    from starlette.testclient import TestClient

    from review_app import screens
    from review_app.episode import load_episode
    from review_app.label_studio.screens_server import screens_app

    fake = FakeLabelStudio()
    ls = LS.model_copy(update={"screens_url": "http://127.0.0.1:8090/"})
    push(store, fake, ls, round_ids=None, everything=True)
    task = max(fake.task_data.values(), key=lambda t: t["data"]["n_steps"])["data"]
    eid = task["episode_id"]
    assert f'src="http://127.0.0.1:8090/{eid}/0.svg"' in task["html"]
    client = TestClient(screens_app(store))
    got = client.get(f"/{eid}/0.svg")
    assert got.status_code == 200 and got.headers["content-type"] == "image/svg+xml" and "<svg" in got.text
    view = load_episode(store, eid)  # the same image the review app shows after step 0
    assert got.text == screens.before_and_after(view.task, view.steps, 0)[1].svg
    assert client.get(f"/{eid}/{task['n_steps']}.svg").status_code == 404  # one past the last step
    assert client.get("/e-no-such-episode/0.svg").status_code == 404


def test_a_short_token_is_blanked_in_what_comes_from_outside_not_in_our_words():
    from review_app.label_studio.sdk_client import SdkLabelStudio

    client = SdkLabelStudio("http://127.0.0.1:9/tok", "tok", timeout_s=5)  # nothing listens on port 9
    with pytest.raises(LabelStudioError) as err:
        client.whoami()
    text = str(err.value)
    assert "while trying to check who the token belongs to" in text and "<token>en" not in text
    assert "http://127.0.0.1:9/<token>" in text  # the URL is from outside: the token in it is blanked


def test_failed_steps_are_labelled_by_their_error_and_the_trajectory_is_inline(tmp_path):
    from review_app.episode import load_episode
    from review_app.label_studio.config import label_config
    from review_app.label_studio.tasks import trajectory_html
    from tests.review_fixtures import LONG_FAILED, import_long_episode

    store = Store(tmp_path / "d")
    html = trajectory_html(load_episode(store, import_long_episode(store, tmp_path)))
    for step in LONG_FAILED:
        assert re.search(rf"step {step} · <code>\w+</code> ✗ <small>NOT_FOUND</small>", html), step
    assert "✗ <small>ok" not in html
    assert 'value="$html" inline="true"' in label_config()  # no iframe sized once at load: as tall as its content
