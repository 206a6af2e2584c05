"""Who may do what in the review gate: no write without a signed-in reviewer, no lead's act by a
reviewer, sessions that expire, throttled sign-ins; every query with a user's value parameterised;
names from data never paths. Real state databases (SQLite and PostgreSQL), the real app under
Streamlit's AppTest, the real command line."""

from __future__ import annotations

import json
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlmodel import select
from streamlit.testing.v1 import AppTest

from review_app import accounts, decisions, release
from review_app.data import Overlap
from review_app.plain_text import as_text as shown
from review_app.queue import STATUS_FILTERS, QueueFilter, queue_page
from tests.conftest import cli_env, flywheel_executable
from tests.fuzz import HOSTILE_STRINGS, tree_digest
from tests.review_fixtures import PASSWORD, make_accounts, make_round
from warehouse import review_tables as rt
from warehouse import state
from warehouse.errors import InputError
from warehouse.store import Store

APP = str(Path(__file__).resolve().parents[1] / "review_app" / "app.py")
INJECTIONS = ["' OR '1'='1", "r0001' OR '1'='1", "'; DROP TABLE reviews; --", "F01') OR TRUE --", '" OR ""="',
              "x' UNION SELECT episode_id FROM episodes --", "%", "_", "*", "\\", "$1", "?"]


@pytest.fixture
def world(tmp_path, state_url):
    store = Store(tmp_path / "d", state_url)
    ids = make_round(store, n_tasks=4)
    make_accounts(store)
    return store, ids


def fw(*args: str, env: dict[str, str], cwd: Path, input_text: str | None = None) -> subprocess.CompletedProcess:
    """The installed ``flywheel`` command, with ``input_text`` on its stdin."""
    return subprocess.run([flywheel_executable(), *args], env=env, cwd=cwd, capture_output=True, text=True,
                          input=input_text, timeout=300)


def _reviews(store: Store) -> list[state.Review]:
    with store.session() as s:
        return list(s.exec(select(state.Review)))


# --- sign-in throttling -----------------------------------------------------------------------


def test_failed_sign_ins_are_throttled_then_released_and_a_good_one_clears_the_count(world):
    store, _ = world
    t0 = datetime.now(UTC)
    for i in range(accounts.MAX_FAILURES):
        assert accounts.authenticate(store, "ann", f"guess {i}", now=t0 + timedelta(seconds=i)) is None
    # the right password is not even checked now: guessing cannot go on
    with pytest.raises(accounts.SignInThrottled, match=r"too many failed sign-ins for 'ann'; try again in \d+ minute"):
        accounts.authenticate(store, "ann", PASSWORD, now=t0 + timedelta(seconds=10))
    assert accounts.authenticate(store, "bob", PASSWORD, now=t0) is not None  # other names are not affected
    later = t0 + accounts.FAILURE_WINDOW + timedelta(seconds=accounts.MAX_FAILURES)
    assert accounts.authenticate(store, "ann", PASSWORD, now=later) == accounts.User("ann", "reviewer")
    # the good sign-in cleared the count: the next failures start from zero
    for i in range(accounts.MAX_FAILURES - 1):
        assert accounts.authenticate(store, "ann", "wrong", now=later + timedelta(seconds=i + 1)) is None
    assert accounts.authenticate(store, "ann", PASSWORD, now=later + timedelta(seconds=30)) is not None
    # failures older than the window are forgotten as new ones come: the table does not grow without end
    with store.session() as s:
        assert len(s.exec(select(rt.SignInFailure)).all()) == 0
    accounts.authenticate(store, "bob", "wrong", now=later + 2 * accounts.FAILURE_WINDOW)
    with store.session() as s:
        assert [f.name for f in s.exec(select(rt.SignInFailure))] == ["bob"]


