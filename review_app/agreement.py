"""Overlap, agreement and the final word on an episode. Pure functions.

Which episodes go to more than one reviewer is decided from the episode id alone (the
first 32 bits of its MD5 against the configured share), so Python and DuckDB agree on
it, it never changes when more episodes arrive, and no assignment table can go stale.

An episode's status, from the latest decision of each reviewer:
``unreviewed`` (nobody yet), ``partial`` (fewer reviewers than required, all agreeing),
``disputed`` (reviewers disagree: the adjudication queue), ``decided`` (enough
reviewers, all agreeing), ``adjudicated`` (a lead settled it; that decision counts).
"""

from __future__ import annotations

import hashlib
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import combinations

_SPACE = 2**32


def in_overlap(episode_id: str, share: float) -> bool:
    """Whether this episode needs more than one reviewer."""
    return int(hashlib.md5(episode_id.encode("utf-8")).hexdigest()[:8], 16) < share * _SPACE


@dataclass(frozen=True)
class Overlap:
    """Which share of episodes needs several reviewers, and how many."""

    share: float = 0.1
    reviewers: int = 2

    @classmethod
    def from_settings(cls, settings) -> Overlap:
        """The overlap a deployment configured (Settings.review_overlap, review_overlap_reviewers)."""
        return cls(settings.review_overlap, settings.review_overlap_reviewers)


@dataclass(frozen=True)
class Vote:
    episode_id: str
    reviewer: str
    decision: str
    family: str = ""


@dataclass(frozen=True)
class Resolution:
    status: str  # unreviewed, partial, disputed, decided, adjudicated
    decision: str | None  # the decision that counts (decided / adjudicated), else None
    reviewers: tuple[str, ...]


def resolve(votes: dict[str, str], required: int, adjudicated: str | None = None) -> Resolution:
    """The status of one episode from {reviewer: latest decision}."""
    who = tuple(sorted(votes))
    if adjudicated is not None:
        return Resolution("adjudicated", adjudicated, who)
    if not votes:
        return Resolution("unreviewed", None, who)
    if len(set(votes.values())) > 1:
        return Resolution("disputed", None, who)
    decision = next(iter(votes.values()))
    if len(votes) < required:
        return Resolution("partial", None, who)
    return Resolution("decided", decision, who)


def cohen_kappa(a: list[str], b: list[str]) -> float | None:
    """Cohen's kappa of two raters over the same items; None with no items.

    With a single category used by both (expected agreement 1) kappa is 1 if they
    agree everywhere, which they then do."""
    if len(a) != len(b):
        raise ValueError("both raters must rate the same items")
    n = len(a)
    if n == 0:
        return None
    observed = sum(x == y for x, y in zip(a, b, strict=True)) / n
    ca, cb = Counter(a), Counter(b)
    expected = sum(ca[k] * cb[k] for k in set(ca) | set(cb)) / (n * n)
    if expected >= 1.0:
        return 1.0
    return (observed - expected) / (1.0 - expected)


@dataclass(frozen=True)
class PairAgreement:
    group: str  # "ann & bob", or a family id
    items: int
    agreement: float  # share of items with the same decision
    kappa: float | None


def _pairs_by_episode(votes: Iterable[Vote]) -> dict[str, dict[str, Vote]]:
    by_ep: dict[str, dict[str, Vote]] = defaultdict(dict)
    for v in votes:
        by_ep[v.episode_id][v.reviewer] = v  # later votes of a reviewer replace earlier ones
    return by_ep


def agreement_by_pair(votes: Iterable[Vote]) -> list[PairAgreement]:
    """Kappa for each pair of reviewers over the episodes both decided."""
    pairs: dict[tuple[str, str], tuple[list[str], list[str]]] = defaultdict(lambda: ([], []))
    for by_rev in _pairs_by_episode(votes).values():
        for r1, r2 in combinations(sorted(by_rev), 2):
            xs, ys = pairs[(r1, r2)]
            xs.append(by_rev[r1].decision)
            ys.append(by_rev[r2].decision)
    return [_agreement(f"{r1} & {r2}", xs, ys) for (r1, r2), (xs, ys) in sorted(pairs.items())]


def agreement_by_family(votes: Iterable[Vote]) -> list[PairAgreement]:
    """Kappa per family over every pair of decisions on the same episode.

    Each episode with two or more reviewers contributes its pairs of decisions; the
    first and second rater are taken in name order (kappa is symmetric in them)."""
    fam: dict[str, tuple[list[str], list[str]]] = defaultdict(lambda: ([], []))
    for by_rev in _pairs_by_episode(votes).values():
        for r1, r2 in combinations(sorted(by_rev), 2):
            xs, ys = fam[by_rev[r1].family]
            xs.append(by_rev[r1].decision)
            ys.append(by_rev[r2].decision)
    return [_agreement(f, xs, ys) for f, (xs, ys) in sorted(fam.items())]


def _agreement(group: str, xs: list[str], ys: list[str]) -> PairAgreement:
    same = sum(x == y for x, y in zip(xs, ys, strict=True))
    return PairAgreement(group, len(xs), same / len(xs) if xs else 0.0, cohen_kappa(xs, ys))
