"""The contract: action -> feedback -> verification.

One set of records shared by every stage. Pure pydantic models, no I/O.
Ids are derived from content (see :mod:`warehouse.ids`), so every stage can be
repeated without creating duplicates.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

# 1.1: TaskSpec.tool_schemas; 1.2: scenario_id and session on tasks and episodes; 1.3: sub-agent steps as
# their own rows (actor ``subagent:<name>``), Outcome.user_fallbacks; 1.4: Episode.messages (an imported
# conversation as recorded) and ``message`` steps (a text turn of the agent or of the user)
SCHEMA_VERSION = "1.4"
KNOWN_SCHEMA_VERSIONS = ("1.0", "1.1", "1.2", "1.3", "1.4")  # rows written by these still read back

Split = Literal["train", "dev", "test", "challenge"]
Actor = Literal["planner", "subagent", "user", "harness"]  # a sub-agent's own steps say which: ``subagent:gui``
ACTOR_PATTERN = r"^(planner|user|harness|subagent(:[a-z][a-z0-9_]*)?)$"
# ``message``: a text turn of an imported conversation (the agent's, or the user's with actor ``user``)
ActionKind = Literal["tool_call", "ask_user", "finish", "invalid", "message"]
# The notice on a call of an imported conversation whose result was never recorded (none is invented)
MISSING_RESULT = "missing_result"
FinishStatus = Literal["completed", "needs_user", "infeasible", "partial"]
StepLabel = Literal["ok", "redundant", "recoverable_error", "harmful", "invalid_call"]
# The policy name of a reference demonstration: the family's reference solution followed exactly
# (a failure curriculum's share of episodes). Not the model's own attempt: never paired, never measured.
REFERENCE_POLICY = "reference"
# Keys of the model-reply journal (model_replies) other than an episode id (the planner's): the
# simulated user's calls and the task writer's, each followed by its episode or task id.
USER_KEY, WRITER_KEY = "user:", "writer:"
# A journal entry in place of a simulated user's reply the endpoint did not give: the scripted
# answer was used (the entry holds the reason), and a rerun uses it again. No call, no tokens.
FALLBACK = "fallback"
# Journal keys of the places where the model endpoint gave up on an episode (``gave-up:<episode id>``,
# at the step index): the unit was not committed; the same give-up at the same place on a rerun is final.
GAVE_UP_KEY = "gave-up:"
# The system turn a model runs with in the phone, and so the one its training rows carry (every export of
# a generated episode): a model trained on one prompt and measured with another is measured on a prompt it
# never saw. An imported conversation keeps its own.
AGENT_SYSTEM_PROMPT = (
    "You are a planner agent operating the user's phone through tools. Use the tools to do what the user "
    "asks, one tool call per reply. Ask the user (ask_user) when a request is ambiguous or a fact is missing. "
    "When done, call finish with the status, the typed answer if a question was asked, and claims tying "
    "each fact to the call id that returned it."
)
# An eval's episodes are filed under its batch id, which starts so (never a round's id).
EVAL_PREFIX = "eval-"
Termination = Literal[
    "finished",  # the agent called finish
    "budget_exhausted",  # step budget used up
    "invalid_replies",  # too many unusable model replies in a row
    "endpoint_error",  # the model endpoint failed for good
    "request_rejected",  # the endpoint refused a request of this episode (a 4xx, a validation error)
    "harness_error",  # the environment itself failed
    "external",  # an imported conversation that ended without a finish: how it ended is the source's to say
]


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False)


class Requirement(_Record):
    """One checkable requirement of a task (see PHONESIM.md, Verifier)."""

    id: str
    kind: str  # state_diff, allowed_changes, untouched, answer, order, forbidden, ...
    description: str
    weight: float = 1.0
    dimension: str = "tool_use"  # tool_use, memory, skills, subagents
    hard: bool = True
    noop_passes: bool = False  # what doing nothing yields for this requirement
    params: dict[str, Any] = Field(default_factory=dict)


def variant_of(template: str | None) -> str:
    """A task's variant: its template ``<variant>.<wording>`` without the wording (``update_phone.terse`` ->
    ``update_phone``): what the task asks, not how it is worded."""
    return (template or "").split(".", 1)[0]


class TaskSpec(_Record):
    """A verifiable task: everything needed to rebuild its world and check it."""

    task_id: str
    family: str
    template: str
    seed: int
    difficulty: int = 1
    public_params: dict[str, Any] = Field(default_factory=dict)
    private_params: dict[str, Any] = Field(default_factory=dict)
    instruction: str
    writer: str = "template"
    tools: list[str] = Field(default_factory=list)
    # The task's own function schemas (imported tasks keep the record's); None: built from ``tools``.
    tool_schemas: list[dict[str, Any]] | None = None
    # Tools among ``tool_schemas`` whose schema was inferred from the calls seen (an import without schemas)
    tool_schemas_inferred: list[str] | None = None
    skills: list[str] = Field(default_factory=list)
    faults: list[dict[str, Any]] = Field(default_factory=list)
    requirements: list[Requirement] = Field(default_factory=list)
    optimal_steps: int = 1
    step_budget: int = 15
    capabilities: list[str] = Field(default_factory=list)
    split: Split = "train"
    generator_version: str = "0"
    # a scenario: several sessions of one user sharing memory; it succeeds only if every session does
    scenario_id: str = ""
    session: int = 1
    schema_version: str = SCHEMA_VERSION


class ToolError(_Record):
    code: str
    message: str
    retryable: bool = False
    hint: str = ""


class Action(_Record):
    """What the actor did: a tool call, a question to the user, or finish."""

    kind: ActionKind
    tool: str = ""  # tool name for tool_call; "ask_user" / "finish" otherwise
    arguments: dict[str, Any] = Field(default_factory=dict)
    call_id: str = ""
    text: str = ""  # reasoning or message text the actor gave with the action
    raw: str = ""  # raw reply text when the action could not be parsed


class Feedback(_Record):
    ok: bool
    error: ToolError | None = None
    result: Any = None
    state_delta: list[dict[str, Any]] = Field(default_factory=list)
    state_hash: str = ""
    notices: list[str] = Field(default_factory=list)


class Verification(_Record):
    milestones: list[str] = Field(default_factory=list)
    minefields: list[str] = Field(default_factory=list)
    progress: float = 0.0
    label: StepLabel = "ok"


class Cost(_Record):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0


class Step(_Record):
    episode_id: str
    index: int
    # who acted: the planner (the agent being trained), or a sub-agent it delegated to (``subagent:qa``),
    # whose steps are recorded after the delegating step and are never the planner's turns
    actor: str = Field("planner", pattern=ACTOR_PATTERN)
    action: Action
    feedback: Feedback
    verification: Verification = Field(default_factory=Verification)
    cost: Cost = Field(default_factory=Cost)


class Episode(_Record):
    """One rollout of a task by a policy."""

    episode_id: str
    task_id: str
    family: str
    template: str
    split: Split = "train"
    instruction: str
    policy: str
    model: str = ""
    rollout: int = 0
    round_id: str
    batch_id: str
    source: Literal["collected", "external"] = "collected"
    scenario_id: str = ""  # the task's scenario ("" for a single-session task)
    session: int = 1
    generator_version: str = "0"
    env_version: str = "0"
    policy_version: str = "0"
    created_at: datetime
    # An imported conversation as recorded (OpenAI chat messages: its own system prompt, text turns and tool
    # results verbatim); exports write these, not our phone's action grammar. None for our own episodes.
    messages: list[dict[str, Any]] | None = None
    schema_version: str = SCHEMA_VERSION


class RequirementResult(_Record):
    id: str
    passed: bool
    hard: bool = True
    weight: float = 1.0
    dimension: str = "tool_use"
    detail: str = ""


class FailureAttribution(_Record):
    side: Literal["model", "harness"] = "model"
    type: str  # wrong_argument, skipped_step, early_finish, loop, minefield, ...
    step: int | None = None
    detail: str = ""  # e.g. the model server's own message when it refused a request
    # what went wrong, in the team's taxonomy. model: decomposition, routing, argument_grounding,
    # state_tracking, recovery, premature_finish; harness: missing_skill_guidance, tool_not_exposed,
    # retrieval_miss, stale_memory, tool_fault, endpoint_error, harness_error
    category: str = ""


class Outcome(_Record):
    episode_id: str
    termination: Termination
    finish_status: str = ""
    final_answer: Any = None
    claims: list[dict[str, Any]] = Field(default_factory=list)
    success: bool | None  # None: unknown (an import whose source reported no reward), not a failure
    progress: float
    requirement_results: list[RequirementResult] = Field(default_factory=list)
    minefields_hit: list[str] = Field(default_factory=list)
    final_state_hash: str = ""
    steps: int = 0
    tool_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0
    efficiency: float = 0.0  # optimal steps / steps taken, capped at 1
    failure: FailureAttribution | None = None
    # model-user replies that could not be used (empty, naming a private fact it was not asked, answering a
    # confirmation against the task's policy, or no reply at all): ``{step, reason, raw}`` each; the scripted
    # user's answer was given instead
    user_fallbacks: list[dict[str, Any]] = Field(default_factory=list)


def is_subagent(actor: str | None) -> bool:
    """Whether a step was a sub-agent's (recorded for the record; the planner did not take it, replay
    does not re-execute it, and no export trains the planner on it)."""
    return str(actor or "").startswith("subagent")


class CurationMark(_Record):
    """A mark set by one curation step. Curation marks, it never deletes."""

    episode_id: str
    round_id: str
    check: str  # the step that made it: schema, verified, exact_duplicate, ...
    mark: str  # e.g. verified / not_verified / duplicate_of
    passed: bool
    reason: str = ""
    detail: dict[str, Any] = Field(default_factory=dict)


class FeedbackRecord(_Record):
    """One result of a trained (or evaluated) model on one task: what the next plan learns from."""

    task_id: str
    family: str
    difficulty: int = 1
    capabilities: list[str] = Field(default_factory=list)
    model: str = ""
    success: bool
    reward: float | None = None
    source: Literal["trainer", "eval"] = "trainer"
    batch: str  # the import or eval this record came in with
    recorded_at: datetime
    # Optional, so shards written before they existed still read: the task's wording
    # (its variant is the part before the dot), the split the task was drawn from (an
    # eval on ``test`` is reported, never planned from), and why a failure failed.
    template: str | None = None
    split: str | None = None
    failure_side: str | None = None
    failure_type: str | None = None


class EpisodeRecord(_Record):
    """An episode with its steps and outcome: the unit a collector produces."""

    episode: Episode
    steps: list[Step]
    outcome: Outcome


# --- an imported conversation's steps --------------------------------------------------------------------
# Which steps an imported conversation's messages are: the one rule the importer builds steps by and the
# exports read loss masks by. Each assistant message is one step per tool call (one ``message`` step when
# it made none); each user message after the first (the instruction) is one ``message`` step of actor
# ``user``, except the harness's notice after a reply that was no action (our own chat exports write one);
# system and tool messages are no step (a tool message is its call's feedback).

HARNESS = "[harness] "  # how our chat exports tell the agent its reply was not an action


def message_text(message: Any) -> str:
    """A message's text: its content string, or its text parts joined."""
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return content if isinstance(content, str) else ""


def is_harness_notice(messages: list[Any], i: int) -> bool:
    """Whether message ``i`` is the harness's notice on the agent's reply just before it."""
    msg, before = messages[i], messages[i - 1] if i else None
    return (isinstance(msg, dict) and msg.get("role") == "user" and message_text(msg).startswith(HARNESS)
            and isinstance(before, dict) and before.get("role") == "assistant" and not before.get("tool_calls"))


def step_counts(messages: list[Any]) -> list[int]:
    """How many steps each message is (see the module doc)."""
    out: list[int] = []
    seen_user = False
    for i, msg in enumerate(messages):
        role = msg.get("role") if isinstance(msg, dict) else None
        if role == "assistant":
            calls = msg.get("tool_calls")
            out.append(max(1, len(calls)) if isinstance(calls, list) else 1)
        elif role == "user":
            out.append(1 if seen_user and not is_harness_notice(messages, i) else 0)
            seen_user = True
        else:
            out.append(0)
    return out


def message_steps(messages: list[Any]) -> list[range]:
    """Per message, the step indices it covers (empty when none)."""
    out, n = [], 0
    for count in step_counts(messages):
        out.append(range(n, n + count))
        n += count
    return out
