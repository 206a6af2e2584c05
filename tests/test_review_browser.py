"""The real review app in Debian's Chromium: sign in, open an episode, decide with the
keyboard, and find the decision in the state database. Screenshots go to test-artifacts/."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from contextlib import contextmanager

import pytest
from sqlmodel import select

from curation.routing import CHECK as ROUTING_CHECK
from review_app import decisions
from tests.conftest import ROOT, alive, cli_env, flywheel_executable, free_port, http_ok, wait_for
from tests.review_fixtures import PASSWORD, make_accounts, make_round
from warehouse import state
from warehouse.store import Store

ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]


def _wait_healthy(url: str, proc: subprocess.Popen, timeout: float = 90) -> None:
    wait_for("the review app", lambda: alive(proc) and http_ok(f"{url}/_stcore/health"), timeout=timeout)


@contextmanager
def review_app(tmp_path, data):
    """``flywheel review`` on ``data`` (overlap off), stopped afterwards; yields its URL."""
    port = free_port()
    env = cli_env(None, FLYWHEEL_REVIEW_OVERLAP="0")
    log = (tmp_path / "review.log").open("w")
    proc = subprocess.Popen(
        [flywheel_executable(), "review", "--port", str(port), "--data-dir", str(data)],
        env=env, cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(url, proc)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGINT)  # flywheel stops its streamlit child on Ctrl+C
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@contextmanager
def chromium_page(height: int = 1000):
    """A page of Debian's Chromium (never a downloaded browser), patient enough for a busy machine."""
    from playwright.sync_api import expect, sync_playwright

    chromium = shutil.which("chromium")
    assert chromium, "Debian's chromium must be installed (apt-get install chromium)"
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": height})
            page.set_default_timeout(30_000)
            expect.set_options(timeout=30_000)  # the first render of a fresh server is slow on a busy machine
            yield page
        finally:
            browser.close()


