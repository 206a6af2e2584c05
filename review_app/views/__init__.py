"""Thin Streamlit views: read through review_app's logic modules, render, write back."""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from review_app.accounts import User
from review_app.data import Overlap
from review_app.plain_text import clip, md, size_note
from warehouse.store import Store


@dataclass
class Ctx:
    """What every view needs: the store, the signed-in user and the overlap rule."""

    store: Store
    user: User
    overlap: Overlap


def long_text(text: str, *, key: str) -> None:
    """Untrusted ``text`` shown as text (never Markdown); past :data:`PREVIEW_CHARS` only its start,
    with a toggle (keyed ``key``) that shows all of it, so a huge message does not slow the page."""
    shown, cut = clip(text)
    if cut and st.toggle(f"Show all ({size_note(text)})", key=key):
        st.text(text)
    else:
        st.markdown(md(shown))
