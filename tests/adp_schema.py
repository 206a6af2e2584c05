"""Pydantic models written from the Agent Data Protocol's published standardized schema
(neulab/agent-data-protocol: schema/SCHEMA.md, schema/trajectory.py, schema/action/*.py,
schema/observation/*.py, SCHEMA_VERSION 1.2.0), to load our ADP export the way ADP's tools do:
extra fields rejected, ``class_`` fixed per type, and the tool-call links validated (an action's
``tool_call_id`` answered by exactly one later observation; an observation's matching an action)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

SUPPORTED_SCHEMA_VERSIONS = ("1.2.0", "1.1.0", "1.0.0")


class Action(BaseModel):
    model_config = ConfigDict(extra="forbid")
    tool_call_id: str | None = None
    reasoning_content: str | None = None
    reward: float | None = None


class ApiAction(Action):
    class_: Literal["api_action"] = "api_action"
    function: str
    kwargs: dict[str, Any]
    description: str | None = None


class MessageAction(Action):
    class_: Literal["message_action"] = "message_action"
    content: str
    description: str | None = None


class Observation(BaseModel):
    model_config = ConfigDict(extra="forbid")
    tool_call_id: str | None = None
    reward: float | None = None


class TextObservation(Observation):
    class_: Literal["text_observation"] = "text_observation"
    content: str
    name: str | None = None
    source: Literal["user", "agent", "environment", "system"]


class Trajectory(BaseModel):
    model_config = ConfigDict(extra="forbid")
    schema_version: str = "1.2.0"
    id: str
    content: list[Annotated[ApiAction | MessageAction | TextObservation, Field(discriminator="class_")]]
    details: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _links(self) -> Trajectory:
        assert self.schema_version in SUPPORTED_SCHEMA_VERSIONS, self.schema_version
        actions: dict[str, int] = {}
        answered: set[str] = set()
        for i, item in enumerate(self.content):
            nxt = self.content[i + 1] if i + 1 < len(self.content) else None
            if isinstance(item, ApiAction) and isinstance(nxt, Observation) and item.tool_call_id is None:
                raise ValueError(f"tool action {i} is followed by a result but has no tool_call_id")
            if item.tool_call_id is None:
                continue
            if isinstance(item, MessageAction):
                raise ValueError(f"message action {i} has a tool_call_id")
            if isinstance(item, ApiAction):
                if item.tool_call_id in actions:
                    raise ValueError(f"duplicate tool_call_id {item.tool_call_id!r}")
                actions[item.tool_call_id] = i
            else:
                if item.tool_call_id not in actions or item.tool_call_id in answered:
                    raise ValueError(f"observation {i}: tool_call_id {item.tool_call_id!r} answers no open action")
                answered.add(item.tool_call_id)
        missing = set(actions) - answered
        if missing:
            raise ValueError(f"actions without a result: {sorted(missing)}")
        return self
