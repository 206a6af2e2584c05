"""Import Inspect AI eval logs: a ``.eval`` file (a zip with one ``samples/<id>_epoch_<n>.json``
per sample and epoch, and ``header.json`` with the eval's task and model) or a ``.json`` log
(``{"eval": ..., "samples": [...]}``).

Each sample is one episode: its ``messages`` (assistant ``tool_calls`` with ids and object
arguments, ``tool`` messages whose ``error`` makes the step a failure), the chosen scorer's
value as the reward (numbers, booleans, or Inspect's C/I/P/N grades), its epoch as the rollout.
Shapes as documented in Inspect's ``EvalSample``, ``ChatMessage*``, ``ToolCall`` and
``ToolCallError`` (see tests/data/inspect/SOURCE.md). Pure: the log is read by the import command.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from generators.importers.chat import BAD_SHAPE, Parsed, problem_of, text_of, tool_call, tool_result

GRADES = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0}  # Inspect's correct / incorrect / partial / no answer


def _reward(scores: Any, scorer: str | None) -> float | None:
    if not scores:
        return None
    if not isinstance(scores, dict):
        raise ValueError("scores is not an object")
    name = scorer or next(iter(scores))
    if name not in scores:
        raise ValueError(f"no score from scorer {name!r} (it has {', '.join(scores)})")
    value = scores[name].get("value") if isinstance(scores[name], dict) else None
    if isinstance(value, bool | int | float):
        return float(value)
    if isinstance(value, str) and value in GRADES:
        return GRADES[value]
    raise ValueError(f"score {name!r} has a value that is not a number or a C/I/P/N grade: {value!r}")


def _messages(sample: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i, msg in enumerate(sample.get("messages") or []):
        role = msg.get("role") if isinstance(msg, dict) else None
        if role in ("system", "user"):
            out.append({"role": role, "content": text_of(msg.get("content"))})
        elif role == "assistant":
            calls = [tool_call(str(c.get("id") or f"call_{i}_{j}"), c.get("function"), c.get("arguments") or {})
                     for j, c in enumerate(msg.get("tool_calls") or []) if isinstance(c, dict)]
            out.append({"role": "assistant", "content": text_of(msg.get("content")), **({"tool_calls": calls} if calls else {})})
        elif role == "tool":
            err = msg.get("error")
            error = (str(err.get("type") or "unknown"), str(err.get("message") or "")) if isinstance(err, dict) else None
            out.append(tool_result(str(msg.get("tool_call_id") or ""), text_of(msg.get("content")), error=error,
                                   name=str(msg.get("function") or "")))
        else:
            raise ValueError(f"message {i} has no known role")
    return out


def records(header: dict[str, Any], samples: Iterable[tuple[str, Any]], *, scorer: str | None = None) -> Iterator[Parsed]:
    """One chat record per sample ((where, sample JSON, or the exception that says why it is unreadable)), given
    the log's header, as they come."""
    spec = header.get("eval") if isinstance(header.get("eval"), dict) else {}
    task, model = str(spec.get("task") or "inspect"), str(spec.get("model") or "")
    for n, (where, sample) in enumerate(samples, start=1):
        if isinstance(sample, Exception):
            yield Parsed(where, n, None, str(sample))
            continue
        if not isinstance(sample, dict) or "id" not in sample:
            yield Parsed(where, n, None, "a sample must be an object with an id")
            continue
        try:
            value = {"messages": _messages(sample), "reward": _reward(sample.get("scores"), scorer),
                     "rollout": sample.get("epoch"), "model": model, "policy": "inspect",
                     "task": {"task_id": f"inspect:{task}:{sample['id']}"}}
        except BAD_SHAPE as exc:
            yield Parsed(where, n, None, problem_of(exc))
            continue
        yield Parsed(f"{where} (sample {sample['id']}, epoch {sample.get('epoch')})", n, value)
