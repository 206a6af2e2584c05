"""The episode: instruction and requirements, step timeline, outcome, marks, decision."""

from __future__ import annotations

import json
from datetime import UTC

import pandas as pd
import streamlit as st

from review_app import decisions, keys, screens
from review_app.conversation import is_conversation
from review_app.episode import (
    REFERENCE_NOTE,
    EpisodeView,
    is_reference,
    load_episode,
    requirement_rows,
    step_rows,
    table_window,
)
from review_app.plain_text import clip, md, md_line
from review_app.views import Ctx, long_text
from review_app.views.conversation_view import render_conversation, step_nav
from review_app.views.rollouts_view import render_rollouts
from review_app.views.screen_image import show_screens

_REASONS = ["", *decisions.REJECT_REASONS]


def _init_from_draft(ctx: Ctx, view: EpisodeView) -> None:
    """When a new episode opens, fill the decision widgets from the saved draft."""
    ss = st.session_state
    eid = view.episode.episode_id
    if ss.get("loaded_for") == eid:
        return
    draft = decisions.load_draft(ctx.store, reviewer=ctx.user.name, episode_id=eid)
    ss["d_reason"] = draft.reason_code if draft else ""
    ss["d_text"] = draft.reason_text if draft else ""
    ss["d_first_error"] = draft.first_wrong_step if draft else None
    ss["d_recovered"] = bool(draft.recovered) if draft else False
    ss["step"] = draft.first_wrong_step if draft and draft.first_wrong_step is not None else 0
    ss["loaded_for"] = eid


def _save_draft(ctx: Ctx, view: EpisodeView) -> None:
    ss = st.session_state
    decisions.save_draft(
        ctx.store,
        reviewer=ctx.user.name,
        round_id=view.episode.round_id,
        episode_id=view.episode.episode_id,
        reason_code=ss.get("d_reason") or "",
        reason_text=ss.get("d_text") or "",
        first_wrong_step=ss.get("d_first_error"),
        recovered=bool(ss.get("d_recovered")) and ss.get("d_first_error") is not None,
    )
    ss["flash"] = "Draft saved"


def _decide(ctx: Ctx, view: EpisodeView, decision: str) -> None:
    ss = st.session_state
    try:
        saved = decisions.record_decision(
            ctx.store,
            reviewer=ctx.user.name,
            round_id=view.episode.round_id,
            episode_id=view.episode.episode_id,
            decision=decision,
            reason_code=ss.get("d_reason") or "",
            reason_text=ss.get("d_text") or "",
            first_wrong_step=ss.get("d_first_error"),
            recovered=bool(ss.get("d_recovered")) and ss.get("d_first_error") is not None,
        )
    except Exception as exc:  # noqa: BLE001  (an InputError is shown; the draft is kept)
        ss["flash_error"] = decisions.as_shown_in_app(exc)
        return
    when = saved.decided_at.astimezone(UTC).strftime("%H:%M:%S UTC")
    ss["flash"] = f"Saved: {decision.replace('_', ' ')} by {saved.reviewer} at {when}"


