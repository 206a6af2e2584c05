"""Curation checks: pure functions that turn records into marks. Nothing is deleted."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from warehouse.contract import CurationMark, Episode, Outcome, Step
from warehouse.ids import canonical_json, digest

_SPACE = re.compile(r"\s+")


def normalise_text(text: str) -> str:
    return _SPACE.sub(" ", text.strip().lower())


def _normalise_value(value):
    if isinstance(value, str):
        return normalise_text(value)
    if isinstance(value, dict):
        return {k: _normalise_value(v) for k, v in sorted(value.items())}
    if isinstance(value, list):
        return [_normalise_value(v) for v in value]
    return value


def exact_key(episode: Episode, steps: list[Step], outcome: Outcome) -> str:
    """Exact-duplicate key: normalised intent, the calls with normalised arguments,
    and the final state digest."""
    calls = [
        [s.action.kind, s.action.tool, _normalise_value(s.action.arguments)]
        for s in sorted(steps, key=lambda s: s.index)
        if s.actor == "planner"
    ]
    return digest(canonical_json([normalise_text(episode.instruction), calls, outcome.final_state_hash]), 24)


def verified_mark(episode: Episode, outcome: Outcome) -> CurationMark:
    """Did the verifier pass this episode?"""
    if outcome.success:
        reason = "every hard requirement passed"
    else:
        failed = [r.id for r in outcome.requirement_results if not r.passed]
        reason = f"failed: {', '.join(failed) or outcome.termination}"
        if outcome.minefields_hit:
            reason += f"; minefields: {', '.join(outcome.minefields_hit)}"
    return CurationMark(
        episode_id=episode.episode_id,
        round_id=episode.round_id,
        check="verified",
        mark="verified" if outcome.success else "not_verified",
        passed=outcome.success,
        reason=reason,
        detail={"progress": outcome.progress, "termination": outcome.termination},
    )


@dataclass
class DuplicateIndex:
    """Exact keys seen so far (from earlier rounds and earlier in this one)."""

    first: dict[str, str]

    def mark(self, episode: Episode, key: str) -> CurationMark:
        owner = self.first.setdefault(key, episode.episode_id)
        dup = owner != episode.episode_id
        return CurationMark(
            episode_id=episode.episode_id,
            round_id=episode.round_id,
            check="exact_duplicate",
            mark="duplicate" if dup else "unique",
            passed=not dup,
            reason=f"same intent, calls and final state as {owner}" if dup else "",
            detail={"key": key, "duplicate_of": owner if dup else None},
        )


def curate(records: Iterable[tuple[Episode, list[Step], Outcome]], index: DuplicateIndex) -> list[CurationMark]:
    """Marks for each episode: verified / not verified, and exact duplicates."""
    marks: list[CurationMark] = []
    for episode, steps, outcome in records:
        marks.append(verified_mark(episode, outcome))
        marks.append(index.mark(episode, exact_key(episode, steps, outcome)))
    return marks
