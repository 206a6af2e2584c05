"""What a verl trainer runs for our RL set: the reward (``compute_score``) and the phone tools.

``compute_score(data_source, solution_str, ground_truth, extra_info, **reward_kwargs)`` is verl's
custom reward signature (``custom_reward_function.path`` / ``.name``; ``reward_kwargs`` are
:class:`curation.rewards.RewardOptions`). ``ground_truth`` is the row's task spec (JSON text,
``reward_model.ground_truth`` of :mod:`curation.formats.verl`): the world is rebuilt from its seed,
the rollout's tool calls are replayed in order through the one environment step function, and
:func:`curation.rewards.reward` is the score (no action, no reward; see there). Tool calls are read
as verl's Hermes tool parser writes them: ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``.
A task with no requirements is refused (:class:`generators.phone.verifier.NoVerifier`), never scored.

``PhoneTool`` is the ``class_name`` of every tool in the exported tools YAML: verl builds one per
tool schema and calls ``create`` / ``execute`` / ``calc_reward`` / ``release``. Each instance runs
its calls on its own world, built from the task spec that ``create_kwargs.task_id`` names in the
export's task-spec file (the tool's ``config.task_specs``): calls on one instance see each other's
writes, instances do not share a world. ``PhoneUser`` is the interaction: when the agent stops
calling tools it replays the whole conversation on a fresh world and ends it with the reward.
``offered_tools`` is what the export's dataset class (``verl.dataset.py``) leaves of a row's
``tools_kwargs``: the task's own tools (Parquet gives every row every tool's column, null where the
task has none).
"""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

from curation.rewards import RewardOptions, reward
from curation.rewards import action_of as _action
from generators.phone import PhoneEnv, get_family
from generators.phone.verifier import verifiable
from warehouse.contract import TaskSpec

TOOL_CALL = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.DOTALL)


def _arguments(args: Any) -> Any:
    """Call arguments as an object when they are JSON text of one (else as given: an invalid call)."""
    if isinstance(args, str):
        try:
            return json.loads(args)
        except ValueError:
            return args
    return args


def parse_tool_calls(text: str) -> list[tuple[str, Any]]:
    """(name, arguments) of each ``<tool_call>`` block, in order; a block that is not a JSON call is
    ("", raw text) so it replays as an invalid action."""
    out: list[tuple[str, Any]] = []
    for block in TOOL_CALL.findall(text or ""):
        try:
            call = json.loads(block)
        except ValueError:
            out.append(("", block))
            continue
        if isinstance(call, dict) and isinstance(call.get("name"), str):
            out.append((call["name"], _arguments(call.get("arguments", {}))))
        else:
            out.append(("", block))
    return out


def replay_score(task: TaskSpec, calls: list[tuple[str, Any]]) -> tuple[float, bool]:
    """(progress, success) of running ``calls`` on a fresh world of ``task`` through the environment
    (the verifier's own view; the reward is :func:`curation.rewards.reward`)."""
    env = PhoneEnv(verifiable(task), get_family(task.family))
    env.reset()
    for i, (name, args) in enumerate(calls):
        if env.done:
            break
        env.step(_action(i, name, args))
    _, success, progress, _ = env.evaluate()
    return float(progress), bool(success)


def _tokens(text: str) -> int:
    """A rollout's length in tokens, roughly (whitespace-separated pieces) when verl does not say."""
    return len((text or "").split())


def compute_score(data_source: str, solution_str: str, ground_truth: str, extra_info: dict | None = None,
                  **reward_kwargs: Any) -> float:
    """verl's reward for one rollout: :func:`curation.rewards.reward` on the task spec in ``ground_truth``
    (``reward_kwargs``: its options; ``extra_info.group_success_rate`` chooses the competence regime)."""
    task = TaskSpec.model_validate_json(ground_truth)
    info = extra_info or {}
    return reward(task, parse_tool_calls(solution_str), RewardOptions.from_kwargs(**reward_kwargs),
                  tokens=info.get("tokens") or _tokens(solution_str), success_rate=info.get("group_success_rate"))


def offered_tools(tools_kwargs: dict[str, Any] | None) -> dict[str, Any]:
    """A row's ``tools_kwargs`` without the tools its task does not have (null in the Parquet row)."""
    return {name: kw for name, kw in (tools_kwargs or {}).items() if kw is not None}


_SPECS: dict[str, dict[str, TaskSpec]] = {}  # task-spec file -> task id -> spec, read once per process


