"""A local OpenAI-compatible server for tests and benchmarks.

``POST /v1/chat/completions`` (tool calls and usage, no streaming), ``GET /v1/models``,
``GET /stats`` (requests per episode and per conversation position) and
``POST /admin/faults``. Behind it a scripted planner that rebuilds the task from the
``X-Flywheel-Task`` header and plays the family's reference plan (with the offline
policy's realistic mistakes); injectable faults: latency, 429 with Retry-After, 500,
timeouts, malformed arguments, unknown tools, text or empty replies.
"""

from tests.modelserver.faults import FaultConfig
from tests.modelserver.run import ServerHandle, serve_in_process, serve_in_thread

__all__ = ["FaultConfig", "ServerHandle", "serve_in_process", "serve_in_thread"]
