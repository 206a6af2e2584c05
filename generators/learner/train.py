"""SFT with LoRA through TRL's ``SFTTrainer`` on a ``trl`` export's train split, on the CPU.

The export is loaded as a user's trainer loads it (``datasets`` through its dataset card) and
trained the way its rows are meant to be: the loss falls only on each row's completion
(``completion_only_loss``: turns a reviewer masked sit in the prompt) and, inside a completion, only
on what the assistant wrote (``assistant_only_loss`` with our template's generation markers: tool
results do not train, the end-of-turn token does). Rows are truncated to ``max_length`` tokens with
their masks cut alike; a row whose prompt alone fills ``max_length`` has nothing left to train and
is left out (and counted). The LoRA adapter is merged into the base and saved, with the tokenizer
and our template, as a plain model folder that ``flywheel serve-model`` serves.
"""

from __future__ import annotations

import json
import shutil
import time
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from generators.learner.base_model import load_model
from generators.learner.data import export_manifest, load_split, trl_export_dir
from warehouse.errors import InputError

REPORT_FILE = "training.json"
IGNORED = -100  # the label of a token that carries no loss
MIN_TRAINABLE = 8  # tokens of completion a truncated row must keep to be worth a step


@dataclass(frozen=True)
class TrainConfig:
    max_length: int = 1024  # tokens per row after truncation (a row is ~600-2,000 with its tools)
    epochs: float = 1.0
    max_steps: int = -1  # optimizer steps; overrides epochs when positive
    learning_rate: float = 1e-3  # LoRA on a 135M model learns a new output format fast at this rate
    lora_rank: int = 16
    lora_layers: int = 0  # adapt only the top N decoder layers (0: all): the backward pass stops below them
    batch_size: int = 1
    grad_accum: int = 4
    max_rows: int | None = None  # the first N rows after a seeded shuffle
    seed: int = 0
    threads: int | None = None
    precision: str = "auto"  # "bf16" (autocast), "fp32", or "auto": bf16 where the CPU computes it natively


@dataclass
class TrainReport:
    export: str
    base: str
    out: str
    config: dict[str, Any]
    release: str | None = None
    precision: str = "fp32"  # what the training computed in (bf16: autocast)
    rows: int = 0  # rows trained on
    rows_too_long: int = 0  # rows whose prompt alone filled max_length
    tokens: int = 0  # tokens in the trained rows, after truncation
    trained_tokens: int = 0  # of those, tokens that carry loss
    steps: int = 0
    losses: list[float] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def tokens_per_second(self) -> float:
        return self.tokens * max(self.config.get("epochs", 1.0), 0) / self.seconds["train"] if self.seconds.get("train") else 0.0


def _trainable_rows(dataset: Any, tokenizer: Any, max_length: int) -> tuple[Any, int]:
    """``dataset`` without rows whose prompt leaves fewer than MIN_TRAINABLE tokens of ``max_length``."""
    def fits(row: dict[str, Any]) -> bool:
        prompt = tokenizer.apply_chat_template(row["prompt"], tools=row["tools"], add_generation_prompt=True,
                                               return_dict=True)["input_ids"]
        return len(prompt) + MIN_TRAINABLE <= max_length
    keep = [i for i, row in enumerate(dataset) if fits(row)]
    return dataset.select(keep), len(dataset) - len(keep)


PRECISIONS = ("auto", "bf16", "fp32")


def native_bf16() -> bool:
    """Whether this CPU multiplies bfloat16 natively (AVX512-BF16 or AMX). Elsewhere bf16 is emulated
    and slower than float32, so ``auto`` keeps float32 there."""
    import torch  # deferred: the train extra

    return any(getattr(torch.cpu, check, lambda: False)() for check in ("_is_avx512_bf16_supported",
                                                                         "_is_amx_tile_supported"))


def use_bf16(precision: str) -> bool:
    """Whether to train under bfloat16 autocast (the weights and the adapter stay float32)."""
    if precision not in PRECISIONS:
        raise InputError(f"--precision {precision!r}: one of {', '.join(PRECISIONS)}")
    return precision == "bf16" or (precision == "auto" and native_bf16())


class _Steps:
    """A TrainerCallback (built lazily: transformers is optional) that reports each optimizer step."""

    def __new__(cls, on_step: Callable[[int, int, float | None], None], losses: list[float]):
        from transformers import TrainerCallback  # deferred: the train extra

        class StepReport(TrainerCallback):
            def on_log(self, args, state, control, logs=None, **kwargs):  # every step: logging_steps=1
                if logs and "loss" in logs:
                    losses.append(float(logs["loss"]))
                    on_step(state.global_step, state.max_steps, losses[-1])

        return StepReport()


def decoder_linear_names(model: Any) -> list[str]:
    """The names of the linear layers inside the model's decoder layers (``model.layers.N.``), e.g. q_proj."""
    from torch import nn  # deferred: the train extra

    return sorted({name.rsplit(".", 1)[-1] for name, module in model.named_modules()
                   if isinstance(module, nn.Linear) and ".layers." in name})