def test_unknown_names_are_throttled_alike(world):
    """Otherwise the throttle itself would tell which names have accounts."""
    store, _ = world
    t0 = datetime.now(UTC)
    for i in range(accounts.MAX_FAILURES):
        assert accounts.authenticate(store, "mallory", "x", now=t0 + timedelta(seconds=i)) is None
    with pytest.raises(accounts.SignInThrottled):
        accounts.authenticate(store, "mallory", "x", now=t0 + timedelta(seconds=9))


def test_the_decide_command_is_throttled_in_one_line(tmp_path):
    store = Store(tmp_path / "d")
    ids = make_round(store, n_tasks=2)
    make_accounts(store)
    env = cli_env(None)
    argv = ["decide", ids[0], "--reviewer", "ann", "--decision", "approve", "--password-stdin", "--data-dir",
            str(tmp_path / "d")]
    for _ in range(accounts.MAX_FAILURES):
        proc = fw(*argv, env=env, cwd=tmp_path, input_text="wrong password\n")
        assert proc.returncode == 1 and proc.stderr.strip() == "error: wrong name or password for reviewer 'ann'"
    proc = fw(*argv, env=env, cwd=tmp_path, input_text=PASSWORD + "\n")
    assert proc.returncode == 1
    assert proc.stderr.startswith("error: too many failed sign-ins for 'ann'") and len(proc.stderr.splitlines()) == 1
    assert _reviews(store) == []


# --- sessions ---------------------------------------------------------------------------------


def test_a_session_ends_when_it_expires_or_the_account_is_deactivated_and_reads_the_role_again(world):
    store, _ = world
    now = datetime.now(UTC)
    lea = accounts.User("lea", "lead")
    assert accounts.session_user(store, lea, now - timedelta(hours=11), hours=12, now=now) == lea
    assert accounts.session_user(store, lea, now - timedelta(hours=12), hours=12, now=now) is None
    assert accounts.session_user(store, None, now, hours=12, now=now) is None
    assert accounts.session_user(store, lea, None, hours=12, now=now) is None
    with store.session() as s:
        row = rt.get_reviewer(session=s, name="lea")
        row.role = "reviewer"  # demoted while signed in
        s.add(row)
        s.commit()
    assert accounts.session_user(store, lea, now, hours=12, now=now) == accounts.User("lea", "reviewer")
    with store.session() as s:
        row = rt.get_reviewer(session=s, name="lea")
        row.active = False
        s.add(row)
        s.commit()
    assert accounts.session_user(store, lea, now, hours=12, now=now) is None


@pytest.fixture
def app_world(tmp_path, monkeypatch):
    data = tmp_path / "d"
    store = Store(data)
    ids = make_round(store, n_tasks=4)
    make_accounts(store)
    monkeypatch.setenv("FLYWHEEL_DATA_DIR", str(data))
    monkeypatch.setenv("FLYWHEEL_REVIEW_OVERLAP", "0")
    return store, ids


def _sign_in(name: str, password: str = PASSWORD, at: AppTest | None = None) -> AppTest:
    at = at or AppTest.from_file(APP, default_timeout=60).run()
    at.text_input(key="signin_name").input(name)
    at.text_input(key="signin_password").input(password)
    at.button[0].click().run()
    assert not at.exception
    return at


def _open_buttons(at: AppTest) -> list[str]:
    return [b.key for b in at.button if b.key and b.key.startswith("open-")]


def test_an_expired_app_session_shows_the_sign_in_again_and_nothing_else(app_world, monkeypatch):
    monkeypatch.setenv("FLYWHEEL_REVIEW_SESSION_HOURS", "1")
    at = _sign_in("ann")
    assert _open_buttons(at)
    at.session_state["signed_in_at"] = datetime.now(UTC) - timedelta(hours=1, seconds=1)
    at.run()
    assert not at.exception
    assert "user" not in at.session_state and not _open_buttons(at)
    assert at.text_input(key="signin_name") is not None
    assert any("session has ended" in shown(i.value) for i in at.info)


def test_a_reviewer_cannot_reach_a_leads_page_even_by_forcing_it(app_world):
    at = _sign_in("ann")
    at.session_state["nav_to"] = "Release"
    at.run()
    assert at.sidebar.radio(key="nav").value == "Queue"
    assert "Release" not in at.sidebar.radio(key="nav").options


