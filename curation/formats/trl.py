"""TRL's SFT shape for tool calling: conversational prompt/completion rows.

Messages are OpenAI chat messages as TRL's chat templates take them: assistant ``tool_calls``
whose ``arguments`` are objects, ``tool`` messages with the tool's ``name``; every row has the
task's ``tools`` (JSON schemas). ``datasets.load_dataset("json", ...)`` loads the files (nested
values of varying keys load as its ``Json`` type, unchanged).

TRL has no per-message weight, so an episode is split at its masked turns: each row's
``completion`` is a run of agent turns that train, its ``prompt`` everything before it (masked
turns and their results included). Train with ``completion_only_loss=True`` (the default for
prompt/completion data); with ``assistant_only_loss=True`` as well (a chat template with
``{% generation %}`` markers), tool results inside a completion do not train either. Agent turns after the last trainable one appear in no row.

Tool-call arguments stay objects, as TRL and transformers' chat templates take them (some templates
need objects; a JSON string would be rendered as a string). Objects of different keys in different
files are what ``datasets`` cannot unify on its own, so the export carries a dataset card
(``README.md``) that names each split's file and declares every column as ``datasets``' ``Json``
feature: ``datasets.load_dataset(EXPORT_DIR)`` loads all splits in one call, with one schema.
"""

from __future__ import annotations

import json
from typing import Any

from curation.formats.messages import template_messages


def trl_messages(turns: list[tuple[dict[str, Any], int | None]]) -> list[tuple[dict[str, Any], int | None]]:
    """Chat turns with object arguments and named tool messages (the one schema of
    :mod:`curation.formats.messages`)."""
    return template_messages(turns)


def trl_rows(turns: list[tuple[dict[str, Any], int | None]], masked: set[int], meta: dict[str, Any],
             tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows of one episode (see the module doc); ``meta`` goes into each row's ``metadata``."""
    msgs = trl_messages(turns)
    is_agent = [m["role"] == "assistant" for m, _ in msgs]
    rows: list[dict[str, Any]] = []
    start = next((i for i, a in enumerate(is_agent) if a), len(msgs))

    def emit(begin: int, end: int) -> None:
        last = max((i for i in range(begin, end) if is_agent[i]), default=None)
        if last is None:
            return
        steps = [s for m, s in msgs[begin:last + 1] if s is not None]
        rows.append({"prompt": [m for m, _ in msgs[:begin]], "completion": [m for m, _ in msgs[begin:last + 1]],
                     "tools": tools, "metadata": {**meta, "steps": steps, "masked_steps": sorted(masked)}})

    i = start
    while i < len(msgs):
        if is_agent[i] and msgs[i][1] in masked:
            emit(start, i)
            i += 1
            while i < len(msgs) and not is_agent[i]:
                i += 1
            start = i
            continue
        i += 1
    emit(start, len(msgs))
    return rows


# every column as datasets' Json feature: messages and tool schemas vary in shape from row to row
_FEATURES = (("prompt", "list"), ("completion", "list"), ("tools", "list"), ("metadata", "dtype"))


def dataset_card(splits: dict[str, tuple[str, int, int]]) -> str:
    """The export's ``README.md``: a dataset card whose YAML header lists each split's file (``splits``:
    split -> file name, rows, bytes) and the features, so ``datasets.load_dataset`` on the export
    directory reads every split with one schema. The split sizes are there for ``datasets``' cache
    too: it keys a local folder's cache by the folder's name and its card, not by the files, so two
    exports in folders of the same name with the same card would share one cache, and the second
    load would return the first export's rows."""
    lines = ["---", "configs:", "- config_name: default", "  data_files:"]
    for split, (name, _, _) in splits.items():
        lines += [f"  - split: {split}", f"    path: {json.dumps(name)}"]
    lines += ["dataset_info:", "  features:"]
    lines += [f"  - name: {column}\n    {kind}: json" for column, kind in _FEATURES]
    lines += ["  splits:"]
    for split, (_, rows, size) in splits.items():
        lines += [f"  - name: {split}", f"    num_bytes: {size}", f"    num_examples: {rows}"]
    lines += [f"  download_size: {sum(size for _, _, size in splits.values())}"]
    lines += ["---", "", "TRL prompt/completion rows for tool calling, written by agent-flywheel "
              "(`flywheel export --format trl`).", "", "```python", "import datasets",
              'ds = datasets.load_dataset("path/to/this/folder")  # every split, one schema', "```", ""]
    return "\n".join(lines)