def _adapted_layers(model: Any, top: int) -> dict[str, Any]:
    """LoRA's target: every linear layer, or with ``top`` those of the top ``top`` decoder layers only."""
    if not top:
        return {"target_modules": "all-linear"}
    layers, names = int(model.config.num_hidden_layers), decoder_linear_names(model)
    if top > layers:
        raise InputError(f"--lora-layers {top}: the model has {layers} decoder layers")
    if not names:
        raise InputError(f"--lora-layers {top}: the model has no decoder layers named layers.N (a Llama-like "
                         "model); leave --lora-layers out to adapt every linear layer")
    return {"target_modules": names, "layers_to_transform": list(range(layers - top, layers)), "layers_pattern": "layers"}


def build_trainer(export: Path, base: Path, config: TrainConfig, work_dir: Path,
                  on_step: Callable[[int, int, float | None], None] | None = None) -> tuple[Any, TrainReport]:
    """The SFT trainer over ``export``'s train split (not yet trained) and the report it fills."""
    from peft import LoraConfig  # deferred: the train extra
    from transformers import PrinterCallback  # deferred: the train extra
    from trl import SFTConfig, SFTTrainer  # deferred: the train extra

    folder = trl_export_dir(export)
    release = (export_manifest(folder).get("release") or {}).get("id")
    bf16 = use_bf16(config.precision)
    report = TrainReport(export=str(folder), base=str(base), out="", config=asdict(config), release=release,
                         precision="bf16" if bf16 else "fp32")
    start = time.perf_counter()
    tokenizer, model = load_model(base, threads=config.threads)
    report.seconds["load"] = round(time.perf_counter() - start, 1)
    dataset = load_split(folder, "train", cache_dir=work_dir / "datasets").shuffle(seed=config.seed)
    if config.max_rows:
        dataset = dataset.select(range(min(config.max_rows, len(dataset))))
    dataset, report.rows_too_long = _trainable_rows(dataset, tokenizer, config.max_length)
    if not len(dataset):
        raise InputError(f"no train row of {folder} fits in --max-length {config.max_length} tokens "
                         f"({report.rows_too_long} rows' prompts alone are longer)")
    with warnings.catch_warnings():  # the libraries' deprecation notes are for us, not for a user's run
        warnings.simplefilter("ignore")
        args = SFTConfig(
            output_dir=str(work_dir), max_length=config.max_length, truncation_mode="keep_start",
            completion_only_loss=True, assistant_only_loss=True, num_train_epochs=config.epochs,
            max_steps=config.max_steps, learning_rate=config.learning_rate, lr_scheduler_type="constant",
            per_device_train_batch_size=config.batch_size, gradient_accumulation_steps=config.grad_accum,
            logging_steps=1, save_strategy="no", report_to=[], use_cpu=True, bf16=bf16, fp16=False,
            # a 135M model's activations fit easily: recomputing them in the backward pass (TRL's
            # default) spends a second forward pass on memory this machine does not need
            gradient_checkpointing=False,
            disable_tqdm=True, seed=config.seed, data_seed=config.seed, dataloader_num_workers=0,
            shuffle_dataset=False,
        )
        lora = LoraConfig(r=config.lora_rank, lora_alpha=2 * config.lora_rank, lora_dropout=0.0,
                          task_type="CAUSAL_LM", **_adapted_layers(model, config.lora_layers))
        trainer = SFTTrainer(model=model, args=args, train_dataset=dataset, processing_class=tokenizer,
                             peft_config=lora)
    trainer.remove_callback(PrinterCallback)
    trainer.add_callback(_Steps(on_step or (lambda *_: None), report.losses))
    processed = trainer.train_dataset
    report.rows = len(processed)
    for labels in processed["labels"]:
        report.tokens += len(labels)
        report.trained_tokens += sum(1 for label in labels if label != IGNORED)
    return trainer, report


def _publish(tmp: Path, out: Path) -> None:
    """``tmp`` becomes ``out`` (a model folder someone may be serving is replaced only once the new one is whole)."""
    old = out.with_name(f".{out.name}.old")
    if old.exists():
        shutil.rmtree(old)
    if out.exists():
        out.rename(old)
    tmp.rename(out)
    if old.exists():
        shutil.rmtree(old)


def train(export: Path, out: Path, base: Path, config: TrainConfig,
          on_step: Callable[[int, int, float | None], None] | None = None) -> TrainReport:
    """Fine-tune ``base`` on ``export``; the merged model lands in ``out`` whole (killed midway,
    nothing is left in ``out`` but what was there before; a rerun starts the training again)."""
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {out} exists and is not a folder")
    out.parent.mkdir(parents=True, exist_ok=True)
    for stale in out.parent.glob(f".{out.name}.tmp-*"):  # a killed run's half-written folder
        shutil.rmtree(stale, ignore_errors=True)
    tmp = out.with_name(f".{out.name}.tmp-{int(time.time() * 1000)}")
    tmp.mkdir()
    try:
        trainer, report = build_trainer(export, base, config, tmp / "trainer", on_step)
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            trainer.train()
        report.steps = trainer.state.global_step
        report.seconds["train"] = round(time.perf_counter() - start, 1)
        start = time.perf_counter()
        merged = trainer.model.merge_and_unload()
        shutil.rmtree(tmp / "trainer", ignore_errors=True)
        merged.save_pretrained(tmp)
        trainer.processing_class.save_pretrained(tmp)
        report.seconds["save"] = round(time.perf_counter() - start, 1)
        report.out = str(out)
        (tmp / REPORT_FILE).write_text(json.dumps(asdict(report), indent=2) + "\n")
        _publish(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return report