def _reviewer_set(store: Store, cwd: Path, *args: str, input_text: str | None = None) -> None:
    """``flywheel reviewer set`` as an admin runs it, beside the running app."""
    proc = fw("reviewer", "set", *args, "--data-dir", str(store.data_dir), env=cli_env(None), cwd=cwd,
              input_text=input_text)
    assert proc.returncode == 0, proc.stderr


def test_a_lead_demoted_while_signed_in_loses_the_leads_pages_at_once(app_world, tmp_path):
    store, _ = app_world
    at = _sign_in("lea")
    assert "Adjudication" in at.sidebar.radio(key="nav").options
    _reviewer_set(store, tmp_path, "bob", "--role", "lead")  # lea is the only lead: another one first
    _reviewer_set(store, tmp_path, "lea", "--role", "reviewer")
    at.run()
    assert "Adjudication" not in at.sidebar.radio(key="nav").options
    assert at.session_state["user"] == accounts.User("lea", "reviewer")


def test_an_account_deactivated_or_given_a_new_password_is_signed_out_at_once(app_world, tmp_path):
    store, _ = app_world
    ann, bob, bob_elsewhere = _sign_in("ann"), _sign_in("bob"), _sign_in("bob")
    _reviewer_set(store, tmp_path, "ann", "--inactive")
    _reviewer_set(store, tmp_path, "bob", "--password-stdin", input_text="n3w-s3cret\n")
    for at in (ann, bob):
        at.run()
        assert not at.exception
        assert "user" not in at.session_state and not _open_buttons(at)
        assert any("session has ended" in shown(i.value) for i in at.info)
    assert _open_buttons(_sign_in("bob", "n3w-s3cret"))  # the new password signs in
    assert "user" not in _sign_in("bob").session_state  # the old one no more
    bob_elsewhere.run()  # a session opened with the old password ends too
    assert "user" not in bob_elsewhere.session_state
    _reviewer_set(store, tmp_path, "ann", "--active")
    assert _open_buttons(_sign_in("ann"))


def test_the_app_says_when_sign_ins_are_throttled(app_world):
    at = AppTest.from_file(APP, default_timeout=60).run()
    for _ in range(accounts.MAX_FAILURES):
        at = _sign_in("ann", "wrong", at)
    at = _sign_in("ann", PASSWORD, at)
    assert "user" not in at.session_state
    assert any("Too many failed sign-ins" in shown(e.value) for e in at.error)


# --- no write without a reviewer; no lead's act by a reviewer ------------------------------------


def test_nothing_is_written_for_no_reviewer_an_unknown_one_or_a_reviewer_acting_as_a_lead(world):
    store, ids = world
    for who in ("", "  ", "nobody", "ann' --", "a\x00b", "../lea"):
        with pytest.raises(InputError):
            decisions.record_decision(store, reviewer=who, round_id="r0001", episode_id=ids[0], decision="approve")
        with pytest.raises(InputError):
            decisions.save_draft(store, reviewer=who, round_id="r0001", episode_id=ids[0])
    with pytest.raises(InputError, match="not a lead"):
        decisions.adjudicate(store, lead="ann", round_id="r0001", episode_id=ids[0], decision="approve")
    decisions.record_decision(store, reviewer="ann", round_id="r0001", episode_id=ids[0], decision="approve")
    plan = {"episodes": 10, "families": {"F01": 1.0}}
    with pytest.raises(InputError, match="not a lead"):
        release.approve_release(store, lead="ann", dataset_version="v1", round_ids=["r0001"], sampling_plan=plan,
                                overlap=Overlap(0.0, 2))
    with store.session() as s:
        assert [r.reviewer for r in s.exec(select(state.Review))] == ["ann"]
        assert not rt.list_releases(session=s) and not rt.adjudications(session=s)
        assert s.exec(select(rt.ReviewDraft)).all() == []


