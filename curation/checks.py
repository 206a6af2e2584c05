"""The exact-duplicate key of one episode, from its records.

The per-record reference definition; the cascade computes the same key on columns
(:func:`curation.signatures.exact_keys`) and a test keeps the two equal."""

from __future__ import annotations

from curation.signatures import normalise_text, normalise_value
from warehouse.contract import Episode, Outcome, Step
from warehouse.ids import canonical_json, digest


def exact_key(episode: Episode, steps: list[Step], outcome: Outcome) -> str:
    """Exact-duplicate key: normalised intent, the calls with normalised arguments,
    and the final state digest."""
    calls = [
        # a text turn (``message``) is what it says; the user's count too: an import's user says what it wants
        [s.action.kind, s.action.tool,
         normalise_value({"text": s.action.text} if s.action.kind == "message" else s.action.arguments)]
        for s in sorted(steps, key=lambda s: s.index)
        if s.actor == "planner" or (s.actor == "user" and s.action.kind == "message")
    ]
    return digest(canonical_json([normalise_text(episode.instruction), calls, outcome.final_state_hash]), 24)
