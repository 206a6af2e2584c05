"""Sign-in: nobody reviews anonymously."""

from __future__ import annotations

import streamlit as st

from review_app import accounts
from warehouse.store import Store


def render(store: Store) -> None:
    st.title("Trajectory review")
    st.caption("Sign in with your reviewer account (created with `flywheel reviewer add NAME`).")
    with st.form("signin"):
        name = st.text_input("Name", key="signin_name")
        password = st.text_input("Password", type="password", key="signin_password")
        submitted = st.form_submit_button("Sign in")
    if submitted:
        user = accounts.authenticate(store, name, password)
        if user is None:
            st.error("Wrong name or password.")
            return
        st.session_state["user"] = user
        st.rerun()
