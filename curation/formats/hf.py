"""Parquet for Hugging Face ``datasets``: one row per episode, messages as a list of structs.

``datasets.load_dataset("parquet", data_files={"train": "sft.train.parquet", ...})``
loads it. Messages are in the one schema of :mod:`curation.formats.messages` (object arguments,
named tool messages); a message's ``tool_calls`` is that list as JSON text, so every row has one
Parquet schema (``json.loads`` gives the calls a chat template takes).
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

from curation.formats.messages import template_messages

MESSAGE = pa.struct([
    ("role", pa.string()), ("content", pa.string()), ("tool_calls", pa.string()),
    ("tool_call_id", pa.string()), ("name", pa.string()), ("loss", pa.bool_()),
])
SCHEMA = pa.schema([
    ("episode_id", pa.string()), ("task_id", pa.string()), ("family", pa.string()), ("template", pa.string()),
    ("split", pa.string()), ("round_id", pa.string()), ("policy", pa.string()),
    ("messages", pa.list_(MESSAGE)), ("tools", pa.string()),
])


def to_hf_row(turns: list[tuple[dict[str, Any], int | None]], masked: set[int], meta: dict[str, Any],
              tools: list[dict[str, Any]]) -> dict[str, Any]:
    """One Parquet row in :data:`SCHEMA`."""
    messages = []
    for msg, step in template_messages(turns):
        messages.append({
            "role": msg["role"], "content": msg.get("content"),
            "tool_calls": json.dumps(msg["tool_calls"], ensure_ascii=False) if msg.get("tool_calls") else None,
            "tool_call_id": msg.get("tool_call_id"), "name": msg.get("name"),
            "loss": msg["role"] == "assistant" and step not in masked,
        })
    return {**{k: meta.get(k) for k in ("episode_id", "task_id", "family", "template", "split", "round_id", "policy")},
            "messages": messages, "tools": json.dumps(tools, ensure_ascii=False)}
