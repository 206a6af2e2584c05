"""The Label Studio gate against a real Label Studio 1.23 (started by .ci/run, or by the
``label_studio`` fixture): push, annotate through the API as two users, pull, decisions,
agreement and a release; no duplicates on a second push; a failure midway through a pull;
a refused token, an unreachable server, a hand-edited config and unknown choices."""

from __future__ import annotations

import uuid
from urllib.parse import urlparse

import pytest
from sqlmodel import select

from review_app.agreement import Overlap
from review_app.dashboard import agreement
from review_app.final import final_decisions
from review_app.label_studio import config
from review_app.label_studio.client import LabelStudioError
from review_app.label_studio.sdk_client import connect
from review_app.label_studio.sync import pull, push
from review_app.release import approve_release, release_episode_ids
from tests.conftest import cli_env, flywheel
from tests.label_studio.proxy import CuttingProxy
from tests.review_fixtures import make_accounts, make_round
from warehouse import review_tables as rt
from warehouse import state
from warehouse.settings import LabelStudioSettings
from warehouse.store import Store

ANN, BOB = "ann@example.com", "bob@example.com"
BOTH = Overlap(share=1.0, reviewers=2)


def choices(name: str, *values: str) -> dict:
    return {"from_name": name, "to_name": config.TRAJECTORY, "type": "choices", "value": {"choices": list(values)}}


def as_user(server, email: str):
    from label_studio_sdk import LabelStudio

    return LabelStudio(base_url=server.url, api_key=server.tokens[email])


def settings_for(server, **kw) -> LabelStudioSettings:
    return LabelStudioSettings(url=server.url, token=server.admin_token, project=f"flywheel {uuid.uuid4().hex[:8]}",
                               **kw)


@pytest.fixture
def store(tmp_path):
    s = Store(tmp_path / "d")
    make_round(s, n_tasks=6)
    make_accounts(s)
    return s


def reviews(store: Store) -> list[state.Review]:
    with store.session() as s:
        return list(s.exec(select(state.Review).order_by(state.Review.id)))


def test_push_annotate_pull_agree_release(label_studio, store):
    ls = settings_for(label_studio, page_size=4)  # several pages each way
    client = connect(ls.url, ls.token.get_secret_value(), page_size=ls.page_size)
    first = push(store, client, ls, round_ids=None, everything=True)
    assert (first.created, first.updated) == (6, 0)
    again = push(store, client, ls, round_ids=None, everything=True)
    assert (again.created, again.updated, again.unchanged) == (0, 0, 6)
    tasks = list(client.tasks(first.project_id, annotations=False))
    assert len(tasks) == 6 and len({t.episode_id for t in tasks}) == 6

    ann, bob = as_user(label_studio, ANN), as_user(label_studio, BOB)
    disputed_eid = tasks[0].episode_id
    made = {}
    for t in tasks:
        made[(ANN, t.episode_id)] = ann.annotations.create(id=t.id, result=[choices(config.DECISION, "approve")])
        bob_result = [choices(config.DECISION, "approve")]
        if t.episode_id == disputed_eid:
            bob_result = [choices(config.DECISION, "reject"), choices(config.REASON, "hallucination"),
                          choices(config.FIRST_WRONG, t.data["step_choices"][1]["value"])]
        made[(BOB, t.episode_id)] = bob.annotations.create(id=t.id, result=bob_result)

    summary = pull(store, client, ls)
    assert (summary.new, summary.edited, summary.reviewers_created) == (12, 0, [])
    finals = final_decisions(store, None, BOTH)
    assert finals[disputed_eid].status == "disputed"
    assert {(f.status, f.decision) for e, f in finals.items() if e != disputed_eid} == {("decided", "approve")}
    rejected = next(r for r in reviews(store) if r.decision == "reject")
    assert (rejected.reviewer, rejected.reason, rejected.first_wrong_step) == ("bob", "hallucination", 0)
    rid = tasks[0].data["round_id"]
    (pair,), _ = agreement(store, rid, BOTH)
    assert (pair.group, pair.items, pair.agreement) == ("ann & bob", 6, pytest.approx(5 / 6))

    # a lead settles the dispute, and the release holds all six
    with store.session() as s:
        rt.add_adjudication(session=s, adjudication=rt.Adjudication(
            episode_id=disputed_eid, round_id=rid, lead="lea", decision="approve"))
    release = approve_release(store, lead="lea", dataset_version="ls-1", round_ids=[rid],
                              sampling_plan={"episodes": 10, "families": {"F01": 0.5, "F02": 0.5}}, overlap=BOTH)
    assert release.episodes == 6

    # later edits and deletions in Label Studio come through; the release keeps what it held
    other = tasks[1].episode_id
    bob.annotations.update(id=made[(BOB, other)].id, result=[choices(config.DECISION, "needs_fix")])
    ann.annotations.delete(id=made[(ANN, other)].id)
    later = pull(store, client, ls)
    assert (later.new, later.edited, later.withdrawn, later.unchanged) == (0, 1, 1, 10)
    assert final_decisions(store, None, BOTH)[other].status == "partial"  # only bob's needs_fix is left
    assert len(release_episode_ids(store, release)) == 6
    n = len(reviews(store))
    assert pull(store, client, ls).unchanged == 11 and len(reviews(store)) == n  # idempotent


