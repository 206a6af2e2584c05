"""Keyboard shortcuts: a key press clicks the Streamlit button with the matching key.

Streamlit gives every keyed widget's container the class ``st-key-<key>``. A script
injected with ``st.html(..., unsafe_allow_javascript=True)`` puts one ``keydown``
listener on the page; it ignores keys typed into text fields and clicks
``.st-key-<key> button``. Reruns inject it again; a flag on ``window`` keeps it to one
listener, whose key map is refreshed each time.

The listener sits on ``window`` in the capture phase and stops every key it owns, so
Streamlit's own hotkeys never see them (its ``r`` reruns the app, which replayed a
reject). Keys are clicked one at a time and in order, each once the page is idle after
the previous click's rerun; a key whose button is not ready yet (disabled until that
rerun ends, as Recovered is until ``e`` has marked a step) waits for it, within bounds.
Streamlit marks its root element ``data-test-script-state`` (``running``,
``notRunning``, ...), which is how the listener knows a rerun is on.
"""

from __future__ import annotations

import json

# key -> the Streamlit key of the button it clicks
EPISODE_KEYS: dict[str, str] = {
    "j": "kb_step_next",
    "k": "kb_step_prev",
    "a": "kb_approve",
    "r": "kb_reject",
    "f": "kb_fix",
    "e": "kb_mark_error",
    "v": "kb_recovered",
    "n": "kb_next",
}

HELP = ("j/k next/previous step · a approve · r reject · f needs fix · e mark this step as the first error · "
        "v the agent recovered after it · n next episode")

# A key whose button is missing, disabled or stale waits in a queue (in the order pressed) until
# its button is ready; keys are clicked one at a time, each once the rerun the one before it
# started has finished, so a fast ``e v a`` neither loses ``v`` nor approves before it.
QUIET_MS = 200  # the page has been idle this long: the rerun (and an st.rerun() after it) is over
START_MS = 2000  # after a click, how long to wait for its rerun to start before giving up on seeing it
WAIT_MS = 1500  # how long a key waits on an idle page for its button (drawn late, lazily) before it is dropped
GIVE_UP_MS = 15000  # and at most this long after it was pressed, however busy the page

_LISTENER = """
(function () {
  var K = window.__flywheelKeys;
  if (K) { K.map = MAP; OWN.forEach(function (k) { K.own[k] = true; }); return; }
  K = window.__flywheelKeys = { map: MAP, own: Object.create(null), queue: [], clickedAt: 0, sawRun: true,
                                idleSince: Date.now() - QUIET_MS, app: null, timer: null };
  OWN.forEach(function (k) { K.own[k] = true; });
  function busy() {
    var app = document.querySelector('[data-testid="stApp"]');
    return !app || app.getAttribute('data-test-script-state') !== 'notRunning';
  }
  function watch() {  // note when a rerun starts and when the page goes idle again
    var app = document.querySelector('[data-testid="stApp"]');
    if (!app || app === K.app) return;
    K.app = app;
    new MutationObserver(track).observe(app, { attributes: true, attributeFilter: ['data-test-script-state'] });
  }
  function track() {
    if (busy()) { K.sawRun = true; K.idleSince = 0; } else if (!K.idleSince) { K.idleSince = Date.now(); }
  }
  function settled(now) {
    watch(); track();
    if (!K.idleSince || now - K.idleSince < QUIET_MS) return false;
    return K.sawRun || now - K.clickedAt > START_MS;  // the last click's rerun has come and gone
  }
  function button(key) {
    var box = key && document.querySelector('.st-key-' + key);
    var btn = box && box.querySelector('button');
    if (!btn || btn.disabled || box.closest('[data-stale="true"]')) return null;
    return btn;
  }
  function pump() {
    K.timer = null;
    var now = Date.now();
    while (K.queue.length && now - K.queue[0].at >= GIVE_UP_MS) K.queue.shift();
    var head = K.queue[0];
    if (head && !settled(now)) {
      head.waitFrom = 0;  // a rerun is on: its button may yet come
    } else if (head) {
      head.waitFrom = head.waitFrom || now;
      var btn = button(K.map[head.key]);
      if (btn) {
        K.queue.shift();
        K.clickedAt = now; K.sawRun = false;
        btn.click();
      } else if (now - head.waitFrom >= WAIT_MS) {
        K.queue.shift();  // no such button on this page: drop the key
      }
    }
    if (K.queue.length && !K.timer) K.timer = setTimeout(pump, 40);
  }
  window.addEventListener('keydown', function (ev) {
    if (ev.ctrlKey || ev.metaKey || ev.altKey || ev.repeat) return;
    var t = ev.target, tag = (t && t.tagName || '').toLowerCase();
    if (tag === 'input' || tag === 'textarea' || tag === 'select' || (t && t.isContentEditable)) return;
    if (!K.own[ev.key]) return;
    // ours, even where no button takes it: Streamlit's own hotkeys (r reruns the app) must not see it
    ev.preventDefault(); ev.stopImmediatePropagation();
    K.queue.push({ key: ev.key, at: Date.now(), waitFrom: 0 });
    pump();
  }, true);
})();
"""


def listener_script(mapping: dict[str, str]) -> str:
    """The JavaScript of the page-level listener for ``mapping`` (key -> button key)."""
    own = sorted(set(EPISODE_KEYS) | set(mapping))
    script = _LISTENER.replace("MAP", json.dumps(mapping)).replace("OWN", json.dumps(own))
    for name in ("QUIET_MS", "START_MS", "WAIT_MS", "GIVE_UP_MS"):
        script = script.replace(name, str(globals()[name]))
    return script


def script_tag(mapping: dict[str, str]) -> str:
    """A <script> for ``st.html(..., unsafe_allow_javascript=True)``, which runs it in the page."""
    return "<script>" + listener_script(mapping) + "</script>"
