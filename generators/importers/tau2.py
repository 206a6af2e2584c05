"""Import τ²-bench results: ``simulations[]``, each with ``task_id``, ``trial``, ``messages``
(assistant ``tool_calls`` of ``{id, name, arguments, requestor}``, ``tool`` messages with ``id``,
``content`` and an ``error`` flag, ``multi_tool`` groups), ``reward_info`` (``reward`` and its
``reward_breakdown``) and ``termination_reason``. Shapes as in τ²-bench's ``SimulationRun``,
``RewardInfo`` and message models (see tests/data/tau2/SOURCE.md).

The agent's steps are its own: calls a simulated user made (``requestor: user``) and their
results are left out. The user's closing turn (its stop signal) is dropped, so the agent's last
answer is the episode's finish. All of ``reward_info`` is kept in the outcome's per-requirement
results: its breakdown (one result per reward basis), each check it holds (the database check, every
environment assertion, action check, natural-language assertion and communicate check, passed as
the check says, the check itself as detail) and the whole object as ``reward_info``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from generators.importers.chat import BAD_SHAPE, Parsed, drop_closing_user_turns, problem_of, tool_call, tool_result
from warehouse.errors import InputError

# τ²-bench's termination reasons for a simulation the agent did not end, as ours
TERMINATIONS = {"max_steps": "budget_exhausted", "timeout": "budget_exhausted", "too_many_errors": "invalid_replies",
                "agent_error": "endpoint_error", "context_window_exceeded": "endpoint_error"}


def _termination(reason: Any) -> str:
    """Ours for τ²-bench's termination reason: a conversation the user or agent ended just ended ("external")."""
    return "external" if reason in ("user_stop", "agent_stop") else TERMINATIONS.get(str(reason), "harness_error")


def _messages(sim: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    flat: list[Any] = []
    for msg in sim.get("messages") or []:
        if isinstance(msg, dict) and msg.get("role") == "tool" and isinstance(msg.get("tool_messages"), list):
            flat.extend(msg["tool_messages"])  # a MultiToolMessage
        else:
            flat.append(msg)
    for i, msg in enumerate(flat):
        role = msg.get("role") if isinstance(msg, dict) else None
        if role in ("system", "user"):
            if msg.get("content"):
                out.append({"role": role, "content": msg["content"]})
        elif role == "assistant":
            calls = [tool_call(str(c.get("id") or f"call_{i}_{j}"), c.get("name"), c.get("arguments") or {})
                     for j, c in enumerate(msg.get("tool_calls") or [])
                     if isinstance(c, dict) and c.get("requestor", "assistant") == "assistant"]
            out.append({"role": "assistant", "content": msg.get("content") or "", **({"tool_calls": calls} if calls else {})})
        elif role == "tool":
            if msg.get("requestor", "assistant") != "assistant":
                continue  # the simulated user's own tool use
            content = msg.get("content") or ""
            out.append(tool_result(str(msg.get("id") or ""), content,
                                   error=("TOOL_ERROR", content) if msg.get("error") else None))
        else:
            raise ValueError(f"message {i} has no known role")
    if sim.get("termination_reason") in ("user_stop", "agent_stop"):
        out = drop_closing_user_turns(out)
    return out


# RewardInfo's lists of checks: (key, id prefix, what says it passed)
_CHECK_LISTS = (("env_assertions", "env_assertion", "met"), ("action_checks", "action_check", "action_match"),
                ("nl_assertions", "nl_assertion", "met"), ("communicate_checks", "communicate_check", "met"))


def reward_checks(info: dict[str, Any]) -> list[dict[str, Any]]:
    """Every check of a ``RewardInfo`` as {id, passed, detail}, then the whole object (``reward_info``)."""
    out = []
    if isinstance(info.get("db_check"), dict):
        out.append({"id": "db_check", "passed": bool(info["db_check"].get("db_match")), "detail": info["db_check"]})
    for key, prefix, passed in _CHECK_LISTS:
        for n, check in enumerate(info.get(key) or []):
            if not isinstance(check, dict):
                raise ValueError(f"reward_info.{key}[{n}] is not an object")
            out.append({"id": f"{prefix}:{n}", "passed": bool(check.get(passed)), "detail": check})
    if info:
        reward = info.get("reward")
        out.append({"id": "reward_info", "passed": isinstance(reward, int | float) and reward >= 1.0, "detail": info})
    return out


def records(results: Any, simulations: Iterable[Any], name: str) -> Iterator[Parsed]:
    """One chat record per simulation of the results file ``name`` (or the reason it cannot be one), as they
    come: ``results`` is the file's document (its ``simulations`` may be left empty), ``simulations`` its
    simulations."""
    if not isinstance(results, dict) or not isinstance(results.get("simulations"), list):
        raise InputError(f"{name}: not τ²-bench results (JSON with a 'simulations' list)")
    info = results.get("info") if isinstance(results.get("info"), dict) else {}
    env = info.get("environment_info") if isinstance(info.get("environment_info"), dict) else {}
    agent = info.get("agent_info") if isinstance(info.get("agent_info"), dict) else {}
    return _records(simulations, str(env.get("domain_name") or "tau2"), str(agent.get("llm") or ""))


def _records(simulations: Iterable[Any], domain: str, model: str) -> Iterator[Parsed]:
    for n, sim in enumerate(simulations, start=1):
        where = f"simulation {n}"
        if not isinstance(sim, dict) or sim.get("task_id") in (None, ""):
            yield Parsed(where, n, None, "a simulation must be an object with a task_id")
            continue
        where = f"simulation {n} (task {sim['task_id']}, trial {sim.get('trial')})"
        reward_info = sim.get("reward_info") if isinstance(sim.get("reward_info"), dict) else {}
        try:
            value = {"messages": _messages(sim), "reward": reward_info.get("reward"),
                     "reward_breakdown": reward_info.get("reward_breakdown") or None,
                     "reward_checks": reward_checks(reward_info) or None,
                     "rollout": sim.get("trial"), "termination": _termination(sim.get("termination_reason")), "model": model, "policy": "tau2",
                     "task": {"task_id": f"tau2:{domain}:{sim['task_id']}"}}
        except BAD_SHAPE as exc:
            yield Parsed(where, n, None, problem_of(exc))
            continue
        yield Parsed(where, n, value)