# --- injection --------------------------------------------------------------------------------


def test_queue_filters_take_injection_strings_as_plain_values(world):
    store, ids = world
    ann = accounts.User("ann", "reviewer")
    everything = queue_page(store, ann, QueueFilter(status="any"), limit=100)
    assert everything.total == len(ids)
    before = _reviews(store)
    for value in INJECTIONS + HOSTILE_STRINGS:
        for flt in (QueueFilter(status="any", families=[value]), QueueFilter(status="any", capabilities=[value]),
                    QueueFilter(status="any", marks=[value]), QueueFilter(status="any", round_ids=[value])):
            page = queue_page(store, ann, flt, limit=100)
            assert page.total == 0 and page.rows == [], (flt, value)
        # a reviewer's name goes in as a value too: a hostile one matches nobody's decisions
        page = queue_page(store, accounts.User(value, "reviewer"), QueueFilter(status="reviewed by me"), limit=100)
        assert page.total == 0
    with pytest.raises(ValueError, match="unknown status filter"):
        queue_page(store, ann, QueueFilter(status="any' OR '1'='1"))
    assert set(STATUS_FILTERS) >= {"to review", "any"}
    assert _reviews(store) == before
    assert queue_page(store, ann, QueueFilter(status="any"), limit=100).total == len(ids)


def test_command_line_options_take_injection_strings_as_plain_values(tmp_path, capsys, real_scrypt):
    """In-process for every string (fast), through the real command for one (accounts hashed at the
    real cost, as the command signs in with it: a weaker hash would be upgraded, changing the tree)."""
    from tests.test_bad_input_cli import run_cli

    store = Store(tmp_path / "d")
    ids = make_round(store, n_tasks=2)
    make_accounts(store)
    d, out = str(tmp_path / "d"), tmp_path / "out"
    before = tree_digest(tmp_path / "d")
    decide = ["decide", ids[0], "--reviewer", "ann", "--decision", "approve", "--password-stdin", "--data-dir", d]
    for value in INJECTIONS:
        for argv in (["export", "--data-dir", d, "--out", str(out), "--round", value],
                     ["export", "--data-dir", d, "--out", str(out), "--release", value],
                     [*decide, "--round", value], [*decide[:1], value, *decide[2:]]):
            code, _, err = run_cli(argv, capsys, stdin=PASSWORD + "\n")
            assert code == 1 and len(err.splitlines()) == 1 and "internal error" not in err, (argv, err)
        assert not out.exists()
    env = cli_env(None)
    for proc in (fw("export", "--data-dir", d, "--out", str(out), "--round", INJECTIONS[1], env=env, cwd=tmp_path),
                 fw(*decide, "--round", INJECTIONS[1], env=env, cwd=tmp_path, input_text=PASSWORD + "\n")):
        assert proc.returncode == 1 and proc.stderr.startswith("error: ") and len(proc.stderr.splitlines()) == 1
    assert tree_digest(tmp_path / "d") == before and not out.exists()
    code, _, err = run_cli(["export", "--data-dir", d, "--out", str(tmp_path / "ok"), "--round", "r0001", "--verified"],
                           capsys)
    assert code == 0, err


# --- names from data are not paths --------------------------------------------------------------


