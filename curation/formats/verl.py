"""verl's multi-turn RL dataset: one Parquet row per task, plus the tools and interaction YAML.

Row fields as verl's multi-turn examples write them: ``data_source``, ``agent_name``
(``tool_agent``), ``prompt`` (system + user chat), ``ability``, ``reward_model{style: rule,
ground_truth: the task spec as JSON}`` and ``extra_info{split, index, task_id,
need_tools_kwargs, tools_kwargs, interaction_kwargs}``. ``tools_kwargs`` names every tool of the
tools YAML (the same columns in every row; a tool the task does not expose answers with an error)
with ``create_kwargs{task_id}``; the tools find the task's spec in the export's task-spec file.
The reward is :func:`curation.verl_reward.compute_score` on the rollout and ``ground_truth``.
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
import yaml

from curation.formats.openai_chat import SYSTEM_PROMPT

AGENT = "tool_agent"
INTERACTION = "flywheel_user"
TOOL_CLASS = "curation.verl_reward.PhoneTool"
INTERACTION_CLASS = "curation.verl_reward.PhoneUser"


def verl_row(spec: dict[str, Any], index: int, tools: list[str]) -> dict[str, Any]:
    """The row of one task (``spec``: its TaskSpec as JSON data); ``tools``: the tools YAML's names."""
    return {
        "data_source": f"agent-flywheel/{spec['family']}",
        "agent_name": AGENT,
        "prompt": [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": spec["instruction"]}],
        "ability": "phone_agent",
        "reward_model": {"style": "rule", "ground_truth": json.dumps(spec, ensure_ascii=False, sort_keys=True)},
        "extra_info": {
            "split": spec["split"], "index": index, "task_id": spec["task_id"], "need_tools_kwargs": True,
            "tools_kwargs": {t: {"create_kwargs": {"task_id": spec["task_id"]}} for t in tools},
            "interaction_kwargs": {"name": INTERACTION, "task_id": spec["task_id"]},
        },
    }


def verl_schema(tools: list[str]) -> pa.Schema:
    """The Parquet schema of :func:`verl_row` for the tools YAML's ``tools``."""
    create = pa.struct([("create_kwargs", pa.struct([("task_id", pa.string())]))])
    return pa.schema([
        ("data_source", pa.string()), ("agent_name", pa.string()),
        ("prompt", pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))),
        ("ability", pa.string()),
        ("reward_model", pa.struct([("style", pa.string()), ("ground_truth", pa.string())])),
        ("extra_info", pa.struct([
            ("split", pa.string()), ("index", pa.int64()), ("task_id", pa.string()), ("need_tools_kwargs", pa.bool_()),
            ("tools_kwargs", pa.struct([(t, create) for t in tools])),
            ("interaction_kwargs", pa.struct([("name", pa.string()), ("task_id", pa.string())])),
        ])),
    ])


def tools_yaml(schemas: list[dict[str, Any]], task_specs: str) -> str:
    """verl's tool config: each tool's class, config (where the task specs are) and OpenAI schema."""
    return yaml.safe_dump({"tools": [{"class_name": TOOL_CLASS, "config": {"type": "native", "task_specs": task_specs},
                                      "tool_schema": s} for s in schemas]}, sort_keys=False, allow_unicode=True)


def interaction_yaml(task_specs: str) -> str:
    """verl's interaction config: the user turn that ends a rollout with the verifier's score."""
    return yaml.safe_dump({"interaction": [{"name": INTERACTION, "class_name": INTERACTION_CLASS,
                                            "config": {"task_specs": task_specs}}]}, sort_keys=False)


REWARD_MODULE = '''"""verl custom reward for an agent-flywheel export (needs agent-flywheel installed):
custom_reward_function.path=<this file> custom_reward_function.name=compute_score"""

from curation.verl_reward import compute_score  # noqa: F401
'''