def test_a_failure_midway_through_a_pull_changes_nothing_and_the_rerun_completes(label_studio, store):
    ls = settings_for(label_studio, page_size=2)
    client = connect(ls.url, ls.token.get_secret_value(), page_size=2)
    pushed = push(store, client, ls, round_ids=None, everything=True)
    ann = as_user(label_studio, ANN)
    for t in client.tasks(pushed.project_id, annotations=False):
        ann.annotations.create(id=t.id, result=[choices(config.DECISION, "approve")])
    proxy = CuttingProxy(urlparse(label_studio.url).port, cut_after=1)  # the second page never arrives
    try:
        cut = connect(f"http://127.0.0.1:{proxy.port}", ls.token.get_secret_value(), page_size=2)
        with pytest.raises(LabelStudioError) as err:
            pull(store, cut, ls)
        assert "while trying to list the tasks" in str(err.value)
    finally:
        proxy.close()
    assert reviews(store) == []
    assert pull(store, client, ls).new == 6
    assert len(reviews(store)) == 6


def test_refused_token_and_unreachable_server_are_one_line_without_the_token(label_studio, tmp_path):
    bad = label_studio.admin_token[:-6] + "abcdef"  # a near miss: a forged signature
    with pytest.raises(LabelStudioError) as err:
        connect(label_studio.url, bad)
    assert "refused the token" in str(err.value) and bad not in str(err.value)
    with pytest.raises(LabelStudioError, match="refused the token"):
        connect(label_studio.url, "0123456789abcdef0123456789abcdef01234567")  # a legacy-style token: off in 1.23

    data = tmp_path / "d"
    make_round(Store(data), n_tasks=2)
    for url, token, needle in [(label_studio.url, bad, "refused the token"),
                               ("http://127.0.0.1:9", label_studio.admin_token, "cannot reach Label Studio")]:
        env = cli_env(None, FLYWHEEL_LABEL_STUDIO__URL=url, FLYWHEEL_LABEL_STUDIO__TOKEN=token)
        proc = flywheel("label-studio", "push", "--data-dir", str(data), "--no-progress", env=env, cwd=tmp_path)
        text = proc.stdout + proc.stderr
        assert proc.returncode == 1 and "Traceback" not in text
        lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
        assert len(lines) == 1 and needle in lines[0], text
        assert token not in text


def test_hand_edited_config_and_unknown_choices(label_studio, store):
    ls = settings_for(label_studio)
    client = connect(ls.url, ls.token.get_secret_value())
    pushed = push(store, client, ls, round_ids=None)
    admin = as_user(label_studio, "admin@example.com")
    # someone renames a control in the UI (the real server accepts it: no annotations yet)
    admin.projects.update(id=pushed.project_id, label_config=config.label_config().replace(
        'name="notes"', 'name="comments"'))
    with pytest.raises(LabelStudioError, match="edited by hand: the labeling config has no control named 'notes'"):
        pull(store, client, ls)
    assert push(store, client, ls, round_ids=None).config_restored
    task = next(client.tasks(pushed.project_id, annotations=False))
    bob = as_user(label_studio, BOB)
    made = bob.annotations.create(id=task.id, result=[choices(config.DECISION, "approved")])  # not one of ours
    with pytest.raises(Exception, match=rf"annotation {made.id} by {BOB}: unknown decision 'approved'"):
        pull(store, client, ls)
    assert reviews(store) == []
    bob.annotations.update(id=made.id, result=[choices(config.DECISION, "approve")])
    assert pull(store, client, ls).new == 1


def test_sync_command_reports_and_never_prints_the_token(label_studio, store, tmp_path):
    ls = settings_for(label_studio)
    env = cli_env(None, FLYWHEEL_LABEL_STUDIO__URL=label_studio.url,
                  FLYWHEEL_LABEL_STUDIO__TOKEN=label_studio.admin_token, FLYWHEEL_LABEL_STUDIO__PROJECT=ls.project)
    proc = flywheel("label-studio", "sync", "--data-dir", str(store.data_dir), "--no-progress", env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "tasks created" in proc.stdout and "No differences" in proc.stdout
    assert label_studio.admin_token not in proc.stdout + proc.stderr
    again = flywheel("label-studio", "push", "--data-dir", str(store.data_dir), "--no-progress", "--json", env=env,
                     cwd=tmp_path)
    assert '"created": 0' in again.stdout


def test_an_annotator_no_account_holds_is_refused_in_one_line_then_counts_once_linked(label_studio, store, tmp_path):
    from review_app import accounts

    ls = settings_for(label_studio)
    client = connect(ls.url, ls.token.get_secret_value())
    pushed = push(store, client, ls, round_ids=None)
    task = next(client.tasks(pushed.project_id, annotations=False))
    admin = as_user(label_studio, "admin@example.com")  # no account holds this address
    admin.annotations.create(id=task.id, result=[choices(config.DECISION, "approve")])
    env = cli_env(None, FLYWHEEL_LABEL_STUDIO__URL=label_studio.url,
                  FLYWHEEL_LABEL_STUDIO__TOKEN=label_studio.admin_token, FLYWHEEL_LABEL_STUDIO__PROJECT=ls.project)
    proc = flywheel("label-studio", "pull", "--data-dir", str(store.data_dir), "--no-progress", env=env, cwd=tmp_path)
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 1 and len(lines) == 1 and "Traceback" not in proc.stdout + proc.stderr, proc.stderr
    assert "'admin@example.com'" in lines[0] and "flywheel reviewer set NAME --email admin@example.com" in lines[0]
    assert reviews(store) == []
    with store.session() as s:
        assert sorted(r.name for r in rt.list_reviewers(session=s)) == ["ann", "bob", "lea"]  # no look-alike made
    accounts.change_account(store, "lea", email="admin@example.com")
    assert pull(store, client, ls).new == 1
    assert [(r.reviewer, r.decision) for r in reviews(store)] == [("lea", "approve")]
