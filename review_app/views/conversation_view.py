"""The conversation view: user and agent turns as a chat, each agent turn's tool calls
folded under it, errors in red. The same step cursor (j/k) and first-wrong-step mark (e)
as the step table; the current step's call is open, the others folded."""

from __future__ import annotations

import json

import streamlit as st

from review_app import keys, screens
from review_app.conversation import ToolCall, Turn, call_verdict, conversation_turns
from review_app.episode import EpisodeView, next_failed_step, step_position, steps_calling
from review_app.plain_text import md, md_line
from review_app.views import long_text
from review_app.views.screen_image import show_screens


def _pretty(value) -> str:
    text = value if isinstance(value, str) else json.dumps(value, indent=1, ensure_ascii=False, default=str)
    return text if len(text) <= 3000 else text[:2999] + "…"


def _screens(view: EpisodeView, step: int) -> None:
    """The phone before and after the current step, under it."""
    index = next((i for i, s in enumerate(view.steps) if s.index == step), None)
    if index is not None:
        show_screens(screens.before_and_after(view.task, view.steps, index), place="chat", width=200)


def _call(call: ToolCall, current: int, first_error: int | None, view: EpisodeView) -> None:
    mark = f":red[✗ {md_line(call_verdict(call), 80)}]" if call.bad else ":green[✓]"
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
        if call.step == current:
            _screens(view, call.step)


def _tag(step: int, current: int, first_error: int | None) -> str:
    parts = (["▶"] if step == current else []) + [f"step {step}"]
    return " · ".join(parts + ([":red[**first error**]"] if first_error == step else []))


def _turn(turn: Turn, current: int, first_error: int | None, key: str, view: EpisodeView) -> None:
    role = "user" if turn.role == "user" else "assistant"
    with st.chat_message(role, avatar=":material/person:" if role == "user" else ":material/smart_toy:"):
        own = [s for s in turn.steps if s not in {c.step for c in turn.calls}] if turn.role == "agent" else []
        if own and not turn.after:
            st.caption(_tag(own[0], current, first_error))
        if turn.text:
            long_text(turn.text, key=f"{key}-text")
        for call in turn.calls:
            _call(call, current, first_error, view)
        if turn.after:
            if own:
                st.caption(_tag(own[-1], current, first_error))
            long_text(turn.after, key=f"{key}-after")
        if turn.error:
            st.error(md(_pretty(turn.error)))
        if current in own:  # a question or the closing message: its screens under it
            _screens(view, current)


def _go_to(n: int) -> None:
    ss = st.session_state
    if ss.get(keys.GOTO_INPUT) is not None:
        ss["step"] = max(0, min(int(ss[keys.GOTO_INPUT]), n - 1))


def _jump_to_hit() -> None:
    ss = st.session_state
    if ss.get("step_hit") is not None:
        ss["step"] = ss["step_hit"]
    ss["step_hit"] = None


def _find_step(view: EpisodeView) -> None:
    """A box to find the steps that call a tool, and a list of them to jump to."""
    cols = st.columns([2, 3])
    text = cols[0].text_input("Find a step by tool", key="step_find", placeholder="find a step by tool name",
                              label_visibility="collapsed")
    if not text.strip():
        return
    hits = steps_calling(view, text)
    if not hits:
        cols[1].caption(f"no step calls a tool named like {md_line(text, 60)}")
        return
    tools = {s.index: s.action.tool or s.action.kind for s in view.steps}
    cols[1].selectbox("Steps calling it", hits, index=None, key="step_hit", on_change=_jump_to_hit,
                      format_func=lambda i: f"step {i} · {tools.get(i, '')}", label_visibility="collapsed",
                      placeholder=f"{len(hits)} steps call it: jump to one")


def step_nav(view: EpisodeView, n: int) -> None:
    """Previous/next step buttons (the keyboard's k and j click them), the step box (g and a number
    type into it), jumps to the first wrong and the next failed step, and where the cursor is."""
    ss = st.session_state
    nav = st.columns([1, 1, 1.3, 1.6, 1.6])
    if nav[0].button("◀ k", key="kb_step_prev", disabled=ss["step"] <= 0, help="previous step"):
        ss["step"] -= 1
        st.rerun()
    if nav[1].button("j ▶", key="kb_step_next", disabled=ss["step"] >= n - 1, help="next step"):
        ss["step"] += 1
        st.rerun()
    ss[keys.GOTO_INPUT] = ss["step"]  # the box shows the cursor; typing a step there moves it
    nav[2].number_input("Go to step · g", min_value=0, max_value=max(n - 1, 0), step=1, key=keys.GOTO_INPUT,
                        on_change=_go_to, args=(n,), label_visibility="collapsed", help="g, then a step number")
    marked = ss.get("d_first_error")
    first = marked if marked is not None else view.first_failed_step
    if nav[3].button("First wrong · w", key="kb_first_wrong", disabled=first is None, width="stretch",
                     help="the step marked as the first wrong one, else the first failed step"):
        ss["step"] = first
        st.rerun()
    after = next_failed_step(view.failed_steps, ss["step"])
    if nav[4].button("Next failed · x", key="kb_next_failed", disabled=after is None, width="stretch",
                     help="the next step with an error or a bad label (from the last, the first)"):
        ss["step"] = after
        st.rerun()
    _find_step(view)
    failed = view.failed_steps
    st.caption(f"{step_position(ss['step'], n)} · failed steps: "
               f"{', '.join(map(str, failed[:20])) + (' …' if len(failed) > 20 else '') if failed else 'none'}"
               f" · {keys.HELP}")


def render_conversation(view: EpisodeView, n: int) -> None:
    """The chat, with the step navigation buttons the keyboard clicks."""
    ss = st.session_state
    step_nav(view, n)
    for i, turn in enumerate(conversation_turns(view.episode.instruction, view.steps)):
        _turn(turn, ss["step"], ss.get("d_first_error"), key=f"full-{view.episode.episode_id}-{i}", view=view)
