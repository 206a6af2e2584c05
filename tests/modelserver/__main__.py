"""``python -m tests.modelserver --port P``: run the test server in the foreground."""

from __future__ import annotations

import argparse
import json

import uvicorn

from tests.modelserver.app import ServerState, build_app
from tests.modelserver.faults import FaultConfig


def main() -> None:
    parser = argparse.ArgumentParser(description="A local OpenAI-compatible server for tests and benchmarks.")
    parser.add_argument("--port", type=int, required=True, help="port on 127.0.0.1")
    parser.add_argument("--models", default="flywheel-test", help="comma-separated model ids it serves")
    parser.add_argument("--api-key", default=None, help="require this bearer key (default: any)")
    parser.add_argument("--faults", default="{}", help="fault settings as JSON (see FaultConfig)")
    parser.add_argument("--policy-seed", type=int, default=0, help="seed of the scripted planner's mistakes")
    args = parser.parse_args()
    state = ServerState([m for m in args.models.split(",") if m], args.api_key,
                        FaultConfig.from_dict(json.loads(args.faults)), args.policy_seed)
    uvicorn.run(build_app(state), host="127.0.0.1", port=args.port, log_level="error", access_log=False,
                lifespan="off")


if __name__ == "__main__":
    main()
