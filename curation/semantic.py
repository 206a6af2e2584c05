"""Instructions that say one thing in other words: embeddings for meaning, anchors for values.

An embedding (WordLlama's 256-dimension default model, which ships inside its wheel and
loads with no network) says two instructions *mean* the same kind of thing, but it barely
moves when one value changes: "How many events on Saturday?" and "... on Sunday?" are
0.93 apart in cosine, closer than most paraphrases. So two instructions are one meaning only
when, within one family, their cosine passes a threshold *and* their anchors agree: every
value-like word of one (a number, a time or date, a capitalised name that does not open a
sentence, a quoted phrase, a weekday, month or relative day, an e-mail) appears among the
words of the other. A paraphrase keeps its values and changes the wording; a hard negative
keeps the wording and changes a value.

What a paraphrase may word differently is not a changed value: an all-capitals abbreviation
("SMS", "DND", "Q") is vocabulary, not a name; a hyphenated anchor ("45-minute") is found by
the parts that carry its value ("45 min"); a relative day or time of day ("today", "tonight") that one instruction states and the
other leaves out entirely (it names no day or time of day at all) is the default the other
implies; and a surname one gives ("Priya Rossi") that the other leaves out, naming the same first
name with no other name after it ("Priya"), is the same person. Everything else one states must be
among the other's words: "Saturday" against "Sunday", "Priya Rossi" against "Priya Khan", a
list with one more item, each stays two meanings.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

Embed = Callable[[list[str]], np.ndarray]  # texts -> unit-length rows

_WORD = re.compile(r"[\w@.'+:/-]+")
_ABBREVIATION = re.compile(r"^[A-Z]{1,4}$")  # SMS, DND, Q: vocabulary, not a name
_RELATIVE = frozenset("today tonight tomorrow yesterday weekend morning afternoon evening noon midnight".split())
_DATE_WORDS = frozenset(
    "monday tuesday wednesday thursday friday saturday sunday today tomorrow tonight yesterday weekend "
    "january february march april may june july august september october november december "
    "morning afternoon evening noon midnight".split()
)


def _clean(word: str) -> str:
    return word.strip(".,:;!?'\"()[]").removesuffix("'s").lower()


@lru_cache(maxsize=1 << 16)  # a text's words and anchors are asked for in every pair it is in
def words(text: str) -> frozenset[str]:
    """The lower-case words of ``text`` (possessives and edge punctuation dropped)."""
    return frozenset(w for w in (_clean(t) for t in _WORD.findall(text or "")) if w)


def _opens_sentence(text: str, start: int) -> bool:
    """Whether the word at ``start`` opens a sentence: the text before it is nothing, or ends in ``.``, ``!``
    or ``?`` and blanks, or in blanks that hold a line break (``[.!?\\n]\\s*$`` read from the end)."""
    head = text[:start]
    body = head.rstrip()
    return not head or body[-1:] in (".", "!", "?") or "\n" in head[len(body):]


@lru_cache(maxsize=1 << 16)
def anchors(text: str) -> frozenset[str]:
    """The value-like words of ``text`` (see the module doc), lower case."""
    text = text or ""
    out: set[str] = set()
    for quoted in re.findall(r"\"([^\"]+)\"|“([^”]+)”", text):
        out.update(words(" ".join(quoted)))
    for m in _WORD.finditer(text):
        raw, word = m.group(0), _clean(m.group(0))
        if not word:
            continue
        opens_sentence = _opens_sentence(text, m.start())
        if (any(c.isdigit() for c in word) or "@" in word or word in _DATE_WORDS
                or (raw[:1].isupper() and not opens_sentence and word != "i"
                    and not _ABBREVIATION.match(raw.strip(".,:;!?'\"()[]")))):
            out.add(word)
    return frozenset(out)


@dataclass(frozen=True)
class Statement:
    """What an instruction states, for comparing its values with another's (see the module doc)."""

    anchors: frozenset[str]
    words: frozenset[str]  # with the parts of hyphenated words
    surnames: dict[str, str]  # surname -> the first name before it
    named_after: frozenset[str]  # words followed by a capitalised word ("priya" in "Priya Rossi")


