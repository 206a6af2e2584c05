"""A small real round (tasks, episodes, steps, outcomes, marks) and reviewer accounts for review tests."""

from __future__ import annotations

from datetime import UTC, datetime

from flows.stages import curate_round
from generators.collect import run_episode
from generators.phone.families import FAMILIES
from generators.policies import ScriptedPolicy
from review_app import accounts
from warehouse import state
from warehouse.store import Store

PASSWORD = "correct horse"


def make_round(store: Store, n_tasks: int = 4, families: tuple[str, ...] = ("F01", "F02")) -> list[str]:
    """Commit one round of real episodes with curation marks; return the episode ids."""
    with store.session() as s:
        weights = {f: round(1 / len(families), 6) for f in families}
        rnd = state.open_round(session=s, requested_episodes=n_tasks, seed=1, plan={"weights": weights})
    tasks = [FAMILIES[families[i % len(families)]].make_task(i) for i in range(n_tasks)]
    policy = ScriptedPolicy(seed=3, error_rates={"tool_use": 0.5})
    recs = [
        run_episode(t, policy, rollout=0, round_id=rnd.id, batch_id="b", created_at=datetime.now(UTC)) for t in tasks
    ]
    store.commit_unit(rnd.id, "batch-0000", {"tasks": tasks})
    store.commit_unit(
        rnd.id,
        "s00000",
        {
            "episodes": [r.episode for r in recs],
            "steps": [s for r in recs for s in r.steps],
            "outcomes": [r.outcome for r in recs],
        },
    )
    curate_round(store, rnd.id)  # the real cascade, as a round runs it
    with store.session() as s:
        state.save_batch(session=s, batch=state.Batch(id=f"{rnd.id}-b0", round_id=rnd.id, tasks_tried=n_tasks + 1, tasks_kept=n_tasks))
    return [r.episode.episode_id for r in recs]


def make_accounts(store: Store) -> None:
    """ann and bob (reviewers) and lea (lead), each with the e-mail NAME@example.com of their Label
    Studio user."""
    accounts.add_reviewer(store, "ann", "reviewer", PASSWORD, email="ann@example.com")
    accounts.add_reviewer(store, "bob", "reviewer", PASSWORD, email="bob@example.com")
    accounts.add_reviewer(store, "lea", "lead", PASSWORD, email="lea@example.com")


def airline_conversation() -> dict:
    """A multi-turn support conversation in OpenAI chat form (the shape public benchmarks'
    airline conversations are exported in): the user asks, the agent looks things up (one
    lookup fails), asks back, the user answers, the agent changes the booking and closes."""
    import json

    def call(cid, name, args):
        return {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}

    def tool(cid, body):
        return {"role": "tool", "tool_call_id": cid, "content": json.dumps(body)}

    return {
        "messages": [
            {"role": "system", "content": "You are an airline support agent."},
            {"role": "user", "content": "Hi, I need to move my flight to Boston to a day later."},
            {"role": "assistant", "content": "Let me find your booking.",
             "tool_calls": [call("c1", "find_reservation", {"name": "Mia Chen"})]},
            tool("c1", {"ok": False, "error": {"code": "NOT_FOUND", "message": "no reservation for 'Mia Chen'"}}),
            {"role": "assistant", "content": None,
             "tool_calls": [call("c2", "find_reservation", {"name": "Mia Chen", "fuzzy": True})]},
            tool("c2", {"ok": True, "data": [{"id": "R7", "flight": "UA12", "to": "BOS", "date": "2026-12-03"},
                                              {"id": "R9", "flight": "UA88", "to": "BOS", "date": "2026-12-20"}]}),
            {"role": "assistant", "content": "I see two bookings to Boston, on Dec 3 and Dec 20. Which one?"},
            {"role": "user", "content": "The one on the 3rd, please."},
            {"role": "assistant", "content": None,
             "tool_calls": [call("c3", "change_flight", {"reservation": "R7", "date": "2026-12-04"})]},
            tool("c3", {"ok": True, "data": {"reservation": "R7", "date": "2026-12-04", "fee": 0}}),
            {"role": "assistant", "content": "Done: your Dec 3 flight to Boston is now on Dec 4, no fee."},
            {"role": "user", "content": "Thanks!"},
            {"role": "assistant", "content": "You're welcome, have a good trip."},
        ],
        "tools": [{"type": "function", "function": {"name": n, "parameters": {"type": "object", "properties": {}}}}
                  for n in ("find_reservation", "change_flight")],
        "reward": 1.0,
        "task": {"family": "airline", "template": "change_date"},
    }


