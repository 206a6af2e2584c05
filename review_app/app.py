"""The review app: a thin Streamlit shell over review_app's logic modules.

Run through ``flywheel review`` (which passes the data directory, state URL and config file).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import streamlit as st

from review_app import accounts, queue
from review_app.data import Overlap
from review_app.plain_text import md
from review_app.views import Ctx, adjudication_view, dashboard_view, episode_view, queue_view, release_view, signin
from warehouse.errors import FlywheelError
from warehouse.settings import Settings, load_settings
from warehouse.store import Store

PAGES = {"Queue": "reviewer", "Episode": "reviewer", "Dashboard": "reviewer", "Adjudication": "lead", "Release": "lead"}


def _args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="review_app")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--state-url", default=None)
    parser.add_argument("--config", default=None)
    args, _ = parser.parse_known_args(sys.argv[1:])
    return args


@st.cache_resource
def _store(key: str, _settings: Settings) -> Store:
    # one store per data directory and state database: Streamlit hashes ``key``, not ``_settings``
    return Store.from_settings(_settings)


def _open_episode(episode_id: str, round_id: str | None) -> None:
    st.session_state["episode_id"] = episode_id
    st.session_state["episode_round"] = round_id
    # The page radio already exists in this run; switch pages on the next one.
    st.session_state["nav_to"] = "Episode"
    st.rerun()


def main() -> None:
    st.set_page_config(page_title="agent-flywheel review", layout="wide")
    args = _args()
    try:
        config = Path(args.config) if args.config else None
        settings = load_settings(config, data_dir=args.data_dir, state_url=args.state_url)
        store = _store(f"{settings.data_location()} {settings.state_url}", settings)
    except FlywheelError as exc:
        st.error(str(exc))
        return
    had_user = st.session_state.get("user") is not None
    user = accounts.session_user(store, st.session_state.get("user"), st.session_state.get("signed_in_at"),
                                 hours=settings.review_session_hours)
    if user is None:
        if had_user:  # expired, or the account was deactivated: forget everything the session held
            st.session_state.clear()
            st.session_state["signin_note"] = "Your session has ended; sign in again."
        signin.render(store)
        return
    st.session_state["user"] = user
    ctx = Ctx(store, user, Overlap.from_settings(settings))
    sb = st.sidebar
    sb.markdown(f"Signed in as **{md(user.name)}** ({user.role})")
    if sb.button("Sign out", key="signout"):
        st.session_state.clear()
        st.rerun()
    pages = [p for p, role in PAGES.items() if role == "reviewer" or user.is_lead]
    if "nav_to" in st.session_state:
        st.session_state["nav"] = st.session_state.pop("nav_to")
    if st.session_state.get("nav") not in pages:
        st.session_state["nav"] = "Queue"
    if "episode_id" not in st.session_state:
        pages = [p for p in pages if p != "Episode"]
        if st.session_state["nav"] == "Episode":
            st.session_state["nav"] = "Queue"
    page = sb.radio("Page", pages, key="nav")
    if page != "Episode":
        # Streamlit forgets the decision widgets off their page; reload them from the draft on return.
        st.session_state.pop("loaded_for", None)

    def next_episode(after: str | None) -> None:
        nxt = queue.next_episode(store, user, queue_view.current_filter(ctx), after, ctx.overlap)
        if nxt is None:
            st.session_state["flash_note"] = "No other episode in the queue under these filters."
            st.session_state["nav_to"] = "Queue"
            st.rerun()
        if nxt.wrapped:
            st.session_state["flash_note"] = "That was the end of the queue: back to its first episode."
        _open_episode(nxt.episode_id, nxt.round_id)

    try:
        if page == "Queue":
            queue_view.render(ctx, _open_episode)
        elif page == "Episode":
            queue_view.sidebar_filters(ctx)
            episode_view.render(ctx, next_episode)
        elif page == "Dashboard":
            dashboard_view.render(ctx)
        elif page == "Adjudication":
            adjudication_view.render(ctx, _open_episode)
        elif page == "Release":
            release_view.render(ctx)
    except FlywheelError as exc:
        st.error(str(exc))


main()
