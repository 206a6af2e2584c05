"""Phone screens as images the app serves: each SVG goes into Streamlit's media file manager,
which serves it at ``/media/<id>.svg`` for as long as the page shows it, and an ``<img>`` points
at that URL (``st.html`` strips inline SVG, so a screen drawn inline never reaches a reviewer)."""

from __future__ import annotations

from html import escape

import streamlit as st
from streamlit.runtime import get_instance

from review_app.plain_text import md
from review_app.screens import Screen


def screen_url(svg: str, coordinates: str) -> str:
    """The URL the app serves ``svg`` at; ``coordinates`` names the place on the page it is shown
    (a new screen there replaces the old one, which the app then stops serving)."""
    return get_instance().media_file_mgr.add(svg.encode("utf-8"), "image/svg+xml", coordinates)


def show_screens(screens: list[Screen], *, place: str, width: int = 220) -> None:
    """The screens side by side, each captioned, or the note saying why one is missing."""
    cols = st.columns(len(screens))
    for col, screen in zip(cols, screens, strict=True):
        with col:
            if screen.svg:
                url = screen_url(screen.svg, f"screen-{place}-{screen.which}")
                st.markdown(f'<img class="phone-screen" data-screen="{screen.which}" src="{escape(url)}" '
                            f'alt="{escape(screen.caption)}" style="width:{width}px;max-width:100%">',
                            unsafe_allow_html=True)
            st.caption(md(screen.caption) + (f" · {md(screen.note)}" if screen.note else ""))
