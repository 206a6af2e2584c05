"""Collected episodes into the warehouse, one unit at a time, and the rule for episodes the model
endpoint cut off (its call still failed after every retry)."""

from __future__ import annotations

from warehouse import state
from warehouse.contract import GAVE_UP_KEY, EpisodeRecord
from warehouse.errors import EndpointGaveUp
from warehouse.store import Store


def commit_episodes(store: Store, round_id: str, key: str, records: list[EpisodeRecord]) -> int:
    """Episodes, steps and outcomes of one unit, written and recorded at once; the number of cut-off
    episodes kept (as ``endpoint_error``) because they were cut off at the same step as in the last run.

    A unit holding an episode the endpoint cut off somewhere new is not committed: such an episode says
    nothing of the agent, and a rerun replays its journaled replies and asks only for the rest
    (EndpointGaveUp says so in one line). Where each was cut off is journaled, so an episode cut off
    again at the same step is kept: a request that always fails (a prompt too long for the server's
    time) cannot hold a round back for good."""
    cut = [r for r in records if r.outcome.termination == "endpoint_error"]
    if cut:
        places = [(f"{GAVE_UP_KEY}{r.episode.episode_id}", len(r.steps)) for r in cut]
        with store.session() as s:
            before = {(k, i) for k, _ in places for i in state.replies_at(session=s, round_id=round_id, key=k)}
            new = [(k, i) for k, i in places if (k, i) not in before]
            if new:
                details = {f"{GAVE_UP_KEY}{r.episode.episode_id}": r.outcome.failure.detail if r.outcome.failure
                           else "" for r in cut}
                state.append_replies(session=s, round_id=round_id, replies=[(k, i, {"detail": details[k]})
                                                                            for k, i in new])
        if new:
            last = next((r.outcome.failure.detail for r in reversed(cut) if r.outcome.failure), "")
            raise EndpointGaveUp(
                f"the model endpoint failed {len(cut)} of {len(records)} episodes of {round_id}/{key} after every retry"
                + (f" ({last.removeprefix('gave up after retries: ')})" if last else "")
                + "; not committed, replies so far kept: rerun to go on (an episode failing at the same step "
                "again is then kept as endpoint_error)")
    store.commit_unit(round_id, key, {"episodes": [r.episode for r in records],
                                      "steps": [s for r in records for s in r.steps],
                                      "outcomes": [r.outcome for r in records]})
    return len(cut)
