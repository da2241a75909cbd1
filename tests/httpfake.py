"""A real HTTP server on 127.0.0.1 for adapter tests: scripted replies, injected faults, recorded requests.

The SDKs under test talk real HTTP to it, so what the tests check is the bytes a provider would
receive and the failures an SDK really raises, not a mock's idea of them.

Usage::

    with FakeServer() as srv:
        srv.script("POST", "/v1/chat/completions", Reply(json={...}), Reply(status=429, ...))
        ...  # point the SDK at srv.url
        assert len(srv.requests) == 2

Replies for a route are served in order; once a route's script is used up its ``default`` (if any)
is repeated, otherwise the server answers 599 so that an unexpected extra call is visible.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit


@dataclass
class Reply:
    """One scripted answer. ``json`` wins over ``body``; ``delay_s`` sleeps before answering (timeouts).

    ``trickle_s`` sends the body one byte at a time, that many seconds apart (a server that never stalls
    long enough for a read timeout); ``chunked`` sends it with ``Transfer-Encoding: chunked`` instead of
    a ``Content-Length`` (a body whose size the client learns only by reading it).
    """

    status: int = 200
    json: Any = None
    body: bytes | str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    content_type: str = "application/json"
    trickle_s: float = 0.0
    chunked: bool = False

    def payload(self) -> bytes:
        if self.json is not None:
            return json.dumps(self.json).encode()
        if isinstance(self.body, str):
            return self.body.encode()
        return self.body or b""


@dataclass
class Recorded:
    """A request as the server received it."""

    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


Responder = Reply | Callable[[Recorded], Reply]


class FakeServer:
    """ThreadingHTTPServer on a random local port that records every request and serves scripts."""

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self._scripts: dict[tuple[str, str], deque[Responder]] = {}
        self._defaults: dict[tuple[str, str], Responder] = {}
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ scripting

    def script(self, method: str, path_prefix: str, *replies: Responder, default: Responder | None = None) -> None:
        """Queue replies for requests whose path starts with ``path_prefix`` (the longest prefix wins)."""
        key = (method.upper(), path_prefix)
        with self._lock:
            self._scripts.setdefault(key, deque()).extend(replies)
            if default is not None:
                self._defaults[key] = default

    def requests_to(self, path_prefix: str, method: str | None = None) -> list[Recorded]:
        with self._lock:
            return [
                r
                for r in self.requests
                if r.path.startswith(path_prefix) and (method is None or r.method == method.upper())
            ]

    def clear(self) -> None:
        with self._lock:
            self.requests.clear()
            self._scripts.clear()
            self._defaults.clear()

    def _next_reply(self, rec: Recorded) -> Reply:
        with self._lock:
            self.requests.append(rec)
            keys = [
                k for k in set(self._scripts) | set(self._defaults) if k[0] == rec.method and rec.path.startswith(k[1])
            ]
            if not keys:
                return Reply(status=599, json={"error": f"no route for {rec.method} {rec.path}"})
            key = max(keys, key=lambda k: len(k[1]))
            queue = self._scripts.get(key)
            responder = queue.popleft() if queue else self._defaults.get(key)
        if responder is None:
            return Reply(status=599, json={"error": f"script for {key} used up"})
        return responder(rec) if callable(responder) else responder

    # ------------------------------------------------------------------ lifecycle

    @property
    def url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("server not started")
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> FakeServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def _read_body(self) -> bytes:
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    chunks = []
                    while True:
                        size = int(self.rfile.readline().strip() or b"0", 16)
                        if size == 0:
                            self.rfile.readline()
                            break
                        chunks.append(self.rfile.read(size))
                        self.rfile.readline()
                    return b"".join(chunks)
                n = int(self.headers.get("Content-Length") or 0)
                return self.rfile.read(n) if n else b""

            def _handle(self) -> None:
                parts = urlsplit(self.path)
                rec = Recorded(
                    method=self.command,
                    path=parts.path,
                    query=parts.query,
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=self._read_body(),
                )
                reply = server._next_reply(rec)
                if reply.delay_s and server._stopping.wait(reply.delay_s):
                    return
                data = reply.payload()
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", reply.content_type)
                    if reply.chunked:
                        self.send_header("Transfer-Encoding", "chunked")
                    else:
                        self.send_header("Content-Length", str(len(data)))
                    for k, v in reply.headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    if reply.trickle_s:
                        for i in range(len(data)):
                            self.wfile.write(data[i : i + 1])
                            self.wfile.flush()
                            if server._stopping.wait(reply.trickle_s):
                                return
                    elif reply.chunked:
                        step = 1 << 20
                        for i in range(0, len(data), step):
                            piece = data[i : i + step]
                            self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                        self.wfile.write(b"0\r\n\r\n")
                    else:
                        self.wfile.write(data)
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test): nothing to answer

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _handle

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
