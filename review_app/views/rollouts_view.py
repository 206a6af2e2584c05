"""The rollouts of the episode's task side by side, aligned by step, the diverging step marked."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from review_app.episode import EpisodeView
from review_app.plain_text import md
from review_app.rollouts import aligned_rows, divergence, load_rollouts
from review_app.views import Ctx


def render_rollouts(ctx: Ctx, view: EpisodeView) -> None:
    views, more = load_rollouts(ctx.store, view)
    if len(views) < 2:
        st.info("This task has no other rollout in this round.")
        return
    at = divergence(views)
    st.markdown(f"**{len(views)} rollouts of task {md(view.episode.task_id)}**"
                + (f" ({more} more not shown)" if more else "") + " · "
                + (f":orange[**the rollouts diverge at step {at}**]" if at is not None
                   else "they all do the same at every step"))
    rows = aligned_rows(views)

    df = pd.DataFrame(rows)

    def style(row):
        return ["background-color: #fff3c4; font-weight: bold" if row["step"] == at else ""] * len(row)

    # narrow enough that several rollouts fit side by side; a cell's tooltip shows all of it
    widths = {name: st.column_config.TextColumn(width="medium") for name in df.columns if name not in ("step", "")}
    st.dataframe(df.style.apply(style, axis=1), hide_index=True, width="stretch",
                 height=min(38 + 35 * len(rows), 800), column_config={"step": st.column_config.NumberColumn(width="small"),
                                                                      "": st.column_config.TextColumn(width="small"),
                                                                      **widths})
    st.caption("✗ a step with an error, a minefield or a bad label · ◆ the first step at which the rollouts part "
               "ways: the same state, different actions (where preference pairs come from)")
