"""Screens: an SVG phone screen for any recorded step, drawn on demand, never stored.

Everything comes from the Step itself: the app in front is the app of the tool
called, the rows that matter are the rows the step changed (highlighted, first)
and then the rows it read, and what changed is spelled out field by field.
"""

from __future__ import annotations

from typing import Any
from xml.sax.saxutils import escape

from generators.phone.tools import TOOLS
from warehouse.contract import Step

WIDTH, HEIGHT, ROW_H, MAX_ROWS = 360, 720, 44, 11
APP_COLOURS = {"settings": "#455a64", "contacts": "#1e88e5", "phone": "#43a047", "messages": "#00897b",
               "mail": "#e53935", "calendar": "#3949ab", "clock": "#6d4c41", "notes": "#f9a825",
               "files": "#8e24aa", "wallet": "#2e7d32", "shop": "#ef6c00", "travel": "#0277bd", "media": "#d81b60",
               "assistant": "#37474f"}
TITLE_FIELDS = ("title", "name", "subject", "item", "text", "first_name", "merchant", "label", "setting", "id")
MARKS = {"added": "+", "updated": "~", "removed": "−"}


def _short(value: Any, n: int = 38) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= n else text[: n - 1] + "…"


def _row_title(row: dict[str, Any]) -> str:
    if "first_name" in row and "last_name" in row:
        return f"{row['first_name']} {row['last_name']}"
    if "name" in row and "value" in row:  # a device setting
        return f"{row['name']}: {row['value']}"
    return str(next((row[k] for k in TITLE_FIELDS if row.get(k) not in (None, "")), "row"))


def _row_detail(row: dict[str, Any]) -> str:
    skip = {"id", *TITLE_FIELDS, "last_name", "updated_at", "last_viewed", "read"}
    return ", ".join(f"{k} {_short(v, 16)}" for k, v in row.items() if k not in skip and v not in (None, "", []))


def _change_detail(change: dict[str, Any]) -> str:
    if change["op"] != "updated":
        return _row_detail(change["after"] or change["before"] or {})
    before, after = change["before"], change["after"]
    return ", ".join(f"{k}: {_short(before.get(k), 20)} → {_short(v, 20)}" for k, v in after.items()
                     if before.get(k) != v and k not in ("updated_at", "last_viewed", "read"))


def screen_rows(step: Step) -> list[dict[str, str]]:
    """The rows a screen shows: changed rows first (with their mark), then rows the step read."""
    rows = [{"mark": MARKS[c["op"]], "title": _row_title(c["after"] or c["before"] or {}),
             "detail": _change_detail(c), "changed": "1"} for c in step.feedback.state_delta]
    result = step.feedback.result
    items = result.get("items") if isinstance(result, dict) else None
    if isinstance(items, list):
        rows += [{"mark": "", "title": _row_title(i) if isinstance(i, dict) else _short(i),
                  "detail": _row_detail(i) if isinstance(i, dict) else "", "changed": ""} for i in items]
    elif isinstance(result, dict) and not rows:
        rows.append({"mark": "", "title": _row_title(result), "detail": _row_detail(result), "changed": ""})
    return rows[:MAX_ROWS]


def render_step(step: Step, instruction: str = "") -> str:
    """The SVG of one step's screen."""
    action = step.action
    tool = TOOLS.get(action.tool)
    app = tool.app if tool else "assistant"
    colour = APP_COLOURS.get(app, "#37474f")
    out = [(f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
            f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" data-app="{escape(app)}">'),
           (f'<rect x="2" y="2" width="{WIDTH - 4}" height="{HEIGHT - 4}" rx="36" fill="#fafafa" stroke="#222" '
            'stroke-width="4"/>'),
           (f'<text x="30" y="34" font-size="12" fill="#555">step {step.index} · {escape(step.verification.label)}'
            f' · progress {step.verification.progress:.2f}</text>'),
           f'<rect x="14" y="46" width="{WIDTH - 28}" height="52" rx="10" fill="{colour}"/>',
           f'<text x="28" y="79" font-size="20" fill="#fff" font-weight="bold">{escape(app.capitalize())}</text>']
    call = action.tool if action.kind == "tool_call" else action.kind
    args = ", ".join(f"{k}={_short(v, 18)}" for k, v in action.arguments.items())
    out.append(f'<text x="24" y="120" font-size="12" fill="#333">{escape(_short(f"{call}({args})", 54))}</text>')
    if instruction:
        out.append(f'<text x="24" y="138" font-size="11" fill="#777">{escape(_short(instruction, 58))}</text>')
    y = 150
    for row in screen_rows(step):
        fill = "#fff3c4" if row["changed"] else "#ffffff"
        cls = "row changed" if row["changed"] else "row"
        out.append(f'<g class="{cls}"><rect x="14" y="{y}" width="{WIDTH - 28}" height="{ROW_H - 4}" rx="6" '
                   f'fill="{fill}" stroke="#ddd"/>'
                   f'<text x="24" y="{y + 17}" font-size="14" fill="#111">{escape(row["mark"])} '
                   f'{escape(_short(row["title"]))}</text>'
                   f'<text x="24" y="{y + 33}" font-size="10" fill="#666">{escape(_short(row["detail"], 60))}</text>'
                   '</g>')
        y += ROW_H
    if step.feedback.error is not None:
        err = step.feedback.error
        out.append(f'<g class="toast"><rect x="20" y="{HEIGHT - 120}" width="{WIDTH - 40}" height="48" rx="8" '
                   f'fill="#b71c1c"/><text x="32" y="{HEIGHT - 92}" font-size="12" fill="#fff">'
                   f'{escape(_short(f"{err.code}: {err.message}", 50))}</text></g>')
    for n, notice in enumerate(step.feedback.notices[:2]):
        out.append(f'<text x="24" y="{HEIGHT - 56 + 16 * n}" font-size="10" fill="#8d6e00">'
                   f'{escape(_short(notice, 64))}</text>')
    out.append("</svg>")
    return "".join(out)
