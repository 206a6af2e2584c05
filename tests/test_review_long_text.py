"""A 200 kB imported message in the real app (Streamlit's AppTest): every view shows its start with a
'Show all' toggle, no element carries the whole text until asked, and the toggle shows all of it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from review_app.plain_text import PREVIEW_CHARS
from review_app.plain_text import as_text as shown
from tests.review_fixtures import PASSWORD, airline_conversation, make_accounts
from warehouse.store import Store

APP = str(Path(__file__).resolve().parents[1] / "review_app" / "app.py")
LINE = "Ünïcode line with `code`, **stars** and <b>html</b> 🚀\n"
HUGE = LINE * (200_000 // len(LINE))  # about 200 kB


@pytest.fixture
def huge_episode(tmp_path, monkeypatch):
    from flows.pipeline import import_prepared
    from flows.stages.importing import prepare_import

    conv = airline_conversation()
    conv["messages"][1]["content"] = "first " + HUGE  # the instruction (the user's first turn)
    conv["messages"][6]["content"] = "asked " + HUGE  # an agent's question
    conv["messages"][3]["content"] = json.dumps({"ok": False, "error": {"code": "X", "message": HUGE}})
    path = tmp_path / "huge.jsonl"
    path.write_text(json.dumps(conv) + "\n")
    store = Store(tmp_path / "d")
    prepared = prepare_import(path, "openai-chat")
    import_prepared(store, prepared)
    make_accounts(store)
    monkeypatch.setenv("FLYWHEEL_DATA_DIR", str(tmp_path / "d"))
    monkeypatch.setenv("FLYWHEEL_REVIEW_OVERLAP", "0")
    return next(iter(prepared.episodes))


def _texts(at: AppTest) -> list[str]:
    out = []
    for kind in ("markdown", "caption", "error", "code", "text", "warning", "info", "subheader"):
        out += [str(shown(e.value)) for e in getattr(at, kind)]
    return out


def _open(eid: str, view: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.text_input(key="signin_name").input("ann")
    at.text_input(key="signin_password").input(PASSWORD)
    at.button[0].click().run()
    at.session_state["episode_id"] = eid
    at.session_state["nav_to"] = "Episode"
    at.session_state[f"view_{eid}"] = view
    at.run()
    assert not at.exception, at.exception
    return at


@pytest.mark.parametrize("view", ["Conversation", "Steps"])
def test_a_200_kb_message_is_shown_cut_with_a_way_to_see_all_of_it(huge_episode, view):
    at = _open(huge_episode, view)
    texts = _texts(at)
    assert max(map(len, texts)) <= PREVIEW_CHARS + 200, sorted(map(len, texts))[-3:]
    assert any(t.startswith("first Ünïcode line with `code`, **stars** and <b>html</b>") for t in texts), [t[:60] for t in texts]
    toggles = [t for t in at.toggle if t.label.startswith("Show all (")]
    assert toggles and all("characters)" in t.label for t in toggles)
    toggles[0].set_value(True).run()
    assert not at.exception
    full = [t.value for t in at.text]
    assert any(v.strip() in ("first " + HUGE.strip(), "asked " + HUGE.strip()) for v in full), \
        [(len(v), v[:20], v[-20:]) for v in full]  # all of it, as text
