"""What every export format shares: the running tally behind the manifest, tool schemas,
an episode's split and metadata, and its chat turns with the steps that get no loss."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from curation.conversation_rows import conversation_turns, recorded
from curation.export_source import masked_steps
from curation.formats.openai_chat import chat_turns
from curation.formats.views import step_from_row
from curation.masks import review_mask
from curation.selection import Decision, is_reference, problem_text
from generators.phone import openai_tool_schemas
from generators.phone.tools import META_SCHEMAS, TOOLS

HELD_OUT = ("challenge",)  # splits never written into training files
APPROVED_NAMED_MAX = 1000  # approved episodes left out are named up to this many (all are counted)


@dataclass
class Tally:
    """Running counts for the manifest."""

    unit: str = "episodes"
    seen: int = 0
    excluded: Counter = field(default_factory=Counter)
    excluded_by_split: dict[str, Counter] = field(default_factory=lambda: defaultdict(Counter))
    approved_left_out: list[dict[str, Any]] = field(default_factory=list)
    approved_left_out_count: int = 0
    by_split_family: dict[str, Counter] = field(default_factory=lambda: defaultdict(Counter))
    lineage: dict[str, set] = field(default_factory=lambda: defaultdict(set))
    pair_kinds: Counter = field(default_factory=Counter)
    pair_sources: Counter = field(default_factory=Counter)
    pair_levels: Counter = field(default_factory=Counter)
    masks: Counter = field(default_factory=Counter)
    inferred: Counter = field(default_factory=Counter)  # tool -> exported episodes whose schema of it was inferred
    failures: Counter = field(default_factory=Counter)  # failed episodes seen, by "side:category"
    on_episode: Callable[[], None] | None = None  # called once per episode read (a progress bar)
    rewards: dict[str, Any] = field(default_factory=dict)  # verl: what empty, no-op, random, reference rollouts earn

    def took(self, split: str, ep: Mapping[str, Any], review: Decision | None = None) -> None:
        self.by_split_family[split][ep["family"]] += 1
        if ep.get("task_tool_schemas_inferred"):
            self.inferred["(episodes)"] += 1
            self.inferred.update(ep["task_tool_schemas_inferred"])
        for key, col in (("rounds", "round_id"), ("policies", "policy"), ("families", "family"), ("seeds", "seed")):
            if ep.get(col) is not None:
                self.lineage[key].add(ep[col])
        if review is not None:
            self.lineage["reviewers"].add(review.reviewer)

    def left_out(self, ep: Mapping[str, Any], review: Decision | None, reason: str, problem: str = "") -> None:
        """Count one episode (or task) left out, by reason and split; name it when people
        approved it (a held-out split is by design, so it is counted, not named)."""
        self.excluded[reason] += 1
        self.excluded_by_split[split_of(ep)][reason] += 1
        if getattr(review, "decision", None) == "approve" and reason != "held_out_split":
            self.name_approved(ep, reason, problem)

    def count_failure(self, ep: Mapping[str, Any]) -> None:
        """Count one episode read (every format reads each once) and why it failed ("side:category"), if it did
        (a reference demonstration's failure is no failure of the model's)."""
        if self.on_episode is not None:
            self.on_episode()
        if ep.get("failure_side") and not is_reference(ep):
            self.failures[f"{ep['failure_side']}:{ep.get('failure_category') or 'unclassified'}"] += 1

    def admit(self, ep: Mapping[str, Any], review: Decision | None, why: str | None) -> bool:
        """Count one episode seen (and why it failed, if it did); True if it goes on, else it is counted as left out: a
        held-out split first, then ``why`` (the format's own reason, or None)."""
        self.seen += 1
        self.count_failure(ep)
        if split_of(ep) in HELD_OUT:
            self.left_out(ep, review, "held_out_split")
            return False
        if why:
            self.left_out(ep, review, why, problem_text(why))
            return False
        return True

    def name_approved(self, ep: Mapping[str, Any], reason: str, problem: str = "") -> None:
        """Name an approved episode that does not reach the export, with its first problem."""
        self.approved_left_out_count += 1
        if len(self.approved_left_out) < APPROVED_NAMED_MAX:
            self.approved_left_out.append({"episode_id": ep.get("episode_id"), "task_id": ep.get("task_id"),
                                           "reason": reason, "problem": problem or reason})

    def lineage_summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key in ("rounds", "policies", "families", "reviewers"):
            out[key] = sorted(self.lineage.get(key, set()))
        seeds = sorted(self.lineage.get("seeds", set()))
        out["seeds"] = seeds if len(seeds) <= 1000 else {"count": len(seeds), "min": seeds[0], "max": seeds[-1]}
        return out

    def mixing_weights(self) -> dict[str, dict[str, float]]:
        out = {}
        for split, fams in sorted(self.by_split_family.items()):
            n = sum(fams.values())
            out[split] = {f: round(c / n, 4) for f, c in sorted(fams.items())}
        return out


class Tools:
    def __init__(self) -> None:
        self.cache: dict[tuple[str, ...], list[dict[str, Any]]] = {}

    def __call__(self, names, own_schemas: str | None = None) -> list[dict[str, Any]]:
        """The task's own schemas (imported tasks) when it has them, else our phone tools' schemas."""
        if own_schemas:
            return with_meta(json.loads(own_schemas))
        key = tuple(names or ())
        if key not in self.cache:
            known = [n for n in key if n in TOOLS or n in META_SCHEMAS]
            unknown = [{"type": "function", "function": {"name": n, "parameters": {"type": "object"}}}
                       for n in key if n not in known]
            self.cache[key] = unknown + openai_tool_schemas(known)
        return self.cache[key]


def with_meta(schemas: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``schemas`` plus finish and ask_user when missing: every exported episode ends with one of them."""
    names = {t.get("function", {}).get("name") for t in schemas}
    return schemas + [{"type": "function", "function": {"name": n, **m}} for n, m in META_SCHEMAS.items()
                      if n not in names]


def split_of(ep: Mapping[str, Any]) -> str:
    return ep.get("task_split") or ep.get("split") or "train"


def meta_of(ep: Mapping[str, Any]) -> dict[str, Any]:
    return {k: ep.get(k) for k in ("episode_id", "task_id", "family", "template", "round_id", "policy")} | {"split": split_of(ep)}


def turns_of(ep, step_rows, review, scrubber):
    """(chat turns, step indices with no loss): the heuristics' marked steps, and a
    reviewer's first wrong step with every later one (only it when recovered)."""
    steps = [step_from_row(r) for r in step_rows]
    by_review, _ = review_mask(review, (s.index for s in steps))
    masked = masked_steps(ep) | by_review
    messages = recorded(ep)  # an imported conversation comes out as recorded
    turns, masked = conversation_turns(messages, masked) if messages else (chat_turns(ep["instruction"], steps), masked)
    return scrubbed(turns, scrubber), masked


def scrubbed(turns, scrubber):
    """``turns`` scrubbed as one record (as they are when ``scrubber`` is None)."""
    if scrubber is None:
        return turns
    rs = scrubber.record()
    return [(rs.value(m), i) for m, i in turns]


def trainable(turns, masked: set[int]) -> bool:
    """Whether some agent turn gets loss (a row with none teaches nothing)."""
    return any(m["role"] == "assistant" and i not in masked for m, i in turns)
