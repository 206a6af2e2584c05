"""Search: the queue filtered by text in the instruction or in a tool call (its name or its
arguments), and a step of an episode found by its tool's name; over real episodes and an
imported one with unicode, newlines and nested JSON in its calls."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from review_app.accounts import User
from review_app.episode import load_episode, steps_calling
from review_app.queue import QueueFilter, queue_page
from tests.review_fixtures import PASSWORD, import_long_episode, make_accounts, make_round
from warehouse.store import Store

APP = str(Path(__file__).resolve().parents[1] / "review_app" / "app.py")
ANN = User("ann", "reviewer")


@pytest.fixture
def world(tmp_path, monkeypatch):
    data = tmp_path / "d"
    store = Store(data)
    ids = make_round(store, n_tasks=6)
    long_id = import_long_episode(store, tmp_path, n_calls=12)
    make_accounts(store)
    for name in [k for k in os.environ if k.startswith("FLYWHEEL_")]:  # a user's settings change nothing here
        monkeypatch.delenv(name)
    monkeypatch.setenv("FLYWHEEL_DATA_DIR", str(data))
    monkeypatch.setenv("FLYWHEEL_REVIEW_OVERLAP", "0")
    return store, ids, long_id


def _found(store: Store, text: str) -> set[str]:
    page = queue_page(store, ANN, QueueFilter(status="any", text=text), limit=100)
    return {r["episode_id"] for r in page.rows}


def test_the_queue_is_filtered_by_instruction_and_tool_call_text(world):
    store, ids, long_id = world
    con = store.duck()
    everything = _found(store, "")
    assert everything == {*ids, long_id}
    assert _found(store, "   ") == everything  # blank is no filter
    # a word of the long episode's instruction (which has a newline and an emoji in it)
    assert _found(store, "zürich trip 📷") == {long_id}
    assert _found(store, "ZÜRICH — ÜETLIBERG") == {long_id}  # in its calls' nested arguments, any case
    assert _found(store, "album_add") == {long_id}  # a tool's name
    # a tool only some of the phone episodes call: exactly those
    tool = con.execute("SELECT action_tool FROM steps WHERE action_tool IS NOT NULL "
                       "AND episode_id <> ? ORDER BY 1 LIMIT 1", [long_id]).fetchone()[0]
    calling = {e for (e,) in con.execute("SELECT DISTINCT episode_id FROM steps WHERE action_tool = ?", [tool]).fetchall()}
    in_text = {e for (e,) in con.execute("SELECT episode_id FROM episodes WHERE strpos(lower(instruction), ?) > 0",
                                         [tool.lower()]).fetchall()}
    assert _found(store, tool) == calling | in_text and calling
    # what is typed is only itself: no LIKE wildcards, no SQL
    assert _found(store, "%") == set() and _found(store, "_ta_") == set()
    assert _found(store, "' OR 1=1 --") == set()
    assert _found(store, "line 1\nline 2") == set()  # the arguments hold the two characters \n, not a newline
    assert _found(store, "line 1\\nline 2 #3") == {long_id}


def test_a_step_is_found_by_its_tools_name(world):
    store, _, long_id = world
    view = load_episode(store, long_id)
    assert steps_calling(view, "ALBUM") == [2, 5, 8, 11]
    assert steps_calling(view, "photos_") == [0, 1, 3, 4, 6, 7, 9, 10]
    assert steps_calling(view, "  ") == [] and steps_calling(view, "nothing-like-it") == []


def _signed_in() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.text_input(key="signin_name").input("ann")
    at.text_input(key="signin_password").input(PASSWORD)
    at.button[0].click().run()
    assert not at.exception
    return at


def test_the_app_searches_the_queue_and_jumps_to_a_found_step(world):
    _, ids, long_id = world
    at = _signed_in()
    at.sidebar.selectbox(key="f_round").select("all").run()
    at.sidebar.selectbox(key="f_status").select("any").run()
    at.sidebar.text_input(key="f_text").input("Üetliberg").run()
    opened = [b.key.removeprefix("open-") for b in at.button if b.key and b.key.startswith("open-")]
    assert opened == [long_id]
    at.button(key=f"open-{long_id}").click().run()
    at.text_input(key="step_find").input("album").run()
    assert at.selectbox(key="step_hit").options == ["step 2 · album_add", "step 5 · album_add", "step 8 · album_add",
                                                     "step 11 · album_add"]
    at.selectbox(key="step_hit").select(8).run()
    assert not at.exception
    assert at.session_state["step"] == 8
    assert any("step 8 of steps 0–12" in c.value for c in at.caption)