def sign_in(page, url: str, name: str = "ann") -> None:
    page.goto(url)
    page.get_by_role("textbox", name="Name").fill(name)
    page.get_by_role("textbox", name="Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()


@pytest.fixture
def review_server(tmp_path):
    data = tmp_path / "d"
    store = Store(data)
    make_round(store, n_tasks=6)
    make_accounts(store)
    with review_app(tmp_path, data) as url:
        yield url, store


def test_keyboard_review_in_chromium(review_server):
    from playwright.sync_api import expect

    url, store = review_server
    ARTIFACTS.mkdir(exist_ok=True)
    con = store.duck()
    with chromium_page(1000) as page:
        sign_in(page, url)
        expect(page.get_by_text("Queue · 6 episodes")).to_be_visible()
        page.screenshot(path=str(ARTIFACTS / "review-queue.png"), full_page=True)

        # Keys work once the page's listener is in (polled, not slept for).
        page.wait_for_function("() => window.__flywheelKeys && window.__flywheelKeys.map.n === 'kb_next'")
        # what the real cascade routed to people heads the queue, in episode id order
        routed = [e for (e,) in con.execute(
            f"SELECT episode_id FROM marks WHERE \"check\" = '{ROUTING_CHECK}' AND NOT passed ORDER BY 1"
        ).fetchall()]
        assert len(routed) >= 2
        page.locator("body").press("n")  # the keyboard opens the first episode of the queue
        expect(page.get_by_text("Decision", exact=True)).to_be_visible()
        page.wait_for_function("() => window.__flywheelKeys && window.__flywheelKeys.map.a === 'kb_approve'")
        expect(page.get_by_text(f"{routed[0]} · round r0001 ·", exact=False).first).to_be_visible()
        page.locator("body").press("a")
        expect(page.get_by_text("Saved: approve by ann")).to_be_visible()
        page.locator("body").press("n")  # decided episodes leave the queue: the next routed one opens
        expect(page.get_by_text(f"{routed[1]} · round r0001 ·", exact=False).first).to_be_visible()
        page.wait_for_function("() => window.__flywheelKeys.map.a === 'kb_approve'")
        eid = routed[1]
        n_steps = con.execute("SELECT steps FROM outcomes WHERE episode_id = ?", [eid]).fetchone()[0]
        assert n_steps >= 2
        expect(page.get_by_text(f"step 0 of steps 0–{n_steps - 1}", exact=False)).to_be_visible()
        target = min(2, n_steps - 1)
        for i in range(target):
            page.locator("body").press("j")
            expect(page.get_by_text(f"step {i + 1} of steps 0–{n_steps - 1}", exact=False)).to_be_visible()
        page.locator("body").press("e")
        expect(page.get_by_text(f"First wrong step: {target}")).to_be_visible()
        expect(page.get_by_text("Loss: none from the first wrong step on")).to_be_visible()
        page.wait_for_function("() => window.__flywheelKeys.map.v === 'kb_recovered'")
        page.locator("body").press("v")  # the agent recovered: mask only that step
        expect(page.get_by_text("Loss: none on the first wrong step only", exact=False)).to_be_visible()
        page.locator("body").press("a")
        expect(page.get_by_text("Saved: approve by ann")).to_be_visible()
        page.screenshot(path=str(ARTIFACTS / "review-episode.png"), full_page=True)
    with store.session() as s:
        first, review = s.exec(select(state.Review).order_by(state.Review.id)).all()
    assert (first.episode_id, first.decision) == (routed[0], "approve")
    assert (review.episode_id, review.reviewer, review.decision, review.first_wrong_step, review.recovered) == (
        eid, "ann", "approve", target, True)
    assert (ARTIFACTS / "review-queue.png").stat().st_size > 10_000
    assert (ARTIFACTS / "review-episode.png").stat().st_size > 10_000


def test_fast_keys_are_kept_in_order_and_streamlit_never_sees_them(review_server):
    """``e v a`` typed at once: ``v`` waits for the Recovered button ``e``'s rerun enables, ``a``
    waits for ``v``; the decision is recovered. Streamlit's own hotkeys (``r`` reruns the app,
    which replayed a reject) never see our keys, and the toolbar has no Rerun or Deploy. A
    reload signs out, and the draft is still there after signing in again."""
    from playwright.sync_api import expect

    url, store = review_server
    con = store.duck()
    routed = [e for (e,) in con.execute(
        f"SELECT episode_id FROM marks WHERE \"check\" = '{ROUTING_CHECK}' AND NOT passed ORDER BY 1").fetchall()]
    with chromium_page(1000) as page:
        sign_in(page, url)
        expect(page.get_by_text("Queue · 6 episodes")).to_be_visible()
        expect(page.locator('[data-testid="stMainMenu"]')).to_have_count(0)  # toolbarMode minimal
        expect(page.locator('[data-testid="stAppDeployButton"]')).to_have_count(0)
        # a listener where Streamlit's hotkeys listen (the document, bubbling): it must see none of ours
        page.evaluate("() => { window.__leaked = []; "
                      "document.addEventListener('keydown', (ev) => window.__leaked.push(ev.key)); }")
        page.wait_for_function("() => window.__flywheelKeys && window.__flywheelKeys.map.n === 'kb_next'")
        page.locator("body").press("n")
        page.wait_for_function("() => window.__flywheelKeys.map.a === 'kb_approve'")
        expect(page.get_by_text(f"{routed[0]} · round r0001 ·", exact=False).first).to_be_visible()
        expect(page.get_by_text("First wrong step: none marked")).to_be_visible()
        for key in "eva":  # as fast as a reviewer who knows the keys
            page.keyboard.press(key)
        expect(page.get_by_text("Saved: approve by ann")).to_be_visible()
        # the next one opens with a reason drafted; r rejects it, once
        decisions.save_draft(store, reviewer="ann", round_id="r0001", episode_id=routed[1],
                             reason_code="wrong_result")
        page.keyboard.press("n")
        expect(page.get_by_text(f"{routed[1]} · round r0001 ·", exact=False).first).to_be_visible()
        page.keyboard.press("r")
        expect(page.get_by_text("Saved: reject by ann")).to_be_visible()
        page.wait_for_timeout(1500)  # the replayed click came 0.6 s after the first
        assert page.evaluate("() => window.__leaked") == []
        # as the README says: a reload asks to sign in again, and the draft is kept
        page.keyboard.press("n")
        # while Streamlit reruns, the page it leaves may still be drawn beside the new one: wait for one
        expect(page.get_by_text("First wrong step: none marked")).to_have_count(1)
        expect(page.get_by_text("First wrong step: none marked").first).to_be_visible()
        page.wait_for_function("() => window.__flywheelKeys.map.e === 'kb_mark_error'")
        page.keyboard.press("e")
        expect(page.get_by_text("First wrong step: 0")).to_be_visible()
        page.reload()
        expect(page.get_by_role("button", name="Sign in")).to_be_visible()
        sign_in(page, url)
        page.wait_for_function("() => window.__flywheelKeys && window.__flywheelKeys.map.n === 'kb_next'")
        page.keyboard.press("n")  # the queue's first episode: the one left undecided
        expect(page.get_by_text("First wrong step: 0")).to_be_visible()
    with store.session() as s:
        rows = [(r.episode_id, r.decision, r.first_wrong_step, r.recovered)
                for r in s.exec(select(state.Review).order_by(state.Review.id))]
    assert rows == [(routed[0], "approve", 0, True), (routed[1], "reject", None, False)]


@pytest.fixture
def conversation_server(tmp_path):
    from tests.review_fixtures import import_conversations

    data = tmp_path / "d"
    store = Store(data)
    eid = import_conversations(store, tmp_path)
    make_accounts(store)
    with review_app(tmp_path, data) as url:
        yield url, store, eid


def test_imported_conversation_reads_as_a_chat_and_reviews_by_keyboard(conversation_server):
    from playwright.sync_api import expect

    url, store, eid = conversation_server
    ARTIFACTS.mkdir(exist_ok=True)
    with chromium_page(1100) as page:
        sign_in(page, url)
        expect(page.get_by_text("Queue · 1 episodes")).to_be_visible()
        sidebar = page.locator('[data-testid="stSidebar"]')
        for label in ("Round", "Family", "Capability", "Outcome", "Marks", "Reviewer status"):
            expect(sidebar.get_by_text(label, exact=True).first).to_be_visible()  # labelled on first load
        page.screenshot(path=str(ARTIFACTS / "review-conversation-queue.png"), full_page=True)
        page.wait_for_function("() => window.__flywheelKeys && window.__flywheelKeys.map.n === 'kb_next'")
        page.locator("body").press("n")
        page.wait_for_function("() => window.__flywheelKeys && window.__flywheelKeys.map.a === 'kb_approve'")
        chat = page.locator('[data-testid="stChatMessage"]')
        expect(chat).to_have_count(6)  # user, agent, user, agent, user, agent
        expect(chat.nth(2)).to_contain_text("The one on the 3rd, please.")
        expect(chat.nth(1)).to_contain_text("Which one?")
        # the current step (0) is the failed lookup: open, and its error shown in red
        expect(page.get_by_text("NOT_FOUND: no reservation for 'Mia Chen'")).to_be_visible()
        expect(page.get_by_text("step 0 of steps 0–7", exact=False)).to_be_visible()
        page.locator("body").press("e")
        expect(page.get_by_text("First wrong step: 0")).to_be_visible()
        expect(chat.nth(1)).to_contain_text("first error")
        page.locator("body").press("j")
        expect(page.get_by_text("step 1 of steps 0–7", exact=False)).to_be_visible()
        expect(chat.nth(1).get_by_text('"UA88"', exact=False)).to_be_visible()  # step 1's result, unfolded
        page.screenshot(path=str(ARTIFACTS / "review-conversation.png"), full_page=True)
        page.locator("body").press("a")
        expect(page.get_by_text("Saved: approve by ann")).to_be_visible()
    with store.session() as s:
        (review,) = s.exec(select(state.Review)).all()
    assert (review.episode_id, review.reviewer, review.decision, review.first_wrong_step) == (eid, "ann", "approve", 0)


DOCS_IMG = ROOT / "docs" / "img"
_LOADED_SCREENS = """() => Array.from(document.querySelectorAll('img.phone-screen'))
    .map((img) => [img.dataset.screen, img.complete ? img.naturalWidth : 0, img.getAttribute('src')])"""


def _screens_loaded(page, want: set[str]) -> list:
    """The phone-screen images on the page once every one of ``want`` has loaded (natural width > 0)."""
    page.wait_for_function(
        f"() => {{ const s = ({_LOADED_SCREENS})(); const w = {sorted(want)!r};"
        " return w.every((k) => s.some((x) => x[0] === k && x[1] > 0)); }")
    return page.evaluate(_LOADED_SCREENS)


def test_the_phone_screens_load_as_images_before_and_after_each_step(review_server, tmp_path):
    """The step panel shows the phone before and after the current step as images the app serves
    (loaded: natural width above zero), the same screens the phone's renderer draws; the episode
    view's screenshot in the README is taken here."""
    import urllib.request

    from playwright.sync_api import expect

    from review_app import screens
    from review_app.episode import load_episode

    url, store = review_server
    with chromium_page(1400) as page:
        sign_in(page, url)
        page.wait_for_function("() => window.__flywheelKeys && window.__flywheelKeys.map.n === 'kb_next'")
        page.locator("body").press("n")
        page.wait_for_function("() => window.__flywheelKeys && window.__flywheelKeys.map.a === 'kb_approve'")
        eid = page.evaluate("() => document.body.innerText.match(/(\\S+) · round r0001/)[1]")
        view = load_episode(store, eid)
        # step 0: nothing before it, the screen after it drawn
        expect(page.get_by_text("the episode starts here: no earlier screen")).to_be_visible()
        (after0,) = [s for s in _screens_loaded(page, {"after"}) if s[0] == "after"]
        with urllib.request.urlopen(url + after0[2]) as resp:  # the app serves the phone's own drawing
            assert resp.headers["Content-Type"].startswith("image/svg+xml")
            assert resp.read().decode() == screens.step_screen(view.task, view.steps, 0)[0]
        page.locator("body").press("j")
        expect(page.get_by_text("step 1 of steps", exact=False)).to_be_visible()
        expect(page.get_by_text("before step 1 (after step 0)")).to_be_visible()
        shown = dict((w, (n, src)) for w, n, src in _screens_loaded(page, {"before", "after"}))
        assert shown["before"][0] > 0 and shown["after"][0] > 0
        assert shown["before"][1] == after0[2]  # the screen before step 1 is the one after step 0
        assert shown["after"][1] != after0[2]
        # the README's picture of the episode view: written to docs/ when asked (UPDATE_SCREENSHOTS=1), so a
        # test run leaves the checkout as it was
        shot = (DOCS_IMG if os.environ.get("UPDATE_SCREENSHOTS") == "1" else tmp_path) / "episode-view.png"
        shot.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(shot), full_page=False)
    assert shot.stat().st_size > 10_000