def import_conversations(store: Store, tmp_path) -> str:
    """Import the airline conversation as a round of its own; its episode id."""
    import json

    from flows.pipeline import import_prepared
    from flows.stages.importing import prepare_import

    path = tmp_path / "airline.jsonl"
    path.write_text(json.dumps(airline_conversation()) + "\n")
    prepared = prepare_import(path, "openai-chat")
    import_prepared(store, prepared)
    return next(iter(prepared.episodes))


LONG_FAILED = (7, 23, 41)  # the calls of long_conversation that fail


def long_conversation(n_calls: int = 60) -> dict:
    """One user request worked through in ``n_calls`` tool calls (a long single-user episode):
    unicode, newlines and nested JSON in the arguments; the calls in LONG_FAILED fail."""
    import json

    messages = [{"role": "system", "content": "You tidy a photo library."},
                {"role": "user", "content": "Tag every photo from the Zürich trip 📷 with its place,\nplease."}]
    for i in range(n_calls):
        name = ("photos_tag", "photos_search", "album_add")[i % 3]
        args = {"photo": f"p-{i:03d}", "tag": {"place": "Zürich — Üetliberg", "note": f"line 1\nline 2 #{i}"}}
        body = ({"ok": False, "error": {"code": "NOT_FOUND", "message": f"no photo p-{i:03d} «gone»"}}
                if i in LONG_FAILED else {"ok": True, "data": {"photo": f"p-{i:03d}", "tags": [args["tag"]]}})
        messages.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}]})
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": json.dumps(body)})
    messages.append({"role": "assistant", "content": "All photos are tagged."})
    return {"messages": messages, "reward": 0.0, "task": {"family": "photos", "template": "tag_trip"},
            "tools": [{"type": "function", "function": {"name": n, "parameters": {"type": "object", "properties": {}}}}
                      for n in ("photos_tag", "photos_search", "album_add")]}


def import_long_episode(store: Store, tmp_path, n_calls: int = 60) -> str:
    """Import long_conversation as a round of its own; its episode id."""
    import json

    from flows.pipeline import import_prepared
    from flows.stages.importing import prepare_import

    path = tmp_path / "long.jsonl"
    path.write_text(json.dumps(long_conversation(n_calls)) + "\n")
    prepared = prepare_import(path, "openai-chat")
    import_prepared(store, prepared)
    return next(iter(prepared.episodes))


def make_rollouts(store: Store, n_tasks: int = 2, k: int = 3, families: tuple[str, ...] = ("F01",)) -> list[str]:
    """Commit a round of ``k`` rollouts of each of ``n_tasks`` tasks by a policy that errs half the
    time (so rollouts of a task part ways), curated; return the episode ids."""
    with store.session() as s:
        rnd = state.open_round(session=s, requested_episodes=n_tasks * k, seed=2, plan={"weights": {families[0]: 1.0}})
    tasks = [FAMILIES[families[i % len(families)]].make_task(i) for i in range(n_tasks)]
    policy = ScriptedPolicy(seed=5, error_rates={"tool_use": 0.5})
    recs = [run_episode(t, policy, rollout=r, round_id=rnd.id, batch_id="b", created_at=datetime.now(UTC))
            for t in tasks for r in range(k)]
    store.commit_unit(rnd.id, "batch-0000", {"tasks": tasks})
    store.commit_unit(rnd.id, "s00000", {"episodes": [r.episode for r in recs], "steps": [s for r in recs for s in r.steps],
                                         "outcomes": [r.outcome for r in recs]})
    curate_round(store, rnd.id)
    return [r.episode.episode_id for r in recs]
