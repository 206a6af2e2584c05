"""Untrusted text (imported messages, tool results, family names, reviewers' notes) made safe for
Streamlit's Markdown elements (st.markdown, st.caption, st.error, expander labels...): shown
character for character, never as Markdown, so no image, link, HTML, colour or emoji directive in
the data does anything. Pure: strings in, strings out."""

from __future__ import annotations

import re

# Every ASCII punctuation character may be backslash-escaped in CommonMark (and then is only that
# character): escaping all of them leaves no syntax at all, Streamlit's :color[...] and
# :material/icon: directives and $math$ included.
_PUNCT = re.compile(r"[!-/:-@\[-`{-~]")
_NEWLINES = re.compile(r"\r\n?|\n")
# GFM links bare URLs and e-mail addresses in text after escapes are resolved, so escaping cannot
# stop them: an invisible WORD JOINER goes where the patterns need two characters side by side
# (``:`` and ``//``, ``www`` and ``.``, ``@`` and what follows, ``mailto:`` and ``xmpp:``).
_JOINER = "\u2060"
_AUTOLINK = re.compile(r"(?<=:)(?=//)|(?<=www)(?=\.)|(?<=@)|(?<=mailto:)|(?<=xmpp:)", re.IGNORECASE)

PREVIEW_CHARS = 3000  # how much of a long text a view shows until asked for all of it


def md(value: object) -> str:
    """``value`` as Markdown that shows exactly its text (with invisible word joiners that keep URLs
    from becoming links); line breaks are kept as line breaks."""
    text = _AUTOLINK.sub(_JOINER, str(value))
    text = _PUNCT.sub(lambda m: "\\" + m.group(0), text)
    return _NEWLINES.sub("  \n", text)


def md_line(value: object, limit: int = 200) -> str:
    """``value`` on one line (breaks as spaces), cut to ``limit`` characters, as Markdown text."""
    return md(clip(" ".join(str(value).split()), limit)[0])


def clip(text: str, limit: int = PREVIEW_CHARS) -> tuple[str, bool]:
    """The first ``limit`` characters of ``text`` and whether anything was cut off ("…" marks it)."""
    if len(text) <= limit:
        return text, False
    return text[: max(0, limit - 1)] + "…", True


def size_note(text: str) -> str:
    """How long a text is, said as a reader would: 204,800 characters."""
    return f"{len(text):,} characters"


def as_text(markdown: object) -> object:
    """What :func:`md` made, back as the text it shows (tests read Streamlit's elements with it);
    anything but a string is returned as it is."""
    if not isinstance(markdown, str):
        return markdown
    text = re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", markdown.replace("  \n", "\n"))
    return text.replace(_JOINER, "")