def test_the_conversation_view_shows_the_current_steps_screens(conversation_server):
    from playwright.sync_api import expect

    url, store, eid = conversation_server
    with chromium_page(1100) as page:
        sign_in(page, url)
        page.wait_for_function("() => window.__flywheelKeys && window.__flywheelKeys.map.n === 'kb_next'")
        page.locator("body").press("n")
        page.wait_for_function("() => window.__flywheelKeys && window.__flywheelKeys.map.a === 'kb_approve'")
        expect(page.locator('[data-testid="stChatMessage"]')).to_have_count(6)
        _screens_loaded(page, {"after"})
        page.locator("body").press("j")
        expect(page.get_by_text("step 1 of steps 0–7", exact=False)).to_be_visible()
        _screens_loaded(page, {"before", "after"})
        # only the current step's pair (step 0's leaves once Streamlit's rerun has ended)
        page.wait_for_function(f"() => ({_LOADED_SCREENS})().length === 2")
        shown = page.evaluate(_LOADED_SCREENS)
        assert sorted(w for w, n, _ in shown if n > 0) == ["after", "before"]


_CURSOR_ROW = """() => { const cells = Array.from(document.querySelectorAll(
    '[data-testid="stDataFrame"] [role=gridcell]')).map((e) => e.innerText.trim());
  const at = cells.findIndex((c) => c.startsWith('▶')); return at < 0 ? null : cells[at + 1]; }"""


