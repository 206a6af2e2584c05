"""Hostile data in the real review app, in Debian's Chromium: imported messages, tool errors, a family
name and a reviewer's note carrying Markdown images, links, autolinks and raw HTML that point at a
local logging server. Opening the queue, an episode (as a chat and as steps) and the lead's
Adjudication page makes no request to it, and no page carries a link to it."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from review_app import decisions
from tests.conftest import free_port
from tests.review_fixtures import make_accounts
from tests.test_review_browser import chromium_page, review_app, sign_in
from warehouse.store import Store


class _Logging(BaseHTTPRequestHandler):
    def _log(self) -> None:
        self.server.seen.append(f"{self.command} {self.path}")  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Type", "image/png")
        self.end_headers()

    do_GET = do_POST = do_HEAD = _log  # noqa: N815  (http.server's names)

    def log_message(self, *args) -> None:  # quiet
        pass


@pytest.fixture
def beacon():
    port = free_port()
    server = ThreadingHTTPServer(("127.0.0.1", port), _Logging)
    server.seen = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield port, server.seen
    server.shutdown()
    server.server_close()


def hostile(port: int, where: str) -> str:
    """Every way Markdown or HTML could make a browser fetch or link ``where`` on the logging server."""
    base = f"http://127.0.0.1:{port}/{where}"
    return (f"![i]({base}-img.png) [click here]({base}-link) <{base}-auto> {base}-bare "
            f'<img src="{base}-html.png"> <script>fetch("{base}-script")</script>\n'
            f'<a href="{base}-a">a</a> :red[red] $x^2$ **bold** ünï 🚀 `tick')


def _conversation(port: int) -> dict:
    def call(cid, name, args):
        return {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}

    return {
        "messages": [
            {"role": "system", "content": hostile(port, "system")},
            {"role": "user", "content": "Book it. " + hostile(port, "user")},
            {"role": "assistant", "content": hostile(port, "agent"),
             "tool_calls": [call("c1", "find_reservation", {"name": hostile(port, "args")})]},
            {"role": "tool", "tool_call_id": "c1",
             "content": json.dumps({"ok": False, "error": {"code": "NOT_FOUND", "message": hostile(port, "error")}})},
            {"role": "assistant", "content": "Done. " + hostile(port, "after")},
        ],
        "tools": [{"type": "function", "function": {"name": "find_reservation",
                                                    "parameters": {"type": "object", "properties": {}}}}],
        "reward": 0.0,
        "task": {"family": f"127.0.0.1:{port}/family.png)", "template": "t"},
    }


@pytest.fixture
def hostile_server(tmp_path, beacon):
    from flows.pipeline import import_prepared
    from flows.stages.importing import prepare_import

    port, seen = beacon
    data = tmp_path / "d"
    store = Store(data)
    path = tmp_path / "hostile.jsonl"
    path.write_text(json.dumps(_conversation(port)) + "\n")
    prepared = prepare_import(path, "openai-chat")
    import_prepared(store, prepared)
    eid = next(iter(prepared.episodes))
    round_id = prepared.round_id if hasattr(prepared, "round_id") else None
    make_accounts(store)
    with store.session() as s:
        from warehouse import state

        round_id = round_id or state.list_rounds(session=s)[-1].id
    with review_app(tmp_path, data) as url:
        yield url, port, seen, store, round_id, eid


def _no_link_to(page, port: int) -> None:
    hrefs = page.eval_on_selector_all("a[href], img[src], [src]", "els => els.map(e => e.href || e.src || '')")
    bad = page.eval_on_selector_all("a[href], img[src], [src]", f"els => els.filter(e => (e.href || e.src || '').includes(':{port}')).map(e => e.parentElement.outerHTML.slice(0, 600))")
    assert [h for h in hrefs if f":{port}" in h] == [], bad


def test_hostile_text_fetches_nothing_and_links_nowhere(hostile_server):
    from playwright.sync_api import expect

    url, port, seen, store, round_id, eid = hostile_server
    with chromium_page(1400) as page:
        sign_in(page, url, "lea")
        expect(page.get_by_text("Queue · 1 episodes")).to_be_visible()
        expect(page.get_by_text(f"127.0.0.1:{port}/family.png)", exact=False).first).to_be_visible()
        _no_link_to(page, port)

        page.wait_for_function("() => window.__flywheelKeys && window.__flywheelKeys.map.n === 'kb_next'")
        page.locator("body").press("n")  # the episode: the step table first (one user turn)
        expect(page.get_by_text("Decision", exact=True)).to_be_visible()
        expect(page.get_by_text("Step 0", exact=False).first).to_be_visible()
        expect(page.get_by_text(f"127.0.0.1:{port}/error-script", exact=False).first).to_be_visible()  # tool error
        expect(page.get_by_text(f"127.0.0.1:{port}/agent-link)", exact=False).first).to_be_visible()
        _no_link_to(page, port)

        page.get_by_text("Conversation", exact=True).click()  # the same episode as a chat
        expect(page.locator('[data-testid="stChatMessage"]').first).to_be_visible()
        expect(page.get_by_text(f"127.0.0.1:{port}/after-link)", exact=False).first).to_be_visible()
        _no_link_to(page, port)

        # two reviewers disagree, one with a note built to plant a beacon and a phishing link on the lead's page
        decisions.record_decision(store, reviewer="ann", round_id=round_id, episode_id=eid, decision="approve")
        decisions.record_decision(store, reviewer="bob", round_id=round_id, episode_id=eid, decision="reject",
                                  reason_code="other", reason_text=hostile(port, "note"))
        page.get_by_text("Adjudication", exact=True).first.click()
        expect(page.get_by_text(f"127.0.0.1:{port}/note-link)", exact=False).first).to_be_visible()
        _no_link_to(page, port)
        page.wait_for_timeout(1500)  # a late image load would have had its chance
    assert seen == []


def test_the_logging_server_sees_a_fetch_when_one_happens(beacon):
    """The check above can fail: a page that does load the image is seen by the server."""
    from playwright.sync_api import expect

    port, seen = beacon
    with chromium_page(600) as page:
        page.set_content(f'<p>x</p><img src="http://127.0.0.1:{port}/img.png">')
        expect(page.locator("p")).to_be_visible()
        page.wait_for_function("() => document.images[0].complete")
    assert seen == ["GET /img.png"]
