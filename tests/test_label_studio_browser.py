"""Label Studio's task view in real Chromium against a real Label Studio: the trajectory sits in
the page as tall as its content (nothing scrolls inside it, with every step unfolded), a failed
step is labelled by its error, and a step's phone screen is the image the screens server serves."""

from __future__ import annotations

import json
import threading
import time
import urllib.request
import uuid

import pytest

from review_app.label_studio.screens_server import screens_app
from review_app.label_studio.sdk_client import connect
from review_app.label_studio.sync import push
from tests.conftest import free_port, http_ok, wait_for
from tests.review_fixtures import LONG_FAILED, import_long_episode, make_accounts
from tests.test_label_studio_server import settings_for
from tests.test_review_browser import ARTIFACTS, chromium_page
from warehouse.store import Store

# every element between the trajectory's root and Label Studio's labeling panel (which scrolls the
# task as a whole, instructions and choices too, like a page): none may clip it or scroll it inside itself
_INNER_SCROLL = """() => {
  const root = document.querySelector('[data-flywheel-trajectory]');
  if (!root) return null;
  const out = [];
  for (let el = root.parentElement; el && el !== document.body; el = el.parentElement) {
    if (/main-content/.test(el.className)) break;
    const s = getComputedStyle(el);
    if (/(auto|scroll|hidden)/.test(s.overflowY) && el.scrollHeight > el.clientHeight + 2)
      out.push([el.tagName, el.className, el.clientHeight, el.scrollHeight]);
  }
  const height = root.getBoundingClientRect().height;
  return {height: height, content: root.scrollHeight, scrolled: out,
          frames: document.querySelectorAll('iframe').length};
}"""


def _invite_url(server) -> str:
    """The organisation's invite link, asked for with the administrator's personal access token."""
    refresh = urllib.request.Request(f"{server.url}/api/token/refresh", data=json.dumps({"refresh": server.admin_token}).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(refresh, timeout=30) as resp:
        access = json.load(resp)["access"]
    ask = urllib.request.Request(f"{server.url}/api/invite", headers={"Authorization": f"Bearer {access}"})
    with urllib.request.urlopen(ask, timeout=30) as resp:
        return json.load(resp)["invite_url"]


@pytest.fixture
def screens_server(tmp_path):
    import uvicorn

    store = Store(tmp_path / "d")
    eid = import_long_episode(store, tmp_path, n_calls=30)
    make_accounts(store)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(screens_app(store), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for("the screens server", lambda: http_ok(f"{url}/{eid}/0.svg"), timeout=30)
        yield store, eid, url
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def test_the_trajectory_is_as_tall_as_its_content_and_failed_steps_say_their_error(label_studio, screens_server):
    from playwright.sync_api import expect

    store, eid, screens_url = screens_server
    ls = settings_for(label_studio, screens_url=screens_url)
    client = connect(ls.url, ls.token.get_secret_value(), page_size=ls.page_size)
    pushed = push(store, client, ls, round_ids=None, everything=True)
    (task,) = list(client.tasks(pushed.project_id, annotations=False))
    ARTIFACTS.mkdir(exist_ok=True)
    with chromium_page(900) as page:
        # an annotator joins through the organisation's invite link (the test users' passwords are random)
        page.goto(label_studio.url + _invite_url(label_studio))
        page.locator('input[name="email"]').fill(f"viewer-{uuid.uuid4().hex[:6]}@example.com")
        page.locator('input[name="password"]').fill("a long enough password 1")
        page.locator('button[type="submit"]').first.click()
        page.wait_for_url(lambda u: "/signup" not in u)
        page.goto(f"{label_studio.url}/projects/{pushed.project_id}/data?task={task.id}")
        first = page.wait_for_function(f"() => ({_INNER_SCROLL})()").json_value()
        assert first["frames"] == 0 and first["scrolled"] == [] and first["content"] <= first["height"] + 2, first
        failed = page.locator("[data-flywheel-trajectory] summary", has_text=f"step {LONG_FAILED[0]} ·")
        expect(failed).to_contain_text("✗ NOT_FOUND")
        # every step unfolded (its call, result and phone screen): still nothing scrolls inside
        page.evaluate("() => document.querySelectorAll('[data-flywheel-trajectory] details')"
                      ".forEach((d) => { d.open = true; })")
        page.wait_for_function("""() => { const imgs = Array.from(document.querySelectorAll(
            '[data-flywheel-trajectory] img')); return imgs.length > 0 && imgs.every((i) => i.complete); }""")
        time.sleep(0.5)  # let Label Studio react to the new height, if it would
        opened = page.wait_for_function(f"() => ({_INNER_SCROLL})()").json_value()
        assert opened["scrolled"] == [] and opened["content"] <= opened["height"] + 2, opened
        assert opened["height"] > first["height"] + 1000, (first, opened)  # it grew with what was unfolded
        widths = page.evaluate("() => Array.from(document.querySelectorAll('[data-flywheel-trajectory] img'))"
                               ".map((i) => [i.getAttribute('src'), i.naturalWidth])")
        assert widths and all(w > 0 for _, w in widths), widths
        assert widths[0][0] == f"{screens_url}/{eid}/0.svg"
        page.screenshot(path=str(ARTIFACTS / "label-studio-task.png"), full_page=True)
