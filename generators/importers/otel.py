"""Import OpenTelemetry GenAI traces exported as OTLP JSON (``resourceSpans[].scopeSpans[].spans[]``
with typed attribute values; one export object, a list of them, or JSON Lines of them).

Spans are grouped into conversations by ``gen_ai.conversation.id`` (the trace's, when only some
of its spans carry it) or else by trace. A conversation is the input history of its last
inference span (``gen_ai.input.messages``) plus that span's first output message
(``gen_ai.output.messages``); message ``parts`` are ``text``, ``tool_call`` and
``tool_call_response``. ``execute_tool`` spans add what the messages lack: a call's result
(``gen_ai.tool.call.result``) and failure (span status ERROR or ``error.type``).
``gen_ai.tool.definitions`` become the task's tool schemas. Message content is opt-in in the
conventions, so a conversation without it is reported as malformed, never guessed.

The conventions' events are read too, as span events (``spans[].events[]``) or as log records
(``resourceLogs[].scopeLogs[].logRecords[]`` named by ``eventName`` or an ``event.name``
attribute): a ``gen_ai.client.inference.operation.details`` event carries the same message
attributes as an inference span and counts as one, in the trace of the span it belongs to.
``gen_ai.evaluation.result`` events are the scores: each is kept as a per-requirement result
(``evaluation:<gen_ai.evaluation.name>``, its attributes as detail), and the chosen one's
``gen_ai.evaluation.score.value`` (``--scorer NAME``; default the first in time) is the reward.
An evaluation finds its conversation by its trace or, without one, by ``gen_ai.response.id``.
Shapes as in the GenAI semantic conventions and OTLP's JSON encoding (tests/data/otel/SOURCE.md).
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from generators.importers.chat import BAD_SHAPE, Parsed, problem_of, tool_call, tool_result
from warehouse.errors import InputError

STATUS_ERROR = 2  # OTLP Status.code


def _value(v: Any) -> Any:
    """An OTLP AnyValue as a Python value."""
    if not isinstance(v, dict):
        return None
    for key in ("stringValue", "boolValue", "doubleValue"):
        if key in v:
            return v[key]
    if "intValue" in v:  # int64 is a string in OTLP JSON
        return int(v["intValue"])
    if "arrayValue" in v:
        return [_value(x) for x in (v["arrayValue"] or {}).get("values", [])]
    if "kvlistValue" in v:
        return {kv.get("key"): _value(kv.get("value")) for kv in (v["kvlistValue"] or {}).get("values", [])}
    return None


DETAILS = "gen_ai.client.inference.operation.details"
EVALUATION = "gen_ai.evaluation.result"


def _attrs(item: dict[str, Any]) -> dict[str, Any]:
    return {a.get("key"): _value(a.get("value")) for a in item.get("attributes") or []}


def _spans(export: Any) -> list[dict[str, Any]]:
    """The spans of one OTLP export, and its GenAI events (span events and log records) as span-like
    records with their ``event`` name, their time as ``startTimeUnixNano`` and their span's trace."""
    out = []
    for rs in export.get("resourceSpans") or []:
        for ss in rs.get("scopeSpans") or []:
            for span in ss.get("spans") or []:
                trace = str(span.get("traceId") or "")
                out.append({**span, "traceId": trace, "attrs": _attrs(span)})
                for ev in span.get("events") or []:
                    if ev.get("name") in (DETAILS, EVALUATION):
                        out.append({"traceId": trace, "spanId": span.get("spanId"), "event": ev["name"],
                                    "startTimeUnixNano": ev.get("timeUnixNano") or 0, "attrs": _attrs(ev)})
    for rl in export.get("resourceLogs") or []:
        for sl in rl.get("scopeLogs") or []:
            for rec in sl.get("logRecords") or []:
                attrs = _attrs(rec)
                name = rec.get("eventName") or attrs.get("event.name")
                if name in (DETAILS, EVALUATION):
                    out.append({"traceId": str(rec.get("traceId") or ""), "spanId": rec.get("spanId"), "event": name,
                                "startTimeUnixNano": rec.get("timeUnixNano") or rec.get("observedTimeUnixNano") or 0,
                                "attrs": attrs})
    return out


def _json_attr(attrs: dict[str, Any], key: str) -> Any:
    value = attrs.get(key)
    if isinstance(value, str):
        try:
            return json.loads(value)
        except RecursionError:
            raise ValueError(f"{key} is nested too deeply to read") from None
        except ValueError:
            raise ValueError(f"{key} is not JSON") from None
    return value