def render(ctx: Ctx, next_episode) -> None:
    ss = st.session_state
    try:
        view = load_episode(ctx.store, ss["episode_id"], ss.get("episode_round"))
    except Exception as exc:  # noqa: BLE001
        st.error(md(str(exc)))
        return
    _init_from_draft(ctx, view)
    n = len(view.steps)
    ss["step"] = max(0, min(ss.get("step", 0), n - 1)) if n else 0

    if ss.get("flash"):
        st.success(md(ss.pop("flash")), icon=":material/check_circle:")
    if ss.get("flash_error"):
        st.error(md(ss.pop("flash_error")))
    if ss.get("flash_note"):
        st.info(md(ss.pop("flash_note")))

    ep, out = view.episode, view.outcome
    verdict = (":green[verified]" if out and out.success else ":orange[outcome unknown (no reward)]"
               if out and out.success is None else ":red[not verified]")
    st.subheader(f"{md_line(ep.family, 80)} · {verdict}")
    with st.container(border=True):
        long_text(ep.instruction, key=f"full-{ep.episode_id}-instruction")
    st.caption(md(f"{ep.episode_id} · round {ep.round_id} · split {ep.split}"
                  + (" (held out: never in a training file)" if ep.split == "challenge" else "")
                  + f" · policy {ep.policy} · rollout {ep.rollout}"))
    if is_reference(ep):
        st.info(REFERENCE_NOTE, icon=":material/school:")

    chat = is_conversation(ep, view.steps)
    shape = st.segmented_control(
        "View", ["Conversation", "Steps", "Rollouts side by side"], default="Conversation" if chat else "Steps",
        key=f"view_{ep.episode_id}", label_visibility="collapsed",
    )
    shape = shape or ("Conversation" if chat else "Steps")
    if shape == "Rollouts side by side":  # the whole width: a column per rollout
        render_rollouts(ctx, view)
    left, right = st.columns([3, 2])
    with left:
        if shape == "Conversation":
            render_conversation(view, n)
        elif shape == "Steps":
            _timeline(view, n)
    with right:
        _decision_panel(ctx, view, n, next_episode)
        _outcome(view)
    st.html(keys.script_tag(keys.EPISODE_KEYS, (ss["step"], n) if n else None), unsafe_allow_javascript=True)


def _timeline(view: EpisodeView, n: int) -> None:
    ss = st.session_state
    step_nav(view, n)
    start, stop = table_window(n, ss["step"])
    rows = step_rows(view)[start:stop]
    for r in rows:
        r["▶"] = "▶" if r["step"] == ss["step"] else ""
        if ss.get("d_first_error") == r["step"]:
            r["▶"] += " first error"

    def style(row):
        bad = (not row["ok"]) or row["minefields"] or row["label"] in ("harmful", "invalid_call", "recoverable_error")
        cur = row["step"] == ss["step"]
        color = "background-color: #fde2e1" if bad else ("background-color: #e8f0fe" if cur else "")
        return [color] * len(row)

    if rows:
        df = pd.DataFrame(rows)[["▶", "step", "action", "arguments", "ok", "error", "label", "milestones", "minefields", "progress"]]
        st.dataframe(df.style.apply(style, axis=1), hide_index=True, width="stretch", height=38 + 35 * len(rows))
        if (start, stop) != (0, n):
            st.caption(f"steps {start}–{stop - 1} of 0–{n - 1}: the table follows the step cursor")
        _step_detail(view, ss["step"])


def _step_detail(view: EpisodeView, index: int) -> None:
    step = view.steps[index]
    with st.container(border=True):
        st.markdown(f"**Step {index}** · {md_line(step.actor, 60)} · "
                    f"**{md_line(step.action.tool or step.action.kind, 80)}**")
        if step.action.text:
            long_text(step.action.text, key=f"full-{view.episode.episode_id}-step-{index}")
        show_screens(screens.before_and_after(view.task, view.steps, index), place="steps")
        with st.container():
            st.code(clip(json.dumps(step.action.arguments, indent=1, ensure_ascii=False, default=str))[0], language="json")
            if step.feedback.error:
                e = step.feedback.error
                st.error(md(clip(f"{e.code}: {e.message}" + (f" (hint: {e.hint})" if e.hint else ""))[0]))
            else:
                st.code(json.dumps(step.feedback.result, indent=1, ensure_ascii=False, default=str)[:2000], language="json")
            for notice in step.feedback.notices:
                st.warning(md(clip(str(notice))[0]))
            v = step.verification
            st.caption(
                f"label **{md(v.label)}** · progress {v.progress:.2f}"
                + (f" · milestones: {md(', '.join(v.milestones))}" if v.milestones else "")
            )
            if v.minefields:
                st.error(f"minefields: {md(', '.join(v.minefields))}")


