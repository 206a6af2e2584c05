"""Untrusted text through review_app.plain_text: shown as exactly its characters, with no Markdown
syntax left to act (checked by CommonMark's own reading of what md() makes)."""

from __future__ import annotations

import re

import pytest

from review_app.plain_text import as_text, clip, md, md_line
from tests.fuzz import HOSTILE_STRINGS

SAMPLES = [
    "![i](http://127.0.0.1:9/x.png)", "[a](javascript:alert(1))", "<img src=x onerror=alert(1)>",
    "<http://evil.example/>", "www.evil.example", ":red[red] :material/home: :smile:", "$x^2$", "**b** _i_ `c`",
    "# head\n- item\n> quote\n    code", "a\\b\\\\c", "&lt;&amp;", "ünï 🚀 \u202e", "line1\r\nline2\rline3\n\nx",
    *HOSTILE_STRINGS,
]


@pytest.mark.parametrize("text", SAMPLES)
def test_md_shows_exactly_the_text_and_leaves_no_syntax(text):
    out = md(text)
    assert as_text(out) == re.sub(r"\r\n?", "\n", text)
    # no syntax character is left unescaped: nothing can open a link, image, tag, directive or math
    assert not re.search(r"(?<!\\)[!\[\]<>():`*_$&]", re.sub(r"\\\\", "", out))


def test_markdown_renders_the_escaped_text_as_plain_text_with_no_link_or_image():
    markdown = pytest.importorskip("markdown_it")
    for text in SAMPLES[:10]:
        html = markdown.MarkdownIt("commonmark", {"html": True, "linkify": False}).render(md(text))
        assert "<img" not in html and "<a " not in html and "<script" not in html and "<code" not in html, html


def test_long_text_is_clipped_with_a_mark_and_one_line_text_has_no_breaks():
    assert clip("x" * 10, 10) == ("x" * 10, False)
    assert clip("x" * 11, 10) == ("x" * 9 + "…", True)
    assert as_text(md_line("a\nb\t c " * 100, 20)) == ("a b c " * 4)[:19] + "…"
    assert as_text(12) == 12