@pytest.fixture
def long_episode_server(tmp_path):
    """A 61-step imported episode (the calls in LONG_FAILED fail) alone in its queue."""
    from tests.review_fixtures import import_long_episode

    data = tmp_path / "d"
    store = Store(data)
    eid = import_long_episode(store, tmp_path)
    make_accounts(store)
    with review_app(tmp_path, data) as url:
        yield url, store, eid


def _at_step(page, step: int, n: int = 61) -> None:
    """The cursor is on ``step``, and the step table's row marked ▶ (drawn, not scrolled away) is it."""
    from playwright.sync_api import expect

    expect(page.get_by_text(f"step {step} of steps 0–{n - 1}", exact=False)).to_be_visible()
    page.wait_for_function(f"() => ({_CURSOR_ROW})() === '{step}'")


def test_long_episodes_every_key_counts_jumps_and_the_table_follows(long_episode_server):
    """n pressed the moment sign-in is clicked opens the episode; 40 quick j presses move 40 steps
    and the table shows the cursor's row; g and a number jump (with Enter, or after a pause); w
    goes to the first wrong step, x to the next failed one; keys after a jump still count."""
    from playwright.sync_api import expect

    from tests.review_fixtures import LONG_FAILED

    url, store, eid = long_episode_server
    with chromium_page(1100) as page:
        sign_in(page, url)
        page.keyboard.press("n")  # at once: the queue has not been drawn yet
        expect(page.get_by_text(f"{eid} · round", exact=False).first).to_be_visible()
        _at_step(page, 0)
        page.wait_for_function("() => window.__flywheelKeys.map.a === 'kb_approve'")
        for _ in range(40):
            page.keyboard.press("j")
        _at_step(page, 40)
        expect(page.get_by_text("steps 37–46 of 0–60", exact=False)).to_be_visible()
        for key in ("g", "4", "5", "Enter", "k", "k"):
            page.keyboard.press(key)
        _at_step(page, 43)
        for key in ("g", "1", "2"):  # no Enter: the jump is made after a pause
            page.keyboard.press(key)
        _at_step(page, 12)
        for key in ("g", "9", "9", "9", "Enter"):  # past the end: the last step
            page.keyboard.press(key)
        _at_step(page, 60)
        page.keyboard.press("w")  # nothing marked yet: the first failed step
        _at_step(page, LONG_FAILED[0])
        page.keyboard.press("x")
        _at_step(page, LONG_FAILED[1])
        for key in "xjje":  # the next failed, two on, marked as the first wrong step
            page.keyboard.press(key)
        expect(page.get_by_text(f"First wrong step: {LONG_FAILED[2] + 2}")).to_be_visible()
        page.keyboard.press("g")
        page.keyboard.press("0")
        page.keyboard.press("Enter")
        _at_step(page, 0)
        page.keyboard.press("w")  # now the marked step
        _at_step(page, LONG_FAILED[2] + 2)
        page.screenshot(path=str(ARTIFACTS / "review-long-episode.png"), full_page=True)


