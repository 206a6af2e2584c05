"""Sign-in: nobody reviews anonymously."""

from __future__ import annotations

from datetime import UTC, datetime

import streamlit as st

from review_app import accounts, keys
from warehouse.errors import InputError
from warehouse.store import Store


def render(store: Store) -> None:
    st.title("Trajectory review")
    st.caption("Sign in with your reviewer account (created with `flywheel reviewer add NAME`).")
    if note := st.session_state.pop("signin_note", None):
        st.info(note)
    with st.form("signin"):
        name = st.text_input("Name", key="signin_name")
        password = st.text_input("Password", type="password", key="signin_password")
        submitted = st.form_submit_button("Sign in")
    # the keys are listened for from here on: one pressed while the queue loads waits for it
    st.html(keys.script_tag({}), unsafe_allow_javascript=True)
    if submitted:
        try:
            user = accounts.authenticate(store, name, password)
        except InputError as exc:  # throttled
            st.error(f"{str(exc)[:1].upper()}{str(exc)[1:]}.")
            return
        if user is None:
            st.error("Wrong name or password.")
            return
        st.session_state["user"] = user
        st.session_state["signed_in_at"] = datetime.now(UTC)
        st.rerun()
