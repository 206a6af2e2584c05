"""The preference export: one task's rollouts at a time, their roles, then episode and/or
step pairs (see :mod:`curation.formats.dpo`), each written as one scrubbed record."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from dataclasses import replace

import duckdb

from curation.conversation_rows import conversation_problem, conversation_tools, recorded
from curation.export_common import Tally, Tools, split_of, turns_of
from curation.export_source import episodes_with_steps, masked_steps
from curation.formats.dpo import Pair, Rollout, episode_pairs, step_pairs, to_dpo, to_step_dpo
from curation.formats.messages import template_messages
from curation.masks import review_mask
from curation.pii import Scrubber
from curation.selection import Decision, Role, preference_role, problem_text


def _turns(r: Rollout) -> tuple:
    if r.turns:
        return r.turns
    ep, review, step_rows = r.item
    return tuple(turns_of(ep, step_rows, review, None)[0])


def _rollout(ep, step_rows, review, role: Role, with_turns: bool) -> Rollout:
    """The rollout with its turns when step pairs need them (episode pairs build them only once paired)."""
    no_loss = masked_steps(ep) | review_mask(review, (row["index"] for row in step_rows))[0]  # as SFT masks them
    r = Rollout((ep, review, step_rows), role.side, role.source, role.kind, (),
                getattr(review, "first_wrong_step", None), bool(getattr(review, "recovered", False)),
                frozenset(no_loss))
    return replace(r, turns=_turns(r)) if with_turns else r


def _record(pair: Pair, level: str, tools: Tools, scrubber: Scrubber | None) -> tuple[str, dict]:
    c_ep, r_ep = pair.chosen.item[0], pair.rejected.item[0]
    chosen = [m for m, _ in template_messages(list(_turns(pair.chosen)))]  # the one message schema
    rejected = [m for m, _ in template_messages(list(_turns(pair.rejected)))]
    if scrubber is not None:  # one record scrubbed as a whole, so both sides use the same placeholders
        rs = scrubber.record()
        chosen, rejected = rs.value(chosen), rs.value(rejected)
    meta = {"task_id": c_ep["task_id"], "chosen_id": c_ep["episode_id"], "rejected_id": r_ep["episode_id"],
            "kind": pair.kind, "source": pair.source, "level": level, "family": c_ep["family"],
            "template": c_ep["template"], "split": split_of(c_ep)}
    schemas = conversation_tools(c_ep, tools) if recorded(c_ep) else tools(c_ep["task_tools"], c_ep.get("task_tool_schemas"))
    if level == "step":
        meta["divergence_step"] = pair.chosen.turns[pair.at][1]
        return meta["split"], to_step_dpo(chosen, rejected, pair.at, schemas, meta)
    return meta["split"], to_dpo(chosen, rejected, schemas, meta)


def dpo_rows(con: duckdb.DuckDBPyConnection, rounds: list[str], decisions: Mapping[str, Decision],
             include_verified: bool, tally: Tally, scrubber: Scrubber | None,
             level: str = "episode") -> Iterator[tuple[str, dict]]:
    """(split, pair record) for every task of ``rounds``; ``level``: episode, step or both."""
    tools = Tools()
    for _, group in itertools.groupby(episodes_with_steps(con, rounds), key=lambda pair: pair[0]["task_id"]):
        rollouts: list[Rollout] = []
        for ep, step_rows in group:
            review = decisions.get(ep["episode_id"])
            role = preference_role(ep, review, include_verified=include_verified)
            unusable = "invalid_record" if recorded(ep) and conversation_problem(ep) else None  # arguments not JSON
            if tally.admit(ep, review, role if isinstance(role, str) else unusable):
                rollouts.append(_rollout(ep, step_rows, review, role, level != "episode"))
        pairs: list[tuple[Pair, str]] = []
        if level in ("episode", "both"):
            pairs += [(p, "episode") for p in episode_pairs(rollouts)]
        if level in ("step", "both"):
            pairs += [(p, "step") for p in step_pairs(rollouts)]
        pairs.sort(key=lambda pair: pair[0].source != "human")  # people's pairs first, whatever their level
        used = {id(r) for p, _ in pairs for r in (p.chosen, p.rejected)}
        for r in rollouts:
            if id(r) not in used:
                tally.left_out(r.item[0], r.item[1], "no_counterpart", problem_text("no_counterpart"))
        for pair, lvl in pairs:
            split, record = _record(pair, lvl, tools, scrubber)
            tally.pair_kinds[pair.kind] += 1
            tally.pair_sources[pair.source] += 1
            tally.pair_levels[lvl] += 1
            tally.took(split, pair.chosen.item[0], pair.chosen.item[1])  # the family mix counts a pair once
            if pair.rejected.item[1] is not None:
                tally.lineage["reviewers"].add(pair.rejected.item[1].reviewer)
            yield split, record
