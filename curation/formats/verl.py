"""verl's multi-turn RL dataset: one Parquet row per task, plus the tools and interaction YAML.

Row fields as verl's multi-turn examples write them: ``data_source``, ``agent_name``
(``tool_agent``), ``prompt`` (system + user chat), ``ability``, ``reward_model{style: rule,
ground_truth: the task spec as JSON}`` and ``extra_info{split, index, task_id,
need_tools_kwargs, tools_kwargs, interaction_kwargs, group_success_rate}``. ``tools_kwargs`` has a
column per tool of the tools YAML (Parquet gives every row the same columns): the task's own tools
(its apps' and services', and finish and ask_user) carry ``create_kwargs{task_id}``, every other is
null, and the export's dataset class (``verl.dataset.py``) drops the nulls, so verl offers each
task its own tools. The tools find the task's spec in the export's task-spec file. The reward is
:func:`curation.verl_reward.compute_score` on the rollout and ``ground_truth``.
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
import yaml

from curation.formats.openai_chat import SYSTEM_PROMPT
from generators.phone.tools import META_SCHEMAS

AGENT = "tool_agent"
INTERACTION = "flywheel_user"
TOOL_CLASS = "curation.verl_reward.PhoneTool"
INTERACTION_CLASS = "curation.verl_reward.PhoneUser"


def offered(spec: dict[str, Any]) -> list[str]:
    """The tools a task offers: its own and the meta tools every episode ends with."""
    return sorted(set(spec["tools"]) | set(META_SCHEMAS))


def verl_row(spec: dict[str, Any], index: int, tools: list[str], success_rate: float | None = None) -> dict[str, Any]:
    """The row of one task (``spec``: its TaskSpec as JSON data); ``tools``: the tools YAML's names;
    ``success_rate``: its group's (for the competence-aware reward)."""
    own = set(offered(spec))
    return {
        "data_source": f"agent-flywheel/{spec['family']}",
        "agent_name": AGENT,
        "prompt": [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": spec["instruction"]}],
        "ability": "phone_agent",
        "reward_model": {"style": "rule", "ground_truth": json.dumps(spec, ensure_ascii=False, sort_keys=True)},
        "extra_info": {
            "split": spec["split"], "index": index, "task_id": spec["task_id"], "need_tools_kwargs": True,
            "tools_kwargs": {t: {"create_kwargs": {"task_id": spec["task_id"]}} if t in own else None for t in tools},
            "interaction_kwargs": {"name": INTERACTION, "task_id": spec["task_id"]},
            "group_success_rate": success_rate,
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
            ("group_success_rate", pa.float64()),
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
custom_reward_function.path=<this file> custom_reward_function.name=compute_score
(options: +custom_reward_function.reward_kwargs.partial=true, ...cost_weight=0.5, ...competence=true)"""

from curation.verl_reward import compute_score  # noqa: F401
'''

DATASET_MODULE = '''"""verl dataset for an agent-flywheel export (needs verl and agent-flywheel installed):
data.custom_cls.path=<this file> data.custom_cls.name=FlywheelDataset. Each row offers its task's own
tools: the null tools_kwargs columns (tools of other tasks) are dropped."""

from verl.utils.dataset.rl_dataset import RLHFDataset

from curation.verl_reward import offered_tools


class FlywheelDataset(RLHFDataset):
    def __getitem__(self, item):
        row = super().__getitem__(item)
        if "tools_kwargs" in row:
            row["tools_kwargs"] = offered_tools(row["tools_kwargs"])
        return row
'''