@pytest.fixture
def rollouts_server(tmp_path):
    """Three rollouts of each of two tasks by a policy that errs, curated; ann, bob and lea (a lead)."""
    from tests.review_fixtures import make_rollouts

    data = tmp_path / "d"
    store = Store(data)
    ids = make_rollouts(store, n_tasks=2, k=3)
    make_accounts(store)
    with review_app(tmp_path, data) as url:
        yield url, store, ids


def test_rollouts_side_by_side_with_the_parting_step_marked(rollouts_server):
    from playwright.sync_api import expect

    from review_app.episode import load_episode
    from review_app.rollouts import column_name, divergence, load_rollouts

    url, store, ids = rollouts_server
    with chromium_page(1100) as page:
        sign_in(page, url)
        page.wait_for_function("() => window.__flywheelKeys && window.__flywheelKeys.map.n === 'kb_next'")
        page.keyboard.press("n")
        page.wait_for_function("() => window.__flywheelKeys.map.a === 'kb_approve'")
        eid = page.evaluate("() => document.body.innerText.match(/(e-[0-9a-f]{16}) · round/)[1]")
        views, _ = load_rollouts(store, load_episode(store, eid))
        at = divergence(views)
        page.get_by_text("Rollouts side by side", exact=True).click()
        expect(page.get_by_text(f"the rollouts diverge at step {at}")).to_be_visible()
        grid = page.locator('[data-testid="stDataFrame"]').first
        for v in views:  # a column per rollout
            expect(grid.get_by_text(column_name(v))).to_be_attached()  # the grid's accessible header
        page.wait_for_function("""(at) => { const cells = Array.from(document.querySelectorAll(
            '[data-testid="stDataFrame"] [role=gridcell]')).map((e) => e.innerText.trim());
            const i = cells.indexOf('◆ diverge'); return i > 0 && cells[i - 1] === String(at); }""", arg=at)
        page.screenshot(path=str(ARTIFACTS / "review-rollouts.png"), full_page=True)