def task_spec(path: str, task_id: str) -> TaskSpec:
    """The spec of ``task_id`` in the JSON Lines task-spec file ``path`` (an export writes it)."""
    if path not in _SPECS:
        try:
            with open(path, encoding="utf-8") as fh:
                specs = (TaskSpec.model_validate_json(line) for line in fh if line.strip())
                _SPECS[path] = {t.task_id: t for t in specs}
        except FileNotFoundError:
            raise FileNotFoundError(
                f"verl task-spec file {path} not found: the tools and interaction YAML of an export name it by "
                "the path it was written to; after moving the export, set config.task_specs in both to where "
                "verl.task-specs.jsonl is now") from None
    try:
        return _SPECS[path][task_id]
    except KeyError:
        raise KeyError(f"task {task_id!r} is not in the verl task-spec file {path} (a row of another export?)") from None


def calls_in(messages: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    """(name, arguments) of the assistant's tool calls in an OpenAI-style message list."""
    out: list[tuple[str, Any]] = []
    for m in messages:
        if m.get("role") != "assistant":
            continue
        for call in m.get("tool_calls") or []:
            fn = call.get("function", call)
            out.append((fn.get("name", ""), _arguments(fn.get("arguments", {}))))
        out += parse_tool_calls(m.get("content") if isinstance(m.get("content"), str) else "")
    return out


class PhoneTool:
    """A verl tool (``create`` / ``execute`` / ``calc_reward`` / ``release``) for one phone tool schema."""

    def __init__(self, config: dict, tool_schema: Any):
        self.config = config
        self.tool_schema = tool_schema
        fn = tool_schema["function"] if isinstance(tool_schema, dict) else tool_schema.function
        self.name = fn["name"] if isinstance(fn, dict) else fn.name
        self._envs: dict[str, PhoneEnv] = {}
        self._calls: dict[str, list[tuple[str, Any]]] = {}

    def get_openai_tool_schema(self) -> Any:
        return self.tool_schema

    async def create(self, instance_id: str | None = None, **kwargs: Any) -> tuple[str, dict]:
        instance_id = instance_id or str(uuid.uuid4())
        task_id = (kwargs.get("create_kwargs") or kwargs)["task_id"]
        task = task_spec(self.config["task_specs"], task_id)
        env = PhoneEnv(task, get_family(task.family))
        env.reset()
        self._envs[instance_id] = env
        self._calls[instance_id] = []
        return instance_id, {}

    async def execute(self, instance_id: str, parameters: dict[str, Any], **kwargs: Any) -> tuple[str, float, dict]:
        env = self._envs[instance_id]
        if env.done:
            return json.dumps({"ok": False, "error": {"code": "EPISODE_OVER", "message": "the episode has ended"}}), 0.0, {}
        self._calls[instance_id].append((self.name, parameters))
        feedback, verification, _ = env.step(_action(env.steps, self.name, parameters))
        body = {"ok": feedback.ok, "data": feedback.result} if feedback.ok else {
            "ok": False, "error": feedback.error.model_dump() if feedback.error else {"code": "ERROR"}}
        return json.dumps(body, default=str), 0.0, {"progress": verification.progress}

    async def calc_reward(self, instance_id: str, **kwargs: Any) -> float:
        """The reward of this instance's calls so far (no action, no reward)."""
        return reward(self._envs[instance_id].task, self._calls[instance_id])

    async def release(self, instance_id: str, **kwargs: Any) -> None:
        self._envs.pop(instance_id, None)
        self._calls.pop(instance_id, None)


class PhoneUser:
    """A verl interaction (``start_interaction`` / ``generate_response`` / ``calculate_score`` /
    ``finalize_interaction``): ends the conversation once the agent answers, scored by the verifier."""

    def __init__(self, config: dict):
        self.config = config
        self.name = config.get("name", "flywheel_user")
        self._tasks: dict[str, TaskSpec] = {}
        self._scores: dict[str, float] = {}

    async def start_interaction(self, instance_id: str | None = None, **kwargs: Any) -> str:
        instance_id = instance_id or str(uuid.uuid4())
        self._tasks[instance_id] = task_spec(self.config["task_specs"], kwargs["task_id"])
        return instance_id

    async def generate_response(self, instance_id: str, messages: list[dict[str, Any]], **kwargs: Any
                                ) -> tuple[bool, str, float, dict]:
        task, calls = self._tasks[instance_id], calls_in(messages)
        progress, success = replay_score(task, calls)
        score = reward(task, calls, RewardOptions.from_kwargs(**(self.config.get("reward_kwargs") or {})))
        self._scores[instance_id] = score
        return True, "", score, {"success": success, "progress": progress}

    async def calculate_score(self, instance_id: str, **kwargs: Any) -> float:
        return self._scores.get(instance_id, 0.0)

    async def finalize_interaction(self, instance_id: str, **kwargs: Any) -> None:
        self._tasks.pop(instance_id, None)
        self._scores.pop(instance_id, None)
