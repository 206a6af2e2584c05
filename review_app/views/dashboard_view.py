"""Dashboard: per round funnel, success by family and capability, cost, throughput, agreement."""

from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st

from review_app import dashboard
from review_app.views import Ctx
from review_app.views.queue_view import round_ids


def _bar(df: pd.DataFrame, x: str, y: str, **kw) -> alt.Chart:
    return alt.Chart(df).mark_bar().encode(x=alt.X(x, sort=None), y=y, **kw)


def render(ctx: Ctx) -> None:
    rounds = round_ids(ctx)
    if not rounds:
        st.info("No rounds yet. Run `flywheel run` first.")
        return
    rnd = st.selectbox("Round", rounds, key="dash_round")
    st.subheader(f"Round {rnd}")
    c1, c2 = st.columns(2)
    with c1:
        st.markdown("**Funnel**")
        st.altair_chart(_bar(pd.DataFrame(dashboard.funnel(ctx.store, rnd, ctx.overlap)), "count:Q", "stage:N"), width="stretch")
    with c2:
        st.markdown("**Cost**")
        cost = dashboard.cost(ctx.store, rnd, ctx.overlap)
        m = st.columns(3)
        m[0].metric("approved", cost["approved"])
        m[1].metric("tokens / approved", cost["tokens_per_approved"] if cost["tokens_per_approved"] is not None else "–")
        m[2].metric("model s / approved", cost["model_seconds_per_approved"] if cost["model_seconds_per_approved"] is not None else "–")
    c3, c4 = st.columns(2)
    with c3:
        st.markdown("**Success by family**")
        df = pd.DataFrame(dashboard.success_by(ctx.store, rnd, "family"))
        if not df.empty:
            st.altair_chart(_bar(df, "family:N", "success_rate:Q", tooltip=["episodes"]), width="stretch")
    with c4:
        st.markdown("**Success by capability**")
        df = pd.DataFrame(dashboard.success_by(ctx.store, rnd, "capability"))
        if not df.empty:
            st.altair_chart(_bar(df, "capability:N", "success_rate:Q", tooltip=["episodes"]), width="stretch")
    c5, c6 = st.columns(2)
    with c5:
        st.markdown("**Reviewer throughput** (decisions per hour)")
        df = pd.DataFrame(dashboard.throughput(ctx.store, rnd))
        if df.empty:
            st.caption("no decisions yet")
        else:
            st.altair_chart(_bar(df, "hour:N", "decisions:Q", color="reviewer:N"), width="stretch")
    with c6:
        st.markdown("**Agreement** (Cohen's kappa)")
        pairs, fams = dashboard.agreement(ctx.store, rnd, ctx.overlap)
        table = [{"group": a.group, "items": a.items, "agreement": round(a.agreement, 3),
                  "kappa": None if a.kappa is None else round(a.kappa, 3)} for a in [*pairs, *fams]]
        if table:
            st.altair_chart(_bar(pd.DataFrame(table), "group:N", "kappa:Q", tooltip=["items", "agreement"]), width="stretch")
            st.dataframe(table, hide_index=True, width="stretch")
        else:
            st.caption("no episode has two reviewers yet")
    st.subheader("The flywheel over time")
    h1, h2 = st.columns(2)
    with h1:
        st.markdown("**Competence per family** (after each feedback batch)")
        df = pd.DataFrame(dashboard.competence_history(ctx.store))
        if df.empty:
            st.caption("no feedback yet: `flywheel eval` or `flywheel feedback FILE`")
        else:
            chart = alt.Chart(df).mark_line(point=True).encode(
                x=alt.X("order:O", title="feedback batch"), y=alt.Y("mean:Q", title="success", scale=alt.Scale(domain=[0, 1])),
                color="family:N", tooltip=["batch", "family", "difficulty", "mean", "sd", "evidence", "zone"])
            st.altair_chart(chart, width="stretch")
    with h2:
        st.markdown("**The mix of each round**")
        df = pd.DataFrame(dashboard.round_mixes(ctx.store))
        if not df.empty:
            st.altair_chart(_bar(df, "round:N", "share:Q", color="family:N", tooltip=["family", "share"]), width="stretch")
