"""A stand-in for llama.cpp's server built for another CPU: it takes the real server's arguments,
answers ``/v1/models``, and dies of a real segmentation fault on the first chat completion (a
prompt longer than one token), as that build did. With ``--model healthy`` it answers instead.

    python -X faulthandler -m tests.crashing_llama --model M --port P [the server's other options]
"""

from __future__ import annotations

import argparse
import ctypes
import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--host", default="127.0.0.1")
    args, _ = parser.parse_known_args()
    healthy = args.model == "healthy"

    class Handler(BaseHTTPRequestHandler):
        def _json(self, body: dict) -> None:
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            self._json({"object": "list", "data": [{"id": "smollm2", "object": "model"}]})

        def do_POST(self) -> None:  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers["content-length"])))
            if not healthy:
                ctypes.string_at(0)  # a segmentation fault in native code, as in llama.cpp's decode
            assert body["tools"] and body["messages"]
            self._json({"choices": [{"index": 0, "finish_reason": "stop",
                                     "message": {"role": "assistant", "content": "Done."}}],
                        "usage": {"prompt_tokens": 412, "completion_tokens": 2}})

        def log_message(self, *args) -> None:
            pass

    ThreadingHTTPServer((args.host, args.port), Handler).serve_forever()


if __name__ == "__main__":
    main()
