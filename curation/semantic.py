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
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import lru_cache

import numpy as np

Embed = Callable[[list[str]], np.ndarray]  # texts -> unit-length rows

_WORD = re.compile(r"[\w@.'+:/-]+")
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
                or (raw[:1].isupper() and not opens_sentence and word != "i")):
            out.add(word)
    return frozenset(out)


def anchors_agree(a_anchors: frozenset[str], a_words: frozenset[str], b_anchors: frozenset[str],
                  b_words: frozenset[str]) -> bool:
    """Every anchor of each instruction is a word of the other."""
    return a_anchors <= b_words and b_anchors <= a_words


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
    memo: dict[int, tuple[frozenset[str], frozenset[str]]] = {}

    def aw(i: int) -> tuple[frozenset[str], frozenset[str]]:
        if i not in memo:
            memo[i] = (anchors(texts[i]), words(texts[i]))
        return memo[i]

    for k in np.flatnonzero(ok):
        i, j = int(pairs[k, 0]), int(pairs[k, 1])
        ok[k] = anchors_agree(*aw(i), *aw(j))
    return ok


@lru_cache(maxsize=1)
def _wordllama():
    """WordLlama's default model, loaded from the files inside its wheel (no download, no cache).

    ``WordLlama.load()`` looks for the packaged tokenizer under ``tokenizer/`` while the wheel
    ships it under ``tokenizers/``, then tries Hugging Face; pointing its ``cache_dir`` at the
    package and disabling downloads makes it use both packaged files."""
    from pathlib import Path

    import wordllama
    from wordllama import WordLlama

    return WordLlama.load(cache_dir=Path(wordllama.__file__).parent, disable_download=True)


def wordllama_embed(texts: list[str]) -> np.ndarray:
    """Unit-length WordLlama embeddings of ``texts`` (the model loads on first use, once per process)."""
    if not texts:
        return np.zeros((0, 256), dtype=np.float32)
    return np.asarray(_wordllama().embed(list(texts), norm=True), dtype=np.float32)
