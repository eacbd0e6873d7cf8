"""The monitor's HTTP endpoints, on the standard library's threaded HTTP server.

- `/metrics`: Prometheus text (metrics.py);
- `/healthz`: 200 while the scan loop is alive and keeps scanning, 503 otherwise (JSON body says which);
- `/api/findings`: the last scan's find-hanging JSON, exactly as `find-hanging -o json` prints it
  (503 before the first scan has read the cluster);
- `/`: the status page (page.py).

Everything else is 404; anything but GET and HEAD is 405. Nothing here changes the monitor's state.
With a web config (web_config.py), the TLS handshake happens on the connection's own thread (a slow or
hostile client never holds up the accepting thread), and every path but those in `open_paths` asks for
basic auth (401 with a challenge).
Threading: one thread per connection (ThreadingHTTPServer, daemon threads); each reads the `Source`'s
current snapshot, which the scan thread swaps whole (state.py).
"""

from __future__ import annotations

import contextlib
import json
import socket
import ssl
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from kafka_txn_tools.history.store import Incident, ScanPoint
from kafka_txn_tools.monitor.state import Snapshot
from kafka_txn_tools.monitor.web_config import WebConfig

HANDSHAKE_TIMEOUT_S = 10.0

PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8"


@dataclass(frozen=True)
class Source:
    """What the endpoints read, injected by the exporter."""

    snapshot: Callable[[], Snapshot]
    healthy: Callable[[], tuple[bool, dict[str, Any]]]
    incidents: Callable[[], list[Incident]]
    scan_points: Callable[[], list[ScanPoint]]
    now_ms: Callable[[], int]
    top: int
    document_text: Callable[[Any], str]  # find-hanging's JSON renderer


class _Handler(BaseHTTPRequestHandler):
    source: Source  # set on the subclass made per server
    web: WebConfig | None
    open_paths: frozenset[str]
    server_version = "kafka-txn-monitor"
    timeout = 30  # a connection idle this long is closed (a keep-alive scraper reconnects)

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        self._serve(body=True)

    def do_HEAD(self) -> None:  # noqa: N802
        self._serve(body=False)

    def _refuse(self) -> None:
        self._send(405, "text/plain; charset=utf-8", "only GET and HEAD are served\n", body=True,
                   extra={"Allow": "GET, HEAD"})

    do_POST = do_PUT = do_DELETE = do_PATCH = _refuse  # noqa: N815

    def _serve(self, body: bool) -> None:
        path = self.path.split("?", 1)[0]
        route = {"/metrics": self._metrics, "/healthz": self._healthz, "/api/findings": self._findings,
                 "/": self._page}.get(path)
        auth = self.web.auth if self.web is not None else None
        if auth is not None and path not in self.open_paths and not auth.check(self.headers.get("Authorization")):
            self._send(401, "text/plain; charset=utf-8", "unauthorized: this monitor asks for basic auth\n", body,
                       extra={"WWW-Authenticate": 'Basic realm="kafka-txn monitor", charset="UTF-8"'})
            return
        if route is None:
            self._send(404, "text/plain; charset=utf-8", f"not found: {path} (try /, /metrics, /healthz, "
                                                         "/api/findings)\n", body)
            return
        status, content_type, text = route()
        self._send(status, content_type, text, body)

    def _metrics(self) -> tuple[int, str, str]:
        from kafka_txn_tools.monitor.metrics import render, resident_memory_bytes

        return 200, PROMETHEUS_TEXT, render(self.source.snapshot(), self.source.top, resident_memory_bytes())

    def _healthz(self) -> tuple[int, str, str]:
        ok, detail = self.source.healthy()
        return (200 if ok else 503), "application/json", json.dumps(detail) + "\n"

    def _findings(self) -> tuple[int, str, str]:
        doc = self.source.snapshot().document
        if doc is None:
            return 503, "application/json", json.dumps({"error": "no scan has read the cluster yet"}) + "\n"
        return 200, "application/json", self.source.document_text(doc)

    def _page(self) -> tuple[int, str, str]:
        from kafka_txn_tools.monitor.page import render

        html = render(self.source.snapshot(), self.source.incidents(), self.source.scan_points(),
                      self.source.now_ms())
        return 200, "text/html; charset=utf-8", html

    def _send(self, status: int, content_type: str, text: str, body: bool, extra: dict[str, str] | None = None
              ) -> None:
        data = text.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        for key, value in (extra or {}).items():
            self.send_header(key, value)
        self.end_headers()
        if body:
            self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - http.server's signature
        return  # scrapes every few seconds would drown the log


class _Server(ThreadingHTTPServer):
    """Accepts on one thread; wraps each connection in TLS on that connection's thread."""

    daemon_threads = True
    # socketserver's default backlog is 5: with more scrapers and viewers connecting at once, the kernel drops
    # their SYNs and each retries after a second or more (seen as a p99 of 2 s under load).
    request_queue_size = 128
    tls: ssl.SSLContext | None = None

    def finish_request(self, request: Any, client_address: Any) -> None:
        if self.tls is None:
            super().finish_request(request, client_address)
            return
        request.settimeout(HANDSHAKE_TIMEOUT_S)
        try:
            wrapped = self.tls.wrap_socket(request, server_side=True)
        except (ssl.SSLError, OSError):
            # A refused client certificate, plain HTTP on the TLS port, a scanner: the client sees the
            # handshake fail; nothing to serve and nothing worth a line in the monitor's log.
            with contextlib.suppress(OSError):
                request.close()
            return
        try:
            super().finish_request(wrapped, client_address)
        finally:
            with contextlib.suppress(OSError):
                wrapped.shutdown(socket.SHUT_RDWR)
            wrapped.close()

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        if isinstance(sys.exc_info()[1], (OSError, ssl.SSLError)):
            return  # a client that went away mid-answer: not the monitor's error
        super().handle_error(request, client_address)  # a bug: its trace on stderr


class MonitorServer:
    """The HTTP(S) server on its own thread: `start()`, then `stop()`."""

    def __init__(self, host: str, port: int, source: Source, web: WebConfig | None = None,
                 open_paths: frozenset[str] = frozenset()) -> None:
        handler = type("Handler", (_Handler,), {"source": source, "web": web, "open_paths": open_paths})
        self._server = _Server((host, port), handler)
        self._server.tls = web.tls if web is not None else None
        self._thread = threading.Thread(target=self._server.serve_forever, name="monitor-http", daemon=True)

    @property
    def address(self) -> tuple[str, int]:
        host, port = self._server.server_address[:2]
        return str(host), int(port)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