def _decision_panel(ctx: Ctx, view: EpisodeView, n: int, next_episode) -> None:
    ss = st.session_state
    with st.container(border=True):
        st.markdown("**Decision**")
        save = lambda: _save_draft(ctx, view)  # noqa: E731
        st.selectbox(
            "Reason (needed to reject)", _REASONS, key="d_reason", on_change=save,
            format_func=lambda c: decisions.REJECT_REASONS.get(c, "—"),
        )
        st.text_input("Notes", key="d_text", on_change=save)
        fe = ss.get("d_first_error")
        c = st.columns([2, 1])
        c[0].caption(f"First wrong step: **{fe}**" if fe is not None else "First wrong step: none marked")
        if c[1].button("Mark step · e", key="kb_mark_error", help="mark the current step as the first wrong one"):
            ss["d_first_error"] = None if fe == ss["step"] else ss["step"]
            if ss["d_first_error"] is None:
                ss["d_recovered"] = False
            _save_draft(ctx, view)
            st.rerun()
        rec = bool(ss.get("d_recovered")) and fe is not None
        c = st.columns([2, 1])
        c[0].caption(
            "Loss: none on the first wrong step only (the agent **recovered**)" if rec
            else "Loss: none from the first wrong step on" if fe is not None
            else "Loss: on every agent step"
        )
        if c[1].button("Recovered · v", key="kb_recovered", disabled=fe is None,
                       help="the agent recovered after its first wrong step: mask only that step, not the rest"):
            ss["d_recovered"] = not rec
            _save_draft(ctx, view)
            st.rerun()
        b = st.columns(2)
        if b[0].button("Approve · a", key="kb_approve", type="primary", width="stretch"):
            _decide(ctx, view, "approve")
            st.rerun()
        if b[1].button("Reject · r", key="kb_reject", width="stretch"):
            _decide(ctx, view, "reject")
            st.rerun()
        if b[0].button("Needs fix · f", key="kb_fix", width="stretch"):
            _decide(ctx, view, "needs_fix")
            st.rerun()
        if b[1].button("Next episode · n", key="kb_next", width="stretch"):
            next_episode(view.episode.episode_id)
        mine = decisions.reviewer_history(ctx.store, ctx.user.name, view.episode.episode_id)
        if mine:
            last = mine[-1]
            st.caption(
                f"Your decision: **{md(last.decision)}** {('· ' + md_line(last.reason, 2000)) if last.reason else ''}"
                f"{f' · first wrong step {last.first_wrong_step}' if last.first_wrong_step is not None else ''}"
                f"{' (recovered)' if last.recovered else ''}"
            )


def _outcome(view: EpisodeView) -> None:
    out = view.outcome
    with st.expander("Requirements and outcome", expanded=True):
        if out:
            st.caption(
                f"termination **{md(out.termination)}** · progress {out.progress:.2f} · {out.steps} steps · "
                f"efficiency {out.efficiency:.2f}"
                + (md(f" · failure: {out.failure.side}/{out.failure.category or out.failure.type} ({out.failure.type}) "
                      f"at step {out.failure.step}") if out.failure else "")
            )
            if out.final_answer is not None:
                st.caption(f"final answer: {md(json.dumps(out.final_answer, ensure_ascii=False, default=str)[:300])}")
            for f in out.user_fallbacks:  # the user model said what it may not: the scripted answer was given
                st.warning(md(f"step {f.get('step')}: the user model's reply was replaced ({f.get('reason')}): "
                              f"{str(f.get('raw', ''))[:300]}"))
        st.dataframe(requirement_rows(view), hide_index=True, width="stretch")
    with st.expander("Curation marks", expanded=True):
        for m in view.marks:
            icon = ":green[passed]" if m.passed else ":orange[flagged]"
            st.markdown(f"{icon} · **{md(m.check)}**: {md(m.mark)}" + (f" — {md_line(m.reason, 500)}" if m.reason else ""))
        if not view.marks:
            st.caption("not curated yet")
