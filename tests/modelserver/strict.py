"""Request checks that real servers make, for the test server's ``strict`` mode. Pure.

llama.cpp's server (llama-cpp-python) validates each message against typed schemas and
answers a request that breaks them with a 500 whose body is pydantic's validation error:
an assistant turn's ``content`` must be a string when present (null is refused), a tool
call needs a string ``id``, ``type`` "function" and string ``name`` and ``arguments``,
a tool result needs a string ``tool_call_id``. Other servers add rules of their own
(OpenAI: ids of at most 40 characters; a tool result must answer a call made earlier in
the conversation); the strict mode refuses anything one of them would.
"""

from __future__ import annotations

from typing import Any

MAX_ID = 40


def _error(loc: tuple, kind: str, msg: str, value: Any) -> dict[str, Any]:
    return {"type": kind, "loc": ("body", "messages", *loc), "msg": msg, "input": value}


def _string(value: Any, loc: tuple, errors: list) -> None:
    if not isinstance(value, str):
        errors.append(_error(loc, "string_type", "Input should be a valid string", value))


def message_errors(messages: Any) -> list[dict[str, Any]]:
    """Validation errors in pydantic's shape (``type``, ``loc``, ``msg``, ``input``); empty when fine."""
    if not isinstance(messages, list):
        return [{"type": "list_type", "loc": ("body", "messages"), "msg": "Input should be a valid list",
                 "input": messages}]
    errors: list[dict[str, Any]] = []
    called: set[str] = set()
    for i, m in enumerate(messages):
        if not isinstance(m, dict):
            errors.append(_error((i,), "dict_type", "Input should be a valid dictionary", m))
            continue
        role = m.get("role")
        if role == "assistant":
            if "content" in m:
                _string(m["content"], (i, "typed-dict", "content"), errors)
            for j, call in enumerate(m.get("tool_calls") or []):
                where = (i, "typed-dict", "tool_calls", j)
                call_id, fn = call.get("id"), call.get("function") or {}
                _string(call_id, (*where, "id"), errors)
                if isinstance(call_id, str) and (not call_id or len(call_id) > MAX_ID or call_id in called):
                    errors.append(_error((*where, "id"), "value_error",
                                         f"tool call ids must be 1 to {MAX_ID} characters and unique", call_id))
                called.add(str(call_id))
                if call.get("type") != "function":
                    errors.append(_error((*where, "type"), "literal_error", "Input should be 'function'",
                                         call.get("type")))
                _string(fn.get("name"), (*where, "function", "name"), errors)
                _string(fn.get("arguments"), (*where, "function", "arguments"), errors)
        elif role == "tool":
            _string(m.get("tool_call_id"), (i, "typed-dict", "tool_call_id"), errors)
            _string(m.get("name"), (i, "typed-dict", "name"), errors)
            if isinstance(m.get("tool_call_id"), str) and m["tool_call_id"] not in called:
                errors.append(_error((i, "typed-dict", "tool_call_id"), "value_error",
                                     "a tool result must answer a tool call made earlier", m["tool_call_id"]))
        elif role in ("system", "user"):
            if m.get("content") is not None and not isinstance(m.get("content"), str | list):
                errors.append(_error((i, "typed-dict", "content"), "string_type", "Input should be a valid string",
                                     m.get("content")))
        else:
            errors.append(_error((i, "role"), "literal_error",
                                 "Input should be 'system', 'user', 'assistant' or 'tool'", role))
    return errors


def refusal_body(errors: list[dict[str, Any]]) -> dict[str, Any]:
    """The body llama-cpp-python's server sends for a request that fails validation (with a 500)."""
    return {"error": {"message": str(errors), "type": "internal_server_error", "param": None, "code": None}}
