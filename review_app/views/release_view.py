"""The release gate (leads): the dataset version and the next round's plan, beside the last release."""

from __future__ import annotations

import json

import streamlit as st

from review_app import release
from review_app.views import Ctx
from review_app.views.queue_view import round_ids
from warehouse import review_tables as rt
from warehouse import state


def render(ctx: Ctx) -> None:
    st.subheader("Release")
    if st.session_state.get("flash"):
        st.success(st.session_state.pop("flash"), icon=":material/check_circle:")
    rounds = round_ids(ctx)
    if not rounds:
        st.info("No rounds yet.")
        return
    with ctx.store.session() as s:
        last = rt.latest_release(session=s)
        last_round = state.latest_round(session=s)
    chosen = st.multiselect("Rounds in this release", rounds, default=rounds, key="rel_rounds")
    if not chosen:
        st.warning("Choose at least one round.")
        return
    cand = release.release_candidate(ctx.store, chosen, ctx.overlap)
    plan = release.proposed_plan(ctx.store, chosen, last_round.requested_episodes if last_round else 100)
    new, old = st.columns(2)
    with new:
        st.markdown("**This release**")
        if st.session_state.pop("rel_reset", False) or "rel_version" not in st.session_state:
            st.session_state["rel_version"] = f"v{(last.number + 1) if last else 1:04d}"
        version = st.text_input("Dataset version", key="rel_version")
        st.json({k: v for k, v in cand.items() if k != "digest"})
        plan_text = st.text_area("Sampling plan for the next round (JSON)", value=json.dumps(plan, indent=2), height=260, key="rel_plan")
        notes = st.text_input("Notes", key="rel_notes")
        if st.button("Approve release", key="rel_approve", type="primary"):
            try:
                parsed = json.loads(plan_text)
            except json.JSONDecodeError as exc:
                st.error(f"sampling plan is not valid JSON: {exc}")
                return
            try:
                rel = release.approve_release(
                    ctx.store, lead=ctx.user, dataset_version=version, round_ids=chosen,
                    sampling_plan=parsed, overlap=ctx.overlap, notes=notes,
                )
            except Exception as exc:  # noqa: BLE001  (InputError shown in place)
                st.error(str(exc))
                return
            st.session_state["rel_reset"] = True  # propose the next version number
            st.session_state["flash"] = f"Approved {rel.id}: {rel.dataset_version} with {rel.episodes} episodes"
            st.rerun()
    with old:
        st.markdown("**Last release**")
        if last is None:
            st.caption("none yet")
        else:
            st.caption(f"{last.id} · {last.dataset_version} · approved by {last.approved_by} at {last.approved_at:%Y-%m-%d %H:%M}")
            st.json({"rounds": last.round_ids, "approved": last.episodes, "notes": last.notes})
            st.json(last.sampling_plan)
