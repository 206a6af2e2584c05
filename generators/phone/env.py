"""PhoneEnv: one episode of one task, one action at a time.

``step`` turns an Action into Feedback (result or typed error, state delta, state
hash, harness notices) and a Verification (milestones, minefields, progress, label).
"""

from __future__ import annotations

from typing import Any

from warehouse.contract import Action, Feedback, RequirementResult, TaskSpec, ToolError, Verification
from warehouse.ids import canonical_json

from generators.phone.families import Family, get_family
from generators.phone.tools import META_SCHEMAS, TOOLS, call_tool, check_arguments, openai_tool_schemas
from generators.phone.user import scripted_user_reply
from generators.phone.verifier import StepVerifier, evaluate
from generators.phone.world import World

ENV_VERSION = "0.2"
STOP_GUESSING = ("This exact call has now failed twice. Stop guessing: read the error's hint, "
                 "look the value up with a read tool, or ask the user.")


def budget_warning(left: int) -> str:
    """The harness notice shown when few steps remain."""
    return f"Only {left} steps left in the step budget: finish soon, reporting what is done."


def apply_action(world: World, task: TaskSpec, action: Action, user: Any = None) -> tuple[str, dict[str, Any]]:
    """The one step function of the phone: what ``action`` does to ``world``.

    Returns the action's effective kind (a model may call ask_user or finish as a tool)
    and the reply (``{"ok", "data"}`` or ``{"ok": False, "error"}``); ``user`` answers ask_user
    (a ModelUser), else the scripted user does. Collection
    (:meth:`PhoneEnv.step`, which adds the diff, hash, notices and verification) and replay
    (:func:`replay_final_hash`) both go through it, so they cannot drift apart."""
    kind = action.kind
    if kind == "tool_call" and action.tool in META_SCHEMAS:
        kind = action.tool
    if kind == "tool_call":
        return kind, call_tool(world, action.tool, action.arguments, allowed=task.tools)
    world.advance()
    if kind not in META_SCHEMAS:
        return kind, {"ok": False, "error": {"code": "INVALID_ACTION", "message": "the reply held no usable action",
                                             "retryable": True, "hint": "reply with exactly one tool call"}}
    problem = check_arguments(kind, META_SCHEMAS[kind]["parameters"], action.arguments)
    if problem:
        return kind, {"ok": False, "error": {"code": "INVALID_ARGUMENT", "message": problem[0], "retryable": False,
                                             "hint": f"expected {problem[1]}"}}
    if kind == "ask_user":
        question, options = action.arguments["question"], action.arguments.get("options")
        answer = (user.reply(task, question, options) if user is not None
                  else scripted_user_reply(task, question, options))
        return kind, {"ok": True, "data": {"answer": answer}}
    return kind, {"ok": True, "data": {"status": action.arguments["status"]}}


def replay_final_hash(task: TaskSpec, actions: list[Action], family: Family | None = None) -> str:
    """The final state hash after re-executing ``actions`` in a fresh world (the replay check).

    The same step function and the same end rules as :class:`PhoneEnv` (an accepted finish,
    or the step budget), without the per-step diff, hash and verification replay does not need."""
    world = (family or get_family(task.family)).build_world(task)
    for i, action in enumerate(actions):
        kind, reply = apply_action(world, task, action)
        if (kind == "finish" and reply["ok"]) or i + 1 >= task.step_budget:
            break
    return world.state_hash()


class PhoneEnv:
    """The simulated phone for one task. Call ``reset`` first, then ``step`` until done."""

    def __init__(self, task: TaskSpec, family: Family | None = None, user: Any = None):
        self.task = task
        self.user = user  # answers ask_user: a ModelUser when an endpoint is set, else the scripted user
        self.family = family or get_family(task.family)
        self.world: World | None = None

    def reset(self, fresh: bool = False) -> dict[str, Any]:
        """Rebuild the initial world; returns the observation an agent starts from.

        Rollouts start from a copy of the family's cached world; ``fresh`` builds it from
        scratch instead (the gate's determinism check must see two independent builds).
        """
        if fresh:
            self.world = self.family.build_world(self.task)
            self._digests = {n: self.world.table_digest(n) for n in self.world.tables}
        else:
            self.world, self._digests = self.family.initial_world(self.task)
        self.initial = self.world.snapshot()
        self._last = self.initial  # the snapshot after the previous step
        self.verifier = StepVerifier(self.task, self.initial, self.world)
        self.calls: list[dict[str, Any]] = []
        self.failures: dict[str, int] = {}
        self.steps = 0
        self.done = False
        self.finish_args: dict[str, Any] | None = None
        self.termination: str | None = None
        return {"instruction": self.task.instruction, "tools": openai_tool_schemas(self.task.tools),
                "step_budget": self.task.step_budget}

    def step(self, action: Action) -> tuple[Feedback, Verification, bool]:
        """Apply one action. Raises only if the episode is over or was never reset."""
        if self.world is None or self.done:
            raise RuntimeError("call reset() before step(), and do not step a finished episode")
        world, index = self.world, self.steps
        kind, reply = apply_action(world, self.task, action, self.user)
        if kind == "tool_call" or kind == "ask_user":  # asking is behaviour the verifier checks, so it is a call too
            self._record(index, action, reply, tool=kind if kind == "ask_user" else None)
        if kind == "finish" and reply["ok"]:
            self.finish_args = dict(action.arguments)
            self.done, self.termination = True, "finished"
        self.steps += 1
        notices = self._notices(kind, action, reply)
        # only the tools of an app change its tables (tests keep this true), so only those are copied
        tool = TOOLS.get(action.tool) if kind == "tool_call" and action.tool in self.task.tools else None
        touched = world.app_tables(tool.app) if tool else []
        if world.wide:  # a macro, a sub-agent or an automation reached beyond one app
            touched, world.wide = list(world.tables), False
        after = {**self._last, **world.snapshot(touched)}
        delta = world.diff({n: self._last[n] for n in touched}, {n: after[n] for n in touched})
        for name in {c["table"] for c in delta}:  # only changed tables are hashed again
            self._digests[name] = world.table_digest(name)
        self._last = after
        # built without validation: every field is typed by construction, and this runs per step
        feedback = Feedback.model_construct(
            ok=reply["ok"], error=ToolError.model_construct(**reply["error"]) if not reply["ok"] else None,
            result=reply.get("data"), state_delta=delta, state_hash=world.state_hash(self._digests),
            notices=notices,
        )
        verification = self.verifier.observe(world, self.calls, action, feedback, self.finish_args, after)
        return feedback, verification, self.done

    def _record(self, index: int, action: Action, reply: dict[str, Any], tool: str | None = None) -> None:
        self.calls.append({"index": index, "tool": tool or action.tool, "arguments": action.arguments,
                           "ok": reply["ok"], "call_id": action.call_id or f"step-{index}",
                           "result": reply.get("data")})

    def _notices(self, kind: str, action: Action, reply: dict[str, Any]) -> list[str]:
        notices = []
        if not reply["ok"]:
            key = canonical_json([kind, action.tool, action.arguments])
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
        """The world's state hash from the table digests ``step`` keeps current (no full recomputation)."""
        return self.world.state_hash(self._digests)

    def evaluate(self) -> tuple[list[RequirementResult], bool, float, list[str]]:
        """Score the episode so far: (results, success, progress, minefields)."""
        return evaluate(self.task, self.initial, self.world, self.calls, self.finish_args)
