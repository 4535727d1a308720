"""A stand-in for llama-server: /health and /completion on --host/--port, misbehaving on request.

It prints `standin: pid N` first (so a test can watch the process), then each request body, to
its standard output (the driver's log). Modes, as extra arguments:
  --unhealthy-for N     answer /health with 503 "Loading model" N times first
  --never-healthy       always 503
  --fail-load TEXT      print TEXT as llama.cpp's loader error (with time and level) and exit 1
  --crash-on N          exit 3 on the Nth /completion, without an answer
  --hang-on N           never answer the Nth /completion
  --ignore-term         ignore SIGTERM (otherwise it stops and exits 0, as llama-server does)
A port that cannot be bound gets llama-server's message and exit 1.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("-m", required=True)
    parser.add_argument("--unhealthy-for", type=int, default=0)
    parser.add_argument("--never-healthy", action="store_true")
    parser.add_argument("--fail-load")
    parser.add_argument("--crash-on", type=int, default=0)
    parser.add_argument("--hang-on", type=int, default=0)
    parser.add_argument("--ignore-term", action="store_true")
    opts = parser.parse_args()
    say(f"pid {os.getpid()}")
    if opts.fail_load:
        print(f"0.00.009.704 E llama_model_load: error loading model: {opts.fail_load}", flush=True)
        print("0.00.009.711 E main: exiting due to model loading error", flush=True)
        raise SystemExit(1)
    if opts.ignore_term:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    state = {"health": 0, "completions": 0}
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path != "/health":
                return self.answer(404, {"error": {"code": 404, "message": "not found"}})
            with lock:
                state["health"] += 1
                loading = opts.never_healthy or state["health"] <= opts.unhealthy_for
            if loading:
                return self.answer(503, {"error": {"code": 503, "message": "Loading model",
                                                   "type": "unavailable_error"}})
            self.answer(200, {"status": "ok"})

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with lock:
                state["completions"] += 1
                number = state["completions"]
            say(f"request {json.dumps(body, sort_keys=True)}")
            if number == opts.crash_on:
                print(f"GGML_ASSERT(n_past > 0) failed on request {number}", flush=True)
                os._exit(3)
            if number == opts.hang_on:
                while True:
                    time.sleep(60)
            self.answer(200, {"content": "x" * body.get("n_predict", 1), "stop": True})

        def answer(self, status: int, data: dict) -> None:
            raw = json.dumps(data).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def log_message(self, *args: object) -> None:
            pass  # keeps the log to the lines tests read

    try:
        server = ThreadingHTTPServer((opts.host, opts.port), Handler)
    except OSError:
        print(f"couldn't bind HTTP server socket, hostname: {opts.host}, port: {opts.port}",
              flush=True)
        raise SystemExit(1)

    def on_term(signum: int, frame: object) -> None:
        say("stopping on SIGTERM")
        os._exit(0)

    if not opts.ignore_term:
        signal.signal(signal.SIGTERM, on_term)
    server.serve_forever()


def say(line: str) -> None:
    print(f"standin: {line}", flush=True)


if __name__ == "__main__":
    main()
