"""PhoneEnv: one episode of one task, one action at a time.

``step`` turns an Action into Feedback (result or typed error, state delta, state
hash, harness notices) and a Verification (milestones, minefields, progress, label).
"""

from __future__ import annotations

from itertools import compress
from operator import ne
from typing import Any

from generators.phone.digests import Baseline, StateDigest
from generators.phone.families.base import Family
from generators.phone.services.subagents import subagent_steps
from generators.phone.stepplan import plan_for
from generators.phone.stepverify import IncrementalVerifier
from generators.phone.tools import META_SCHEMAS, TOOLS, call_tool, check_arguments, openai_tool_schemas
from generators.phone.trusted import trusted
from generators.phone.user import scripted_user_reply
from generators.phone.verifier import StepVerifier, evaluate
from generators.phone.world import World, row_change, row_json
from warehouse.contract import Action, Feedback, RequirementResult, TaskSpec, ToolError, Verification

ENV_VERSION = "0.2"
ERROR_FIELDS = frozenset(ToolError.model_fields)
STOP_GUESSING = ("This exact call has now failed twice. Stop guessing: read the error's hint, "
                 "look the value up with a read tool, or ask the user.")


def budget_warning(left: int) -> str:
    """The harness notice shown when few steps remain."""
    return f"Only {left} steps left in the step budget: finish soon, reporting what is done."


def apply_action(world: World, task: TaskSpec, action: Action, answer: str | None = None) -> tuple[str, dict[str, Any]]:
    """The one step function of the phone: what ``action`` does to ``world``.

    Returns the action's effective kind (a model may call ask_user or finish as a tool)
    and the reply (``{"ok", "data"}`` or ``{"ok": False, "error"}``). ask_user gets ``answer`` when
    given (a model user's reply, obtained before the step), else the scripted user's: the answer never changes the world, so replay with the scripted user ends in the same
    state. Collection
    (:meth:`PhoneEnv.step`, which adds the diff, hash, notices and verification) and replay
    (:func:`replay_actions`) both go through it, so they cannot drift apart."""
    kind = action.kind
    if kind == "tool_call" and action.tool in META_SCHEMAS:
        kind = action.tool
    if kind == "tool_call":
        return kind, call_tool(world, action.tool, action.arguments, allowed=task.tools)
    world.advance()
    if kind not in META_SCHEMAS:
        return kind, {"ok": False, "error": {"code": "INVALID_ACTION", "message": "the reply held no usable action",
                                             "retryable": True, "hint": "reply with exactly one tool call"}}
    problem = meta_problem(kind, action)
    if problem:
        return kind, {"ok": False, "error": {"code": "INVALID_ARGUMENT", "message": problem[0], "retryable": False,
                                             "hint": f"expected {problem[1]}"}}
    if kind == "ask_user":
        question, options = action.arguments["question"], action.arguments.get("options")
        if answer is None:
            answer = scripted_user_reply(task, question, options)
        return kind, {"ok": True, "data": {"answer": answer}}
    return kind, {"ok": True, "data": {"status": action.arguments["status"]}}


def meta_problem(kind: str, action: Action) -> tuple[str, str] | None:
    """Why a meta action's arguments are unusable ((message, expected)), or None."""
    return check_arguments(kind, META_SCHEMAS[kind]["parameters"], action.arguments)


def user_question(action: Action) -> tuple[str, list[Any] | None] | None:
    """(question, options) when ``action`` is a well-formed ask_user, else None: what a model user
    is asked before the step (a malformed ask costs no model call)."""
    if action.kind != "ask_user" and not (action.kind == "tool_call" and action.tool == "ask_user"):
        return None
    if meta_problem("ask_user", action):
        return None
    return action.arguments["question"], action.arguments.get("options")


def replay_actions(task: TaskSpec, actions: list[Action], world: World) -> None:
    """Re-execute ``actions`` in ``world`` (the task's initial world, changed in place) until the episode
    ended: the same step function and the same end rules as :class:`PhoneEnv` (an accepted finish, or
    the step budget), without the per-step diff, hash and verification replay does not need."""
    for i, action in enumerate(actions):
        kind, reply = apply_action(world, task, action)
        if (kind == "finish" and reply["ok"]) or i + 1 >= task.step_budget:
            break