def _messages(history: list[Any], output: list[Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i, msg in enumerate(history + output[:1]):
        if not isinstance(msg, dict) or not isinstance(msg.get("parts"), list):
            raise ValueError(f"message {i} has no parts")
        role, parts = msg.get("role"), [p for p in msg["parts"] if isinstance(p, dict)]
        text = "\n".join(str(p.get("content", "")) for p in parts if p.get("type") == "text")
        if role in ("system", "user"):
            out.append({"role": role, "content": text})
        elif role == "assistant":
            calls = [tool_call(str(p.get("id") or f"call_{i}_{j}"), p.get("name"), p.get("arguments") or {})
                     for j, p in enumerate(parts) if p.get("type") == "tool_call"]
            out.append({"role": "assistant", "content": text, **({"tool_calls": calls} if calls else {})})
        elif role == "tool":
            for p in parts:
                if p.get("type") == "tool_call_response":
                    out.append(tool_result(str(p.get("id") or ""), p.get("response")))
        else:
            raise ValueError(f"message {i} has no known role")
    return out


def _with_tool_spans(messages: list[dict[str, Any]], tool_spans: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Results and failures the execute_tool spans record: a failure replaces the result text,
    a result the history lacks is added after its call."""
    by_id = {s["attrs"].get("gen_ai.tool.call.id"): s for s in tool_spans if s["attrs"].get("gen_ai.tool.call.id")}
    answered = {m["tool_call_id"] for m in messages if m["role"] == "tool"}
    out: list[dict[str, Any]] = []
    for m in messages:
        span = by_id.get(m.get("tool_call_id")) if m["role"] == "tool" else None
        if span is not None and _failed(span):
            m = tool_result(m["tool_call_id"], "", error=_failure(span))
        out.append(m)
        for call in m.get("tool_calls") or []:
            span = by_id.get(call["id"])
            if call["id"] not in answered and span is not None:
                if _failed(span):
                    out.append(tool_result(call["id"], "", error=_failure(span)))
                elif "gen_ai.tool.call.result" in span["attrs"]:
                    out.append(tool_result(call["id"], span["attrs"]["gen_ai.tool.call.result"]))
    return out


def _failed(span: dict[str, Any]) -> bool:
    return (span.get("status") or {}).get("code") in (STATUS_ERROR, "STATUS_CODE_ERROR") or "error.type" in span["attrs"]


def _failure(span: dict[str, Any]) -> tuple[str, str]:
    return str(span["attrs"].get("error.type") or "ERROR"), str((span.get("status") or {}).get("message") or "")


def _tools(defs: Any) -> list[dict[str, Any]] | None:
    if not isinstance(defs, list):
        return None
    out = [{"type": "function", "function": {k: d[k] for k in ("name", "description", "parameters") if k in d}}
           for d in defs if isinstance(d, dict) and isinstance(d.get("name"), str)]
    return out or None


def _scores(evaluations: list[dict[str, Any]], scorer: str | None) -> tuple[float | None, list[dict[str, Any]]]:
    """(the chosen evaluation's score value, every evaluation as a {id, passed, detail} check)."""
    checks, values = [], {}
    for ev in evaluations:
        a = ev["attrs"]
        name = a.get("gen_ai.evaluation.name")
        if not isinstance(name, str) or not name:
            raise ValueError("a gen_ai.evaluation.result event without gen_ai.evaluation.name")
        value = a.get("gen_ai.evaluation.score.value")
        if isinstance(value, int | float) and not isinstance(value, bool):
            values.setdefault(name, float(value))
            passed = float(value) >= 0.5
        else:
            passed = str(a.get("gen_ai.evaluation.score.label") or "").lower() in ("pass", "passed", "correct", "true")
        checks.append({"id": f"evaluation:{name}", "passed": passed, "detail": a})
    if not checks:
        if scorer:
            raise ValueError(f"no gen_ai.evaluation.result event, so no score from scorer {scorer!r}")
        return None, []
    name = scorer or checks[0]["id"].removeprefix("evaluation:")
    if name not in {c["id"].removeprefix("evaluation:") for c in checks}:
        raise ValueError(f"no evaluation named {name!r} (it has {', '.join(c['id'][11:] for c in checks)})")
    return values.get(name), checks


def _conversation(key: str, spans: list[dict[str, Any]], scorer: str | None = None) -> dict[str, Any]:
    spans = sorted(spans, key=lambda s: int(s.get("startTimeUnixNano") or 0))
    reward, checks = _scores([s for s in spans if s.get("event") == EVALUATION], scorer)
    spans = [s for s in spans if s.get("event") != EVALUATION]
    chats = [s for s in spans if "gen_ai.input.messages" in s["attrs"] and "gen_ai.output.messages" in s["attrs"]]
    if not chats:
        raise ValueError("no message content (gen_ai.input.messages / gen_ai.output.messages are opt-in: "
                         "turn content capture on where the traces are recorded)")
    last = chats[-1]
    history, output = _json_attr(last["attrs"], "gen_ai.input.messages"), _json_attr(last["attrs"], "gen_ai.output.messages")
    if not isinstance(history, list) or not isinstance(output, list):
        raise ValueError("gen_ai.input.messages / gen_ai.output.messages are not lists of messages")
    tool_spans = [s for s in spans if s["attrs"].get("gen_ai.operation.name") == "execute_tool"]
    messages = _with_tool_spans(_messages(history, output), tool_spans)
    defs = next((_json_attr(s["attrs"], "gen_ai.tool.definitions") for s in reversed(chats)
                 if "gen_ai.tool.definitions" in s["attrs"]), None)
    attrs = last["attrs"]
    value = {"messages": messages, "model": str(attrs.get("gen_ai.response.model") or attrs.get("gen_ai.request.model") or ""),
             "policy": next((str(s["attrs"]["gen_ai.agent.name"]) for s in spans if s["attrs"].get("gen_ai.agent.name")),
                            "otel"),
             "task": {"task_id": f"otel:{key}"}}
    tools = _tools(defs)
    if tools:
        value["tools"] = tools
    if checks:
        value |= {"reward": reward, "reward_checks": checks}
    return value


def records(exports: list[Any], name: str, scorer: str | None = None) -> list[Parsed]:
    """One chat record per conversation in the file ``name``'s parsed records (or the reason it cannot be one);
    ``scorer``: the evaluation whose score is the reward (default: the first)."""
    spans: list[dict[str, Any]] = []
    bad: list[Any] = []
    for rec in exports:
        if rec.problem:
            bad.append(rec)
        elif isinstance(rec.value, dict) and ("resourceSpans" in rec.value or "resourceLogs" in rec.value):
            try:
                spans += _spans(rec.value)
            except BAD_SHAPE as exc:
                bad.append(Parsed(rec.where, rec.number, None, problem_of(exc)))
        else:
            bad.append(Parsed(rec.where, rec.number, None, "not an OTLP export (no resourceSpans or resourceLogs)"))
    if not spans and not bad:
        raise InputError(f"{name}: no spans (expected OTLP JSON with resourceSpans)")
    conv_of_trace = {s.get("traceId"): s["attrs"]["gen_ai.conversation.id"] for s in spans
                     if s["attrs"].get("gen_ai.conversation.id")}

    def group_of(s: dict[str, Any]) -> str:
        conv = s["attrs"].get("gen_ai.conversation.id") or conv_of_trace.get(s.get("traceId"))
        return f"conversation {conv}" if conv else f"trace {s.get('traceId')}"

    by_response = {s["attrs"]["gen_ai.response.id"]: group_of(s) for s in spans
                   if s.get("event") != EVALUATION and s["attrs"].get("gen_ai.response.id")}
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for s in spans:
        if s.get("event") == EVALUATION and not s.get("traceId"):  # no trace: the response it evaluated
            key = by_response.get(s["attrs"].get("gen_ai.response.id"))
            if key is None:
                bad.append(Parsed(f"evaluation {s['attrs'].get('gen_ai.evaluation.name')!r}", 0, None,
                                  "evaluates no response in the file (no trace, unknown gen_ai.response.id)"))
                continue
            groups[key].append(s)
        else:
            groups[group_of(s)].append(s)
    out = list(bad)
    for n, (where, group) in enumerate(groups.items(), start=1):
        try:
            out.append(Parsed(where, n, _conversation(where.split(" ", 1)[1], group, scorer)))
        except BAD_SHAPE as exc:
            out.append(Parsed(where, n, None, problem_of(exc)))
    return out
