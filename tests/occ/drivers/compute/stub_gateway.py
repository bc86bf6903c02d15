"""A stand-in for ``openclaw gateway`` in the local driver's fast tests (not a test module).

Started by the driver exactly as the real gateway (``<python> stub_gateway.py gateway --port N``,
environment built by the driver, cwd the Agent's folder). It serves ``GET /readyz`` on
127.0.0.1: 503 for its first ``READY_AFTER`` seconds, then 200. It records, in
``stub-env.json`` next to it (cwd), the sha256 of every environment value it received, so
tests can check which values arrived without any value touching the disk. A configuration
holding ``"stubCrash": true`` makes it exit at once with status 3 (a crash before ready);
``"stubPrintEnvironment": true`` makes it print every environment variable with its value to
its output, as a careless program might (the log reader's leak canary).
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sys
import time
from http.server import BaseHTTPRequestHandler, HTTPServer

READY_AFTER = 0.3


def main() -> None:
    port = int(sys.argv[sys.argv.index("--port") + 1])
    with open(os.environ["OPENCLAW_CONFIG_PATH"]) as handle:
        config = json.load(handle)
    digests = {name: hashlib.sha256(value.encode()).hexdigest() for name, value in os.environ.items()}
    with open("stub-env.json", "w") as handle:
        json.dump(digests, handle)
    if config.get("stubPrintEnvironment"):
        for name, value in sorted(os.environ.items()):
            print(f"env {name}={value}", flush=True)
        print(f'config {{"password": {json.dumps(os.environ.get("OPENCLAW_GATEWAY_PASSWORD", ""))}}}', flush=True)
    if config.get("stubCrash"):
        sys.exit(3)
    started = time.monotonic()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            ready = time.monotonic() - started >= READY_AFTER
            code = 200 if self.path == "/readyz" and ready else 503 if self.path == "/readyz" else 404
            body = json.dumps({"ready": ready}).encode()
            self.send_response(code)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = HTTPServer(("127.0.0.1", port), Handler)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print(f"stub gateway listening on 127.0.0.1:{port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
