"""The llama.cpp server install's smoke test: start the installed server, ask it one chat
completion with tools and a prompt of a few hundred tokens, stop it.

A build for the wrong CPU answers ``/v1/models`` and a one-token prompt, then dies in its
first real decode; this asks what a round asks. Standard library only: it runs in the
server's own environment. One line on failure, exit 1.
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

APPS = ("contacts", "messages", "mail", "calendar", "clock", "notes", "files", "gallery", "wallet", "shop",
        "travel", "maps", "weather", "media", "settings")
SYSTEM = ("You are a phone assistant. You act for the user through the tools you are given and never "
          "invent a result. " + " ".join(f"The {app} app keeps the user's {app} data; read it before you change "
                                         "it, and change only what the user asked for." for app in APPS))


def tool(name: str, description: str, **params: str) -> dict:
    return {"type": "function", "function": {
        "name": name, "description": description,
        "parameters": {"type": "object", "properties": {k: {"type": "string", "description": v}
                                                         for k, v in params.items()},
                       "required": list(params)}}}


TOOLS = [tool("send_message", "Send a text message to a contact.", to="the contact's name", body="the text"),
         tool("search_contacts", "Find contacts by name.", query="part of a name"),
         tool("create_event", "Add an event to the calendar.", title="the title", start="ISO date and time")]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def telling_line(log: str) -> str:
    """The line of a server's log that says what went wrong (a crash's "Fatal Python error"), else its last."""
    lines = [line.strip() for line in log.splitlines() if line.strip()]
    telling = [line for line in lines if re.search(r"fatal|segmentation|abort|illegal|error", line, re.I)
               and not line.startswith("File ")]
    return ((telling or lines or ["(nothing)"])[-1])[:200]


def died(proc: subprocess.Popen) -> str:
    rc = proc.poll()
    if rc is None:
        return ""
    if rc < 0:
        try:
            return f"killed by {signal.Signals(-rc).name}"
        except ValueError:
            return f"killed by signal {-rc}"
    return f"exited with status {rc}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", required=True, help="the server environment's python")
    parser.add_argument("--model", required=True, help="the GGUF file")
    parser.add_argument("--module", default="llama_cpp.server", help="the server module (tests pass another)")
    parser.add_argument("--rebuild-hint", default="scripts/llama-server.sh install --rebuild")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds for the server to start and answer")
    args = parser.parse_args()

    port = free_port()
    log = tempfile.TemporaryFile(mode="w+")
    cmd = [args.python, "-X", "faulthandler", "-m", args.module, "--model", args.model, "--model_alias", "smollm2",
           "--chat_format", "chatml-function-calling", "--host", "127.0.0.1", "--port", str(port),
           "--n_ctx", "4096", "--verbose", "False"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log, text=True)
    root = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + args.timeout

    def fail(what: str) -> int:
        log.seek(0)
        print(f"smoke test failed: llama.cpp's server {what}; its log: {telling_line(log.read())}. "
              f"Rebuild it: {args.rebuild_hint}", file=sys.stderr)
        return 1

    try:
        while True:
            if how := died(proc):
                return fail(f"{how} before it answered")
            try:
                with urllib.request.urlopen(f"{root}/v1/models", timeout=2) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                return fail(f"did not answer on {root} within {args.timeout:g}s")
            time.sleep(0.2)  # polling until the port answers

        body = {"model": "smollm2", "temperature": 0.0, "max_tokens": 16, "tools": TOOLS, "tool_choice": "auto",
                "messages": [{"role": "system", "content": SYSTEM},
                             {"role": "user", "content": "Text Ana that the meeting moved to 3 pm, please."}]}
        request = urllib.request.Request(f"{root}/v1/chat/completions", data=json.dumps(body).encode(),
                                         headers={"content-type": "application/json"}, method="POST")
        started = time.monotonic()
        try:
            with urllib.request.urlopen(request, timeout=max(1.0, deadline - time.monotonic())) as resp:
                reply = json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            return fail(f"answered a chat completion with tools with HTTP {exc.code}")
        except (OSError, ValueError) as exc:
            try:  # a crash drops the connection a moment before the process is gone
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
            how = died(proc)
            return fail(f"crashed on a chat completion with tools ({how})" if how
                        else f"gave no answer to a chat completion with tools ({exc})")
        choice = (reply.get("choices") or [{}])[0].get("message")
        if not isinstance(choice, dict):
            return fail("answered a chat completion with tools without a message")
        tokens = (reply.get("usage") or {}).get("prompt_tokens", "?")
        print(f"smoke test passed: a chat completion with tools ({tokens} prompt tokens) in "
              f"{time.monotonic() - started:.1f}s")
        return 0
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()


if __name__ == "__main__":
    sys.exit(main())
