"""The release gate (leads): the dataset version and the next round's plan, beside the last release."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from review_app import release
from review_app.plain_text import md
from review_app.plan_proposal import plan_from_rows, proposal_rows, stored_proposal
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
    new, old = st.columns(2)
    with new:
        st.markdown("**This release**")
        if st.session_state.pop("rel_reset", False) or "rel_version" not in st.session_state:
            st.session_state["rel_version"] = f"v{(last.number + 1) if last else 1:04d}"
        version = st.text_input("Dataset version", key="rel_version")
        st.table(_summary_frame(cand))
        st.caption("Approved counts every episode people approved. An export of the release leaves out the "
                   "held-out challenge split and exact duplicates, and its manifest says how many.")
        if last is not None and last.episodes_digest == cand["digest"]:
            st.warning(f"This release would hold exactly the episodes of {md(last.id)} ({md(last.dataset_version)}): "
                       "nothing was approved since. Approving it adds a version with the same data.")
    with old:
        st.markdown("**Last release**")
        if last is None:
            st.caption("none yet")
        else:
            st.caption(md(f"{last.id} · {last.dataset_version} · approved by {last.approved_by} at {last.approved_at:%Y-%m-%d %H:%M}"))
            st.table(pd.DataFrame([{"rounds": ", ".join(last.round_ids), "approved": last.episodes,
                                    "notes": last.notes}]))
            if last.sampling_plan:
                st.table(_plan_frame(last.sampling_plan))
            else:
                st.caption("approved without a sampling plan: the planner chose the next round")
    st.markdown("**The next round**: the competence planner's proposal; edit a level or share in place")
    proposal = stored_proposal(ctx.store)
    if proposal is None:
        st.info("No plan proposed yet: run `flywheel plan` (or finish a round) to propose one.")
        return
    st.caption(f"Proposed from {md(proposal.get('source', 'even'))}")
    episodes = st.number_input("Episodes", min_value=1, step=1, key="rel_episodes",
                               value=int(proposal.get("episodes") or (last_round.requested_episodes if last_round else 100)))
    rows = _edit_rows(proposal_rows(proposal))
    for line in proposal.get("reports", []):
        st.caption(f"Report: {md(line)}")
    notes = st.text_input("Notes", key="rel_notes")
    if st.button("Approve release", key="rel_approve", type="primary"):
        try:
            plan = plan_from_rows(rows, int(episodes), proposal)
            rel = release.approve_release(
                ctx.store, lead=ctx.user, dataset_version=version, round_ids=chosen,
                sampling_plan=plan, overlap=ctx.overlap, notes=notes,
            )
        except Exception as exc:  # noqa: BLE001  (InputError shown in place)
            st.error(str(exc))
            return
        st.session_state["rel_reset"] = True  # propose the next version number
        st.session_state["flash"] = f"Approved {rel.id}: {rel.dataset_version} with {rel.episodes} episodes"
        st.rerun()


def _edit_rows(rows: list[dict]) -> list[dict]:
    """The proposal as a table edited in place: level and share per family; reason and
    the competence behind it beside them."""
    widths = [1, 1, 1, 1, 6]
    head = st.columns(widths)
    for col, name in zip(head, ("family", "level", "share", "proposed", "why"), strict=True):
        col.markdown(f"**{name}**")
    out = []
    for r in rows:
        fam, level, share, proposed, why = st.columns(widths)
        fam.markdown(md(r["family"]))
        lv = level.number_input("level", min_value=1, step=1, value=r["difficulty"], key=f"plan-level-{r['family']}",
                                label_visibility="collapsed")
        sh = share.number_input("share", min_value=0.0, max_value=1.0, step=0.01, value=r["share"], format="%.3f",
                                key=f"plan-share-{r['family']}", label_visibility="collapsed")
        proposed.markdown(f"{r['share']:.0%} · {r['episodes']} ep")
        why.caption(md(r["reason"]))
        out.append({**r, "difficulty": int(lv), "share": float(sh)})
    return out


def _summary_frame(cand: dict) -> pd.DataFrame:
    """The candidate release as two readable columns."""
    rows = [("rounds", ", ".join(cand["rounds"]))] + [
        (k.replace("_", " "), str(v)) for k, v in cand.items() if k not in ("digest", "rounds")]
    return pd.DataFrame(rows, columns=["", "episodes"]).set_index("")


def _plan_frame(plan: dict) -> pd.DataFrame:
    """A released sampling plan as a table: family, share, level."""
    levels = plan.get("difficulties", {})
    return pd.DataFrame([{"family": f, "share": f"{v:.0%}", "level": levels.get(f, "")}
                         for f, v in sorted(plan.get("families", {}).items())])