class PhoneEnv:
    """The simulated phone for one task. Call ``reset`` first, then ``step`` until done.

    Each step's state delta, state hash and verification are kept up to date incrementally,
    from the tables and rows the step changed; ``incremental=False`` recomputes all three from
    the whole world instead (the definition, for tests and the benchmark to compare against)."""

    def __init__(self, task: TaskSpec, family: Family, incremental: bool = True):
        self.task = task
        self.family = family
        self.incremental = incremental
        self.world: World | None = None

    def reset(self, fresh: bool = False) -> dict[str, Any]:
        """Rebuild the initial world; returns the observation an agent starts from.

        Rollouts start from a copy of the family's cached world; ``fresh`` builds it from
        scratch instead (the gate's determinism check must see two independent builds).
        """
        if fresh or not self.incremental:
            self.world = self.family.build_world(self.task) if fresh else self.family.initial_world(self.task).world
            baseline = Baseline(self.world.tables, self.world.snapshot())
        else:
            self.world, baseline = self.family.initial_world(self.task)
        self.initial = baseline.initial
        self._last = dict(self.initial)  # per table, its rows after the previous step (rows never changed in place)
        self._digest = StateDigest(self.world.tables, baseline)
        self._app_tables = baseline.apps  # the same for every copy of the world
        self._exposed = frozenset(self.task.tools)  # asked at every step: a set, not the task's list
        self.verifier: StepVerifier | IncrementalVerifier
        if self.incremental:  # what the requirements alone give is worked out once per kept world
            plan = plan_for(self.task.requirements, baseline.kept)
            self.verifier = IncrementalVerifier(self.task, self.initial, self.world.tables, plan)
        else:
            self.verifier = StepVerifier(self.task, self.initial, self.world)
        self.calls: list[dict[str, Any]] = []
        self.failures: dict[str, int] = {}
        self.steps = 0
        self.done = False
        self.finish_args: dict[str, Any] | None = None
        self.termination: str | None = None
        self.delegated: list[tuple[str, str, dict[str, Any], bool, str]] = []
        return {"instruction": self.task.instruction, "tools": openai_tool_schemas(self.task.tools),
                "step_budget": self.task.step_budget}

    def step(self, action: Action, answer: str | None = None) -> tuple[Feedback, Verification, bool]:
        """Apply one action (``answer``: the user's reply to an ask_user, when a model user gave it
        already; else the scripted user answers). Raises only if the episode is over or was never reset.
        Afterwards ``delegated`` lists the sub-agents' own steps the action set off."""
        if self.world is None or self.done:
            raise RuntimeError("call reset() before step(), and do not step a finished episode")
        world, index = self.world, self.steps
        logged = len(world.events)
        kind, reply = apply_action(world, self.task, action, answer)
        # what sub-agents did during this action (a run, an automation firing): their own steps; a plain tool
        # call logs one event of its own
        events = world.events
        plain = len(events) == logged + 1 and events[-1]["kind"] == "tool_call"
        self.delegated = subagent_steps(events[logged:]) if len(events) > logged and not plain else []
        if kind == "tool_call" or kind == "ask_user":  # asking is behaviour the verifier checks, so it is a call too
            self.calls.append({"index": index, "tool": kind if kind == "ask_user" else action.tool,
                               "arguments": action.arguments, "ok": reply["ok"],
                               "call_id": action.call_id or f"step-{index}", "result": reply.get("data")})
        if kind == "finish" and reply["ok"]:
            self.finish_args = dict(action.arguments)
            self.done, self.termination = True, "finished"
        self.steps += 1
        notices = self._notices(kind, action, reply)
        error = None
        if not reply["ok"]:  # every typed error has the four fields (model_construct: only if one day it does not)
            fields = reply["error"]
            error = (trusted(ToolError, **fields) if fields.keys() == ERROR_FIELDS
                     else ToolError.model_construct(**fields))
        if not self.incremental:  # the definition: the whole world copied, diffed and hashed
            after = world.snapshot()
            delta = world.diff(self._last, after)
            self._last = after
            feedback = trusted(Feedback, ok=reply["ok"], error=error, result=reply.get("data"), state_delta=delta,
                               state_hash=world.state_hash(), notices=notices)
            return feedback, self.verifier.observe(world, self.calls, action, feedback, self.finish_args, after), \
                self.done
        # only the tools of an app change its tables (tests keep this true), so only those are compared
        tool = TOOLS.get(action.tool) if kind == "tool_call" and action.tool in self._exposed else None
        touched = (self._app_tables.get(tool.app) or self._tables_of(tool.app)) if tool else ()
        if world.wide:  # a macro, a sub-agent or an automation reached beyond one app
            touched, world.wide = self._tables_of(None), False
        delta, moved = self._changes(touched)
        # built without validation: every field is typed by construction, and this runs per step
        feedback = trusted(Feedback, ok=reply["ok"], error=error, result=reply.get("data"), state_delta=delta,
                           state_hash=self._digest.state_hash(), notices=notices)
        verification = self.verifier.observe(self.calls, action, feedback, self.finish_args, self._last, moved)
        return feedback, verification, self.done

    def _tables_of(self, app: str | None) -> list[str]:
        """The names of an app's tables (None: every table), sorted as the state delta is."""
        names = self._app_tables.get(app)
        if names is None:
            names = self._app_tables[app] = sorted(self.world.tables if app is None else self.world.app_tables(app))
        return names

    def _changes(self, touched: list[str] | tuple[()]) -> tuple[list[dict[str, Any]], dict[str, list[str]]]:
        """The step's state delta over ``touched`` and, per table, the rows that moved at all; the last
        snapshot and the table digests follow, each moved row copied and re-encoded, nothing else."""
        tables, last = self.world.tables, self._last
        moved: dict[str, list[str]] = {}
        parts: list[list[dict[str, Any]]] = []
        for name in touched:  # sorted by name
            t = tables[name]
            before = last[name]
            if t.shares(before):  # still the kept world's rows, unused since the reset: not even copied
                continue
            rows = t.rows
            if rows == before:  # one C-level comparison: the table did not move
                continue
            # the rows that differ from the last step's (or are new), compared in C: a table may hold a hundred
            keys = list(compress(rows, map(ne, rows.values(), map(before.get, rows))))
            if rows.keys() != before.keys():  # rows added or removed
                keys += before.keys() - rows.keys()
            now = dict(before)
            for k in keys:
                row = rows.get(k)
                if row is None:
                    del now[k]
                else:
                    now[k] = dict(row)
            last[name] = now
            moved[name] = keys
            skip, unordered = t.incidental, t if t.unordered else None
            part = [c for c in (row_change(name, k, before.get(k), now.get(k), skip, unordered) for k in sorted(keys))
                    if c is not None]  # as diff_table gives it: sorted by key
            if part:  # a row whose essential fields stayed keeps its text, and so its table's digest
                parts.append(part)
                self._digest.rows_changed(name, [c["key"] for c in part])
        return [c for part in parts for c in part] if len(parts) != 1 else parts[0], moved

    def _notices(self, kind: str, action: Action, reply: dict[str, Any]) -> list[str]:
        notices = []
        if not reply["ok"]:
            key = row_json([kind, action.tool, action.arguments])
            self.failures[key] = self.failures.get(key, 0) + 1
            if self.failures[key] >= 2:
                notices.append(STOP_GUESSING)
        left = self.task.step_budget - self.steps
        if not self.done and left <= 0:
            self.done, self.termination = True, "budget_exhausted"
        elif not self.done and left == 2:
            notices.append(budget_warning(left))
        return notices

    def state_hash(self) -> str:
        """The world's state hash (kept current by ``step``, or recomputed in full when not incremental)."""
        return self._digest.state_hash() if self.incremental else self.world.state_hash()

    def evaluate(self) -> tuple[list[RequirementResult], bool, float, list[str]]:
        """Score the episode so far: (results, success, progress, minefields)."""
        return evaluate(self.task, self.initial, self.world, self.calls, self.finish_args)
