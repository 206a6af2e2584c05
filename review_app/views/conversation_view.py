"""The conversation view: user and agent turns as a chat, each agent turn's tool calls
folded under it, errors in red. The same step cursor (j/k) and first-wrong-step mark (e)
as the step table; the current step's call is open, the others folded."""

from __future__ import annotations

import json

import streamlit as st

from review_app import keys
from review_app.conversation import ToolCall, Turn, conversation_turns
from review_app.episode import EpisodeView, step_position
from review_app.plain_text import md, md_line
from review_app.views import long_text


def _pretty(value) -> str:
    text = value if isinstance(value, str) else json.dumps(value, indent=1, ensure_ascii=False, default=str)
    return text if len(text) <= 3000 else text[:2999] + "…"


def _call(call: ToolCall, current: int, first_error: int | None) -> None:
    mark = ":red[✗]" if call.bad else ":green[✓]"
    here = "▶ " if call.step == current else ""
    flag = " · :red[**first error**]" if first_error == call.step else ""
    who = f"↳ {md_line(call.actor, 60)} · " if call.actor != "planner" else ""
    label = f"{here}{who}step {call.step} · **{md_line(call.tool, 80)}** {mark}{flag}"
    with st.expander(label, expanded=call.step == current):
        st.code(_pretty(call.arguments), language="json")
        if call.error:
            st.error(md(_pretty(call.error)))
        elif call.missing:
            st.warning("missing_result: the source recorded no result for this call")
        else:
            st.code(_pretty(call.result), language="json")
        extra = f" · minefields: {md(', '.join(call.minefields))}" if call.minefields else ""
        st.caption(f"label **{md(call.label)}**{extra}")


def _tag(step: int, current: int, first_error: int | None) -> str:
    parts = (["▶"] if step == current else []) + [f"step {step}"]
    return " · ".join(parts + ([":red[**first error**]"] if first_error == step else []))


def _turn(turn: Turn, current: int, first_error: int | None, key: str) -> None:
    role = "user" if turn.role == "user" else "assistant"
    with st.chat_message(role, avatar=":material/person:" if role == "user" else ":material/smart_toy:"):
        own = [s for s in turn.steps if s not in {c.step for c in turn.calls}] if turn.role == "agent" else []
        if own and not turn.after:
            st.caption(_tag(own[0], current, first_error))
        if turn.text:
            long_text(turn.text, key=f"{key}-text")
        for call in turn.calls:
            _call(call, current, first_error)
        if turn.after:
            if own:
                st.caption(_tag(own[-1], current, first_error))
            long_text(turn.after, key=f"{key}-after")
        if turn.error:
            st.error(md(_pretty(turn.error)))


def step_nav(n: int) -> None:
    """Previous/next step buttons (the keyboard's k and j click them) and where the cursor is."""
    ss = st.session_state
    nav = st.columns([1, 1, 3])
    if nav[0].button("◀ k", key="kb_step_prev", disabled=ss["step"] <= 0, help="previous step"):
        ss["step"] -= 1
        st.rerun()
    if nav[1].button("j ▶", key="kb_step_next", disabled=ss["step"] >= n - 1, help="next step"):
        ss["step"] += 1
        st.rerun()
    nav[2].caption(f"{step_position(ss['step'], n)} · {keys.HELP}")


def render_conversation(view: EpisodeView, n: int) -> None:
    """The chat, with the step navigation buttons the keyboard clicks."""
    ss = st.session_state
    step_nav(n)
    for i, turn in enumerate(conversation_turns(view.episode.instruction, view.steps)):
        _turn(turn, ss["step"], ss.get("d_first_error"), key=f"full-{view.episode.episode_id}-{i}")