def test_names_from_imported_data_never_become_paths(tmp_path):
    """Task ids, families, templates, splits, tool names and conversation ids that climb out of
    folders come in as plain values: every shard lands under shards/, every export file is one
    of the format's own names in --out."""
    from tests.review_fixtures import airline_conversation

    climb = "../../../escaped"
    records = []
    for i in range(3):
        rec = airline_conversation()
        rec["messages"][1]["content"] += f" ({i})"
        rec["task"] = {"task_id": f"{climb}-{i}", "family": climb, "template": climb, "split": climb}
        rec["reward"] = 1
        rec["id"] = climb
        records.append(rec)
    path = tmp_path / "in" / "conv.jsonl"
    path.parent.mkdir()
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    env, d = cli_env(None), tmp_path / "work" / "d"
    proc = fw("import", str(path), "--data-dir", str(d), env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    store = Store(d)
    ids = [e for (e,) in store.duck().execute("SELECT episode_id FROM episodes").fetchall()]
    for eid in ids:
        decisions.record_decision(store, reviewer=_an_account(store), round_id="r0001", episode_id=eid,
                                  decision="approve")
    for fmt in ("openai", "sharegpt", "hf", "dpo", "rl", "trl", "adp", "verl"):
        out = tmp_path / "work" / "out" / fmt
        proc = fw("export", "--format", fmt, "--out", str(out), "--data-dir", str(d), env=env, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        for f in out.rglob("*"):  # out/NAME (the export's link) and the version it names, beside it
            assert len(f.relative_to(out).parts) <= 2 and climb.strip("./") not in f.name, f
    assert not list(tmp_path.rglob("escaped*"))
    shards = [p for p in d.rglob("*.parquet")]
    assert shards and all(p.relative_to(d).parts[0] == "shards" and p.parent.name.startswith("r") for p in shards)


def _an_account(store: Store) -> str:
    try:
        accounts.add_reviewer(store, "ann", "reviewer", PASSWORD)
    except InputError:
        pass
    return "ann"


# --- the review app talks to this machine only ---------------------------------------------------


def test_the_review_app_is_started_on_loopback_with_usage_statistics_off(tmp_path):
    from flows.review_cmd import streamlit_command
    from warehouse.settings import load_settings

    args = streamlit_command(load_settings(data_dir=tmp_path / "d"), 8600)
    assert args[args.index("--server.address") + 1] == "127.0.0.1"
    assert args[args.index("--browser.gatherUsageStats") + 1] == "false"


def test_the_review_pages_send_nothing_to_third_parties(tmp_path):
    """In Chromium: every request the signed-in queue and an episode make goes to the app itself."""
    import shutil
    from urllib.parse import urlparse

    from playwright.sync_api import expect, sync_playwright

    from tests.test_review_browser import CHROMIUM_ARGS, review_app

    data = tmp_path / "d"
    store = Store(data)
    make_round(store, n_tasks=2)
    make_accounts(store)
    chromium = shutil.which("chromium")
    assert chromium, "Debian's chromium must be installed (apt-get install chromium)"
    hosts: set[str] = set()
    with review_app(tmp_path, data) as url, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page()
            page.set_default_timeout(30_000)
            page.on("request", lambda req: hosts.add(urlparse(req.url).hostname or req.url.split(":", 1)[0]))
            page.goto(url)
            page.get_by_role("textbox", name="Name").fill("ann")
            page.get_by_role("textbox", name="Password").fill(PASSWORD)
            page.get_by_role("button", name="Sign in").click()
            expect(page.get_by_text("Queue · 2 episodes")).to_be_visible(timeout=30_000)
            page.wait_for_function("() => window.__flywheelKeys && window.__flywheelKeys.map.n === 'kb_next'")
            page.locator("body").press("n")  # open the first episode of the queue
            expect(page.get_by_text("Decision", exact=True)).to_be_visible(timeout=30_000)
        finally:
            browser.close()
    assert hosts and hosts <= {"127.0.0.1", "localhost", "data", "blob"}, hosts


def test_exports_pass_the_rounds_as_a_query_parameter(tmp_path):
    """Below the command line's own check of --round: the export queries take the rounds as a
    value, so a quote in one cannot widen the selection."""
    from curation.export_source import episode_rows, episodes_with_steps, task_rows

    store = Store(tmp_path / "d")
    ids = make_round(store, n_tasks=3)
    con = store.duck()
    assert sorted(r["episode_id"] for r in episode_rows(con, ["r0001"])) == sorted(ids)
    for value in INJECTIONS:
        assert list(episode_rows(con, [value])) == []
        assert list(episodes_with_steps(con, [value])) == []
        assert list(task_rows(con, [value])) == []
