"""One rule for which review decision counts: plain export, release, `flywheel status`
and the dashboard all use review_app.final under the configured overlap, so a disputed
or partially reviewed episode is never counted or exported as approved."""

from __future__ import annotations

import json

from flows.export_cmd import export
from flows.views import status_rows
from review_app import dashboard, decisions
from review_app.agreement import Overlap
from tests.conftest import cli_env, export_dir, flywheel
from tests.review_fixtures import make_accounts, make_round
from warehouse.settings import Settings
from warehouse.store import Store

EVERYONE_TWICE = Overlap(1.0, 2)  # every episode needs two agreeing reviewers


def _review(store: Store, eid: str, who: str, decision: str) -> None:
    reason = "wrong_result" if decision == "reject" else ""
    decisions.record_decision(store, reviewer=who, round_id="r0001", episode_id=eid, decision=decision,
                              reason_code=reason)


def _sound_successes(store: Store) -> list[str]:
    """Verified episodes the cascade did not rule out, which an approval exports."""
    return [e for (e,) in store.duck().execute(
        "SELECT episode_id FROM outcomes o JOIN marks m USING (episode_id) WHERE o.success "
        "GROUP BY ALL HAVING bool_and(m.passed OR m.\"check\" IN ('routing', 'judges')) ORDER BY 1"
    ).fetchall()]


def test_disputed_and_partial_episodes_are_not_approved_anywhere(tmp_path):
    data = tmp_path / "d"
    store = Store(data)
    make_round(store, n_tasks=8)
    make_accounts(store)
    disputed, partial, decided, *_ = _sound_successes(store)
    _review(store, disputed, "bob", "reject")
    _review(store, disputed, "ann", "approve")  # the latest decision by anyone approves; the reviewers disagree
    _review(store, partial, "ann", "approve")  # one of the two required reviewers
    _review(store, decided, "ann", "approve")
    _review(store, decided, "bob", "approve")

    settings = Settings(data_dir=data, review_overlap=1.0, review_overlap_reviewers=2)
    _, manifest = export(store, tmp_path / "x", fmt="openai", include_verified=False, settings=settings)
    exported = [json.loads(line)["metadata"]["episode_id"]
                for name in manifest["files"] for line in (export_dir(tmp_path / "x", manifest) / name).read_text().splitlines()]
    assert exported == [decided]

    [row] = status_rows(store, overlap=EVERYONE_TWICE)
    assert (row["approved"], row["disputed"], row["partial"]) == (1, 1, 1)
    funnel = {s["stage"]: s["count"] for s in dashboard.funnel(store, "r0001", EVERYONE_TWICE)}
    assert (funnel["5 episodes reviewed"], funnel["6 episodes approved"]) == (3, 1)
    assert dashboard.cost(store, "r0001", EVERYONE_TWICE)["approved"] == 1
    assert [d["episode_id"] for d in dashboard.disputed(store, None, EVERYONE_TWICE)] == [disputed]

    # the command line reads the overlap from the configuration
    env = cli_env(None, FLYWHEEL_REVIEW_OVERLAP="1.0", FLYWHEEL_REVIEW_OVERLAP_REVIEWERS="2")
    res = flywheel("status", "--json", "--data-dir", str(data), env=env, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    [cli_row] = json.loads(res.stdout)["rounds"]
    assert (cli_row["approved"], cli_row["disputed"], cli_row["partial"]) == (1, 1, 1)
    env = cli_env(None, FLYWHEEL_REVIEW_OVERLAP="0")  # one reviewer each: the partial one is approved now
    res = flywheel("status", "--json", "--data-dir", str(data), env=env, cwd=tmp_path)
    assert json.loads(res.stdout)["rounds"][0]["approved"] == 2


def test_a_first_look_export_waits_for_unsettled_reviews(tmp_path):
    data = tmp_path / "d"
    store = Store(data)
    make_round(store, n_tasks=8)
    make_accounts(store)
    disputed, partial, untouched, *_ = _sound_successes(store)
    _review(store, disputed, "bob", "reject")
    _review(store, disputed, "ann", "approve")
    _review(store, partial, "bob", "reject")  # one of the two required votes, and it is a rejection
    settings = Settings(data_dir=data, review_overlap=1.0, review_overlap_reviewers=2)
    _, manifest = export(store, tmp_path / "x", fmt="openai", include_verified=True, settings=settings)
    exported = {json.loads(line)["metadata"]["episode_id"]
                for name in manifest["files"] for line in (export_dir(tmp_path / "x", manifest) / name).read_text().splitlines()}
    assert untouched in exported
    assert disputed not in exported and partial not in exported
    assert manifest["excluded"]["review_disputed"] == 1 and manifest["excluded"]["review_partial"] == 1
