"""A Label Studio pull killed with SIGKILL just before it commits, then rerun: nothing of the
killed pull is recorded, and the rerun records each annotation once, as a pull never killed
would. Needs the real Label Studio CI provides (FLYWHEEL_TEST_LS_URL); skipped without it."""

from __future__ import annotations

import os

import pytest
from sqlmodel import select

from review_app.label_studio import config
from review_app.label_studio.sdk_client import connect
from review_app.label_studio.sync import push
from tests.conftest import cli_env, flywheel
from tests.review_fixtures import make_accounts, make_round
from tests.test_label_studio_server import ANN, BOB, as_user, choices, settings_for
from warehouse import label_studio_tables as lt
from warehouse import state
from warehouse.store import Store

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not os.environ.get("FLYWHEEL_TEST_LS_URL"),
                                                   reason="needs the Label Studio CI starts (FLYWHEEL_TEST_LS_URL)")]


def _recorded(store: Store) -> tuple[list[tuple], int]:
    with store.session() as s:
        reviews = sorted((r.episode_id, r.reviewer, r.decision) for r in s.exec(select(state.Review)))
        links = len(list(s.exec(select(lt.LabelStudioAnnotation))))
    return reviews, links


def test_a_pull_killed_before_it_commits_records_nothing_and_the_rerun_records_each_annotation_once(
        label_studio, tmp_path):
    store = Store(tmp_path / "d")
    make_round(store, n_tasks=4)
    make_accounts(store)
    ls = settings_for(label_studio)
    pushed = push(store, connect(ls.url, ls.token.get_secret_value()), ls, round_ids=None, everything=True)
    tasks = list(connect(ls.url, ls.token.get_secret_value()).tasks(pushed.project_id, annotations=False))
    for email, verdict in ((ANN, "approve"), (BOB, "reject")):
        user = as_user(label_studio, email)
        for t in tasks:
            result = [choices(config.DECISION, verdict)]
            if verdict == "reject":
                result.append(choices(config.REASON, "hallucination"))
            user.annotations.create(id=t.id, result=result)
    env = cli_env(None, FLYWHEEL_LABEL_STUDIO__URL=ls.url, FLYWHEEL_LABEL_STUDIO__TOKEN=label_studio.admin_token,
                  FLYWHEEL_LABEL_STUDIO__PROJECT=ls.project)
    pull = ("label-studio", "pull", "--data-dir", str(store.data_dir), "--no-progress")

    killed = flywheel(*pull, env={**env, "FLYWHEEL_KILL_AT": "pull.planned"}, cwd=tmp_path)
    assert killed.returncode == -9, killed.stderr
    assert _recorded(store) == ([], 0)  # all or nothing: nothing

    rerun = flywheel(*pull, env=env, cwd=tmp_path)
    assert rerun.returncode == 0, rerun.stderr
    reviews, links = _recorded(store)
    assert links == 2 * len(tasks) and len(reviews) == 2 * len(tasks)
    assert len(set(reviews)) == len(reviews)  # each annotation once
    again = flywheel(*pull, env=env, cwd=tmp_path)
    assert again.returncode == 0 and f"{2 * len(tasks)} unchanged" in again.stdout
    assert _recorded(store) == (reviews, links)