def _is_name(raw: str) -> bool:
    word = raw.strip(".,:;!?'\"()[]").removesuffix("'s")
    return word[:1].isupper() and word.isalpha() and not _ABBREVIATION.match(word)


@lru_cache(maxsize=1 << 16)
def statement(text: str) -> Statement:
    raw = [m.group(0) for m in _WORD.finditer(text or "")]
    plain = words(text)
    parts = {p for w in plain if "-" in w for p in w.split("-") if p}
    surnames, named_after = {}, set()
    for first, second in zip(raw, raw[1:]):
        if _is_name(second):
            named_after.add(_clean(first))
            if _is_name(first):
                surnames[_clean(second)] = _clean(first)
    return Statement(anchors(text), plain | parts, surnames, frozenset(named_after))


def _value_parts(word: str) -> set[str]:
    """The parts of a hyphenated anchor that carry its value: those with digits ("45" of
    "45-minute"), else all ("wi", "fi")."""
    parts = {p for p in word.split("-") if p}
    return {p for p in parts if any(c.isdigit() for c in p)} or parts


def _unmatched(a: Statement, b: Statement) -> set[str]:
    """The anchors of ``a`` that ``b`` does not state (allowing the wordings of the module doc)."""
    left = {w for w in a.anchors - b.words if not ("-" in w and _value_parts(w) <= b.words)}
    if left & _RELATIVE and not b.words & _DATE_WORDS:
        left -= _RELATIVE
    return {w for w in left
            if not (w in a.surnames and a.surnames[w] in b.words and a.surnames[w] not in b.named_after)}


def anchors_agree(a: Statement, b: Statement) -> bool:
    """Each instruction states every value of the other."""
    return not _unmatched(a, b) and not _unmatched(b, a)


def same_meaning(texts: Sequence[str], families: Sequence[str], vectors: np.ndarray, pairs: np.ndarray,
                 threshold: float) -> np.ndarray:
    """Per pair (i, j) of ``pairs``: same family, cosine >= ``threshold``, anchors agree.

    ``vectors`` are unit-length rows aligned with ``texts``."""
    if not len(pairs):
        return np.zeros(0, dtype=bool)
    cos = np.concatenate([np.einsum("ij,ij->i", vectors[pairs[s:s + 100_000, 0]], vectors[pairs[s:s + 100_000, 1]])
                          for s in range(0, len(pairs), 100_000)])
    fam = np.asarray(families, dtype=object)
    ok = (cos >= threshold) & (fam[pairs[:, 0]] == fam[pairs[:, 1]])
    for k in np.flatnonzero(ok):
        ok[k] = anchors_agree(statement(texts[int(pairs[k, 0])]), statement(texts[int(pairs[k, 1])]))
    return ok


@lru_cache(maxsize=1)
def _wordllama():
    """WordLlama's default model, loaded from the files inside its wheel (no download, no cache).

    ``WordLlama.load()`` looks for the packaged tokenizer under ``tokenizer/`` while the wheel
    ships it under ``tokenizers/``, then tries Hugging Face; pointing its ``cache_dir`` at the
    package and disabling downloads makes it use both packaged files."""
    import wordllama  # deferred: 320 ms and its weights, only when semantic near duplicates run
    from wordllama import WordLlama  # deferred: as above

    return WordLlama.load(cache_dir=Path(wordllama.__file__).parent, disable_download=True)


def wordllama_embed(texts: list[str]) -> np.ndarray:
    """Unit-length WordLlama embeddings of ``texts`` (the model loads on first use, once per process)."""
    if not texts:
        return np.zeros((0, 256), dtype=np.float32)
    return np.asarray(_wordllama().embed(list(texts), norm=True), dtype=np.float32)
