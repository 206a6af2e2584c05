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
    "w": "kb_first_wrong",
    "x": "kb_next_failed",
}
GOTO_KEY = "g"  # g, then a step number (Enter, or a pause, ends it): jump to that step
GOTO_INPUT = "kb_goto"  # the number input the jump (and a run of j/k presses) is typed into

HELP = ("j/k next/previous step · g then a number: go to that step · w first wrong step · x next failed step · "
        "a approve · r reject · f needs fix · e mark this step as the first error · "
        "v the agent recovered after it · n next episode")

# A key whose button is missing, disabled or stale waits in a queue (in the order pressed) until
# its button is ready; keys are clicked one at a time, each once the rerun the one before it
# started has finished, so a fast ``e v a`` neither loses ``v`` nor approves before it.
QUIET_MS = 200  # the page has been idle this long: the rerun (and an st.rerun() after it) is over
# after a click, how long to wait for its rerun to start before giving up on seeing it: a rerun is seen
# however fast (the observer keeps old values), so this is only for a loaded host, where one may start late
START_MS = 8000
WAIT_MS = 1500  # how long a key waits on an idle page for its button (drawn late, lazily) before it is dropped
GIVE_UP_MS = 30000  # and at most this long after it was pressed, however busy the page
GOTO_PAUSE_MS = 1200  # g and digits without Enter: the jump is made this long after the last digit

