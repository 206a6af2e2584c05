"""The review page: a thin Streamlit view over review_app.logic.

Run through ``flywheel review`` (which passes the data directory and state URL).
"""

from __future__ import annotations

import argparse
import sys

import streamlit as st

from review_app import logic
from warehouse.errors import FlywheelError
from warehouse.settings import load_settings
from warehouse.store import Store

PAGE_SIZE = 25


def _args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="review_app")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--state-url", default=None)
    args, _ = parser.parse_known_args(sys.argv[1:])
    return args


@st.cache_resource
def _store(data_dir: str, state_url: str | None) -> Store:
    return Store(data_dir, state_url)


def main() -> None:
    st.set_page_config(page_title="agent-flywheel review", layout="wide")
    args = _args()
    try:
        settings = load_settings(data_dir=args.data_dir, state_url=args.state_url)
        store = _store(str(settings.data_dir), settings.state_url)
    except FlywheelError as exc:
        st.error(str(exc))
        return
    st.title("Trajectory review")
    reviewer = st.sidebar.text_input("Reviewer", key="reviewer")
    rounds = logic.round_ids(store)
    if not rounds:
        st.info("No rounds yet. Run `flywheel run` first.")
        return
    round_id = st.sidebar.selectbox("Round", rounds, key="round")
    total = logic.episode_count(store, round_id)
    pages = max(1, (total + PAGE_SIZE - 1) // PAGE_SIZE)
    page = st.sidebar.number_input("Page", min_value=1, max_value=pages, value=1, key="page")
    st.caption(f"{total} episodes in {round_id}")
    for row in logic.episode_rows(store, round_id, limit=PAGE_SIZE, offset=(page - 1) * PAGE_SIZE):
        _episode(store, round_id, row, reviewer)


def _episode(store: Store, round_id: str, row: dict, reviewer: str) -> None:
    eid = row["episode_id"]
    verdict = "✅ verified" if row["success"] else "❌ not verified"
    decided = f" · {row['decision']} by {row['reviewer']}" if row["decision"] else ""
    with st.expander(f"{row['family']} · {verdict} · {row['instruction'][:90]}{decided}"):
        st.write(row["instruction"])
        st.caption(f"{eid} · progress {row['progress']:.2f} · {row['steps']} steps · marks: {', '.join(row['marks'])}")
        st.dataframe(logic.episode_steps(store, round_id, eid), hide_index=True, use_container_width=True)
        cols = st.columns(3)
        for col, decision in zip(cols, logic.DECISIONS, strict=True):
            if col.button(decision.replace("_", " "), key=f"{decision}-{eid}"):
                try:
                    logic.record_decision(
                        store, round_id=round_id, episode_id=eid, reviewer=reviewer, decision=decision
                    )
                    st.toast(f"{decision} saved for {eid}")
                    st.rerun()
                except FlywheelError as exc:
                    st.error(str(exc))


main()
