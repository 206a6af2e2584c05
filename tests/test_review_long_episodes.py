"""Long episodes, without a browser: the step table's window follows the cursor, failed steps
are found in order, and the key listener is given the cursor (tests/test_review_browser.py
presses the keys in Chromium)."""

from __future__ import annotations

import json

import pytest

from review_app import keys
from review_app.episode import load_episode, next_failed_step, table_window
from tests.review_fixtures import LONG_FAILED, import_long_episode
from warehouse.store import Store


@pytest.mark.parametrize(("n", "cursor", "want"), [
    (6, 5, (0, 6)), (10, 9, (0, 10)), (61, 0, (0, 10)), (61, 5, (2, 12)), (61, 45, (42, 52)), (61, 60, (51, 61)),
])
def test_the_table_window_holds_the_cursor(n, cursor, want):
    start, stop = table_window(n, cursor)
    assert (start, stop) == want and start <= cursor < stop and stop - start == min(n, 10)


def test_every_cursor_of_a_long_episode_is_in_its_window():
    for cursor in range(200):
        start, stop = table_window(200, cursor)
        assert start <= cursor < stop and 0 <= start and stop <= 200


def test_failed_steps_of_an_imported_episode_and_the_next_one_wraps(tmp_path):
    store = Store(tmp_path / "d")
    view = load_episode(store, import_long_episode(store, tmp_path))
    assert view.failed_steps == list(LONG_FAILED) and view.first_failed_step == LONG_FAILED[0]
    assert next_failed_step(view.failed_steps, 0) == LONG_FAILED[0]
    assert next_failed_step(view.failed_steps, LONG_FAILED[0]) == LONG_FAILED[1]
    assert next_failed_step(view.failed_steps, LONG_FAILED[2]) == LONG_FAILED[0]  # from the last, the first
    assert next_failed_step([], 3) is None


def test_the_listener_gets_the_cursor_and_owns_g():
    script = keys.listener_script(keys.EPISODE_KEYS, (45, 61))
    assert 'K.cursor = {"step": 45, "n": 61}' in script
    assert '"g"' in script and json.dumps(keys.GOTO_INPUT) in script
    assert "K.cursor = null" in keys.listener_script({"n": "kb_next"})
    assert not any(name in script for name in ("MAP", "OWN", "CURSOR", "GOTO_KEY", "GOTO_INPUT", "_MS"))
