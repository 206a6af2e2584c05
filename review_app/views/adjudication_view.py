"""Adjudication (leads): episodes whose reviewers disagree; the lead's decision counts."""

from __future__ import annotations

import streamlit as st

from review_app import dashboard, decisions
from review_app.plain_text import md, md_line
from review_app.views import Ctx

_CHOICES = list(decisions.DECISIONS)


def render(ctx: Ctx, open_episode) -> None:
    st.subheader("Adjudication")
    rows = dashboard.disputed(ctx.store, None, ctx.overlap)
    if st.session_state.get("flash"):
        st.success(md(st.session_state.pop("flash")), icon=":material/check_circle:")
    if not rows:
        st.info("No disagreements waiting.")
        return
    st.caption(f"{len(rows)} episode(s) where reviewers disagree")
    for row in rows:
        eid = row["episode_id"]
        with st.container(border=True):
            st.markdown(f"**{md_line(row['family'], 80)}** · {md_line(row['instruction'], 160)}")
            st.caption(md(eid))
            for r in decisions.episode_reviews(ctx.store, eid):
                st.markdown(
                    f"- {md(r.reviewer)}: **{md(r.decision)}**"
                    + (f" · {md_line(r.reason, 2000)}" if r.reason else "")
                    + (f" · first wrong step {r.first_wrong_step}" if r.first_wrong_step is not None else "")
                    + (" (recovered)" if r.recovered else "")
                )
            c = st.columns([2, 3, 3, 2, 2, 1, 1])
            # no default: a settlement is the lead's own choice, never a Settle pressed past an unread default
            choice = c[0].selectbox("Decision", _CHOICES, index=None, placeholder="choose…", key=f"adj-decision-{eid}")
            code = c[1].selectbox(
                "Reason", ["", *decisions.REJECT_REASONS], key=f"adj-reason-{eid}",
                format_func=lambda k: decisions.REJECT_REASONS.get(k, "—"),
            )
            text = c[2].text_input("Notes", key=f"adj-text-{eid}")
            step = c[3].number_input("First wrong step", min_value=0, value=None, step=1, key=f"adj-step-{eid}")
            recovered = c[4].checkbox("Recovered", key=f"adj-recovered-{eid}",
                                      help="the agent recovered after that step: mask only it, not the rest")
            if c[5].button("Settle", key=f"adj-submit-{eid}", type="primary"):
                if choice is None:
                    st.error(f"Choose a decision for {md(eid)} before settling it.")
                    continue
                try:
                    decisions.adjudicate(
                        ctx.store, lead=ctx.user, round_id=row["round_id"], episode_id=eid,
                        decision=choice, reason_code=code, reason_text=text,
                        first_wrong_step=None if step is None else int(step), recovered=recovered,
                    )
                except Exception as exc:  # noqa: BLE001  (InputError shown in place)
                    st.error(md(decisions.as_shown_in_app(exc)))
                else:
                    st.session_state["flash"] = f"Settled {eid}: {choice}"
                    st.rerun()
            if c[6].button("Open", key=f"adj-open-{eid}"):
                open_episode(eid, row["round_id"])
