"""Keyboard shortcuts: a key press clicks the Streamlit button with the matching key.

Streamlit gives every keyed widget's container the class ``st-key-<key>``. A script
injected with ``st.html(..., unsafe_allow_javascript=True)`` puts one ``keydown``
listener on the page; it ignores keys typed into text fields and clicks
``.st-key-<key> button``. Reruns inject it again; a flag on ``window`` keeps it to one
listener, whose key map is refreshed each time.
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

_LISTENER = """
(function () {
  if (window.__flywheelKeys) { window.__flywheelKeys.map = MAP; return; }
  window.__flywheelKeys = { map: MAP };
  document.addEventListener('keydown', function (ev) {
    if (ev.ctrlKey || ev.metaKey || ev.altKey || ev.repeat) return;
    var t = ev.target, tag = (t && t.tagName || '').toLowerCase();
    if (tag === 'input' || tag === 'textarea' || tag === 'select' || (t && t.isContentEditable)) return;
    var key = window.__flywheelKeys.map[ev.key];
    if (!key) return;
    var btn = document.querySelector('.st-key-' + key + ' button');
    if (btn && !btn.disabled) { ev.preventDefault(); btn.click(); }
  }, true);
})();
"""


def listener_script(mapping: dict[str, str]) -> str:
    """The JavaScript of the page-level listener for ``mapping`` (key -> button key)."""
    return _LISTENER.replace("MAP", json.dumps(mapping))


def script_tag(mapping: dict[str, str]) -> str:
    """A <script> for ``st.html(..., unsafe_allow_javascript=True)``, which runs it in the page."""
    return "<script>" + listener_script(mapping) + "</script>"