def test_a_lead_bulk_approves_the_verified_successes_in_the_queue(rollouts_server):
    from playwright.sync_api import expect

    from review_app import bulk
    from review_app.accounts import User
    from review_app.queue import QueueFilter

    url, store, ids = rollouts_server
    todo = {r["episode_id"] for r in bulk.candidates(store, User("lea", "lead"), QueueFilter(round_ids=["r0001"]))}
    assert todo and len(todo) < len(ids)  # the failures are not offered
    with chromium_page(1100) as page:
        sign_in(page, url, "lea")
        expect(page.get_by_text(f"Queue · {len(ids)} episodes")).to_be_visible()
        page.get_by_text("Bulk approve (lead)").click()
        expect(page.get_by_text(f"{len(todo)} verified successes under these filters", exact=False)).to_be_visible()
        go = page.get_by_role("button", name=f"Approve {len(todo)} episodes")
        expect(go).to_be_disabled()  # not before a note and the tick
        page.get_by_role("textbox", name="What you checked").fill("spot-checked two: «fine»")
        page.get_by_role("textbox", name="What you checked").press("Enter")
        page.get_by_text("I spot-checked these episodes").click()
        expect(go).to_be_enabled()
        go.click()
        expect(page.get_by_text(f"Bulk approved {len(todo)} episodes as lea")).to_be_visible()
        expect(page.get_by_text(f"Queue · {len(ids) - len(todo)} episodes")).to_be_visible()
    with store.session() as s:
        rows = s.exec(select(state.Review)).all()
    assert {r.episode_id for r in rows} == todo and len(rows) == len(todo)
    assert {(r.reviewer, r.decision, r.reason) for r in rows} == {("lea", "approve", "bulk approve: spot-checked two: «fine»")}
