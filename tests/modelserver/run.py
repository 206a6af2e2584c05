"""Start the test server on a free 127.0.0.1 port, in a thread or in a child process."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.modelserver.faults import FaultConfig

DEFAULT_MODELS = ("flywheel-test",)
REPO = Path(__file__).resolve().parents[2]  # ``python -m tests.modelserver`` runs from the checkout


def free_port() -> int:
    """A port nobody listens on right now (127.0.0.1)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class ServerHandle:
    """A running test server: its base URL, its counters, its faults; ``close`` stops it."""

    root: str
    _stop: Any = field(repr=False, default=None)

    @property
    def base_url(self) -> str:
        return f"{self.root}/v1"

    def stats(self) -> dict[str, Any]:
        with urllib.request.urlopen(f"{self.root}/stats", timeout=10) as resp:
            return json.loads(resp.read())

    def set_faults(self, faults: FaultConfig) -> None:
        req = urllib.request.Request(f"{self.root}/admin/faults", data=json.dumps(faults.as_dict()).encode(),
                                     method="POST", headers={"content-type": "application/json"})
        with urllib.request.urlopen(req, timeout=10):
            pass

    def close(self) -> None:
        if self._stop is not None:
            self._stop()
            self._stop = None

    def __enter__(self) -> ServerHandle:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _wait_until_up(root: str, alive, deadline_s: float = 30.0) -> None:
    deadline = time.monotonic() + deadline_s
    while True:
        try:
            with urllib.request.urlopen(f"{root}/stats", timeout=2):
                return
        except OSError:
            if not alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the test model server at {root} did not start") from None
            time.sleep(0.05)  # polling until the port answers


def serve_in_thread(faults: FaultConfig | None = None, *, models: tuple[str, ...] = DEFAULT_MODELS,
                    api_key: str | None = None, policy_seed: int = 0) -> ServerHandle:
    """The server in a daemon thread of this process (for tests that kill the client, not the server)."""
    import uvicorn

    from tests.modelserver.app import ServerState, build_app

    port = free_port()
    state = ServerState(list(models), api_key, faults or FaultConfig(), policy_seed)
    config = uvicorn.Config(build_app(state), host="127.0.0.1", port=port, log_level="error", access_log=False,
                            lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name=f"modelserver-{port}", daemon=True)
    thread.start()
    root = f"http://127.0.0.1:{port}"
    _wait_until_up(root, thread.is_alive)

    def stop() -> None:
        server.should_exit = True
        thread.join(timeout=10)

    return ServerHandle(root, stop)


def serve_in_process(faults: FaultConfig | None = None, *, models: tuple[str, ...] = DEFAULT_MODELS,
                     api_key: str | None = None, policy_seed: int = 0) -> ServerHandle:
    """The server in a child process (so it does not share a CPU or an event loop with the client)."""
    port = free_port()
    args = [sys.executable, "-m", "tests.modelserver", "--port", str(port), "--policy-seed", str(policy_seed),
            "--faults", json.dumps((faults or FaultConfig()).as_dict()), "--models", ",".join(models)]
    if api_key:
        args += ["--api-key", api_key]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=REPO)
    root = f"http://127.0.0.1:{port}"
    try:
        _wait_until_up(root, lambda: proc.poll() is None)
    except RuntimeError:
        proc.kill()
        raise

    def stop() -> None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    return ServerHandle(root, stop)