_LISTENER = r"""
(function () {
  var K = window.__flywheelKeys;
  if (K) { K.map = MAP; K.cursor = CURSOR; OWN.forEach(function (k) { K.own[k] = true; }); return; }
  K = window.__flywheelKeys = { map: MAP, cursor: CURSOR, own: Object.create(null), queue: [], clickedAt: 0,
                                sawRun: true, idleSince: Date.now() - QUIET_MS, app: null, timer: null,
                                goto: null, gotoTimer: null, typed: 0 };
  OWN.forEach(function (k) { K.own[k] = true; });
  function busy() {
    var app = document.querySelector('[data-testid="stApp"]');
    return !app || app.getAttribute('data-test-script-state') !== 'notRunning';
  }
  function watch() {  // note when a rerun starts and when the page goes idle again
    var app = document.querySelector('[data-testid="stApp"]');
    if (!app || app === K.app) return;
    K.app = app;
    // a rerun over before this callback ran still left a record whose old value was not 'notRunning'
    new MutationObserver(function (records) {
      records.forEach(function (r) { if (r.oldValue && r.oldValue !== 'notRunning') K.sawRun = true; });
      track();
    }).observe(app, { attributes: true, attributeFilter: ['data-test-script-state'], attributeOldValue: true });
  }
  function track() {
    if (busy()) { K.sawRun = true; K.idleSince = 0; } else if (!K.idleSince) { K.idleSince = Date.now(); }
  }
  function settled(now) {
    watch(); track();
    if (!K.idleSince || now - K.idleSince < QUIET_MS) return false;
    return K.sawRun || now - K.clickedAt > START_MS;  // the last click's rerun has come and gone
  }
  function ready(selector, key) {
    var box = key && document.querySelector('.st-key-' + key);
    var el = box && box.querySelector(selector);
    if (!el || el.disabled || box.closest('[data-stale="true"]')) return null;
    return el;
  }
  function typeStep(input, step) {  // as if typed into the step box and Enter pressed: one rerun
    var setter = Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value').set;
    setter.call(input, String(step));
    input.dispatchEvent(new Event('input', { bubbles: true }));
    input.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter', code: 'Enter', bubbles: true, cancelable: true }));
  }
  function moves(key) { return key === 'j' || key === 'k'; }
  function act(head, now) {  // true when the head of the queue was done (or had nothing to do)
    var input = K.cursor && ready('input', GOTO_INPUT);
    if (input && (moves(head.key) || head.key === GOTO_KEY)) {
      // a run of j/k is one jump, as far as the presses one at a time would have gone
      var n = K.cursor.n, step = K.cursor.step;
      if (head.key === GOTO_KEY) {
        K.queue.shift();
        step = Math.max(0, Math.min(n - 1, head.step));
      } else {
        while (K.queue.length && moves(K.queue[0].key)) {
          step = K.queue.shift().key === 'j' ? Math.min(n - 1, step + 1) : Math.max(0, step - 1);
        }
      }
      if (step !== K.cursor.step) {
        K.clickedAt = now; K.sawRun = false; K.cursor.step = step;
        typeStep(input, step);
      }
      return true;
    }
    var btn = ready('button', K.map[head.key]);
    if (!btn) return false;
    K.queue.shift();
    K.clickedAt = now; K.sawRun = false;
    btn.click();
    return true;
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
      if (!act(head, now) && now - head.waitFrom >= WAIT_MS) {
        K.queue.shift();  // no such button on this page: drop the key
      }
    }
    if (K.queue.length && !K.timer) K.timer = setTimeout(pump, 40);
  }
  function showGoto() {  // what has been typed after g, in a corner of the page
    var box = document.getElementById('flywheel-goto');
    if (K.goto === null) { if (box) box.remove(); return; }
    if (!box) {
      box = document.createElement('div');
      box.id = 'flywheel-goto';
      box.style.cssText = 'position:fixed;right:16px;bottom:16px;z-index:100000;padding:6px 12px;' +
        'border-radius:6px;background:#111;color:#fff;font:14px sans-serif';
      document.body.appendChild(box);
    }
    box.textContent = 'go to step ' + K.goto + '…';
  }
  function endGoto(jump) {
    clearTimeout(K.gotoTimer);
    if (jump && K.goto) K.queue.push({ key: GOTO_KEY, step: parseInt(K.goto, 10), at: Date.now(), waitFrom: 0 });
    K.goto = null;
    showGoto();
    pump();
  }
  function gotoKey(ev) {  // a key while a step number is being typed: true when it was part of it
    if (/^[0-9]$/.test(ev.key)) { K.goto += ev.key; }
    else if (ev.key === 'Backspace') { K.goto = K.goto.slice(0, -1); }
    else if (ev.key === 'Escape') { endGoto(false); return true; }
    else if (ev.key === 'Enter') { endGoto(true); return true; }
    else { endGoto(true); return false; }  // the number ends; the key counts as itself
    clearTimeout(K.gotoTimer);
    K.gotoTimer = setTimeout(function () { endGoto(true); }, GOTO_PAUSE_MS);
    showGoto();
    return true;
  }
  window.addEventListener('keydown', function (ev) {
    if (ev.ctrlKey || ev.metaKey || ev.altKey || ev.repeat) return;
    var t = ev.target, tag = (t && t.tagName || '').toLowerCase();
    if (tag === 'input' || tag === 'textarea' || tag === 'select' || (t && t.isContentEditable)) return;
    if (K.goto !== null && gotoKey(ev)) { ev.preventDefault(); ev.stopImmediatePropagation(); return; }
    if (!K.own[ev.key]) return;
    // ours, even where no button takes it: Streamlit's own hotkeys (r reruns the app) must not see it
    ev.preventDefault(); ev.stopImmediatePropagation();
    if (ev.key === GOTO_KEY) { K.goto = ''; showGoto(); return; }
    K.queue.push({ key: ev.key, at: Date.now(), waitFrom: 0 });
    pump();
  }, true);
})();
"""


def listener_script(mapping: dict[str, str], cursor: tuple[int, int] | None = None) -> str:
    """The JavaScript of the page-level listener for ``mapping`` (key -> button key); ``cursor``
    (the current step, the number of steps) on a page with a step box, which ``g`` and runs of
    ``j``/``k`` type into."""
    own = sorted(set(EPISODE_KEYS) | set(mapping) | {GOTO_KEY})
    where = json.dumps({"step": cursor[0], "n": cursor[1]} if cursor else None)
    script = _LISTENER.replace("GOTO_KEY", json.dumps(GOTO_KEY)).replace("GOTO_INPUT", json.dumps(GOTO_INPUT))
    script = script.replace("MAP", json.dumps(mapping)).replace("OWN", json.dumps(own)).replace("CURSOR", where)
    for name in ("QUIET_MS", "START_MS", "WAIT_MS", "GIVE_UP_MS", "GOTO_PAUSE_MS"):
        script = script.replace(name, str(globals()[name]))
    return script


def script_tag(mapping: dict[str, str], cursor: tuple[int, int] | None = None) -> str:
    """A <script> for ``st.html(..., unsafe_allow_javascript=True)``, which runs it in the page."""
    return "<script>" + listener_script(mapping, cursor) + "</script>"
