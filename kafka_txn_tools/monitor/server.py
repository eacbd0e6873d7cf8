"""The monitor's HTTP endpoints, on the standard library's threaded HTTP server.

- `/metrics`: Prometheus text (metrics.py);
- `/healthz`: 200 while the scan loop is alive and keeps scanning, 503 otherwise (JSON body says which);
- `/api/findings`: the last scan's find-hanging JSON, exactly as `find-hanging -o json` prints it
  (503 before the first scan has read the cluster);
- `/`: the status page (page.py).

Everything else is 404; anything but GET and HEAD is 405. Nothing here changes the monitor's state.
Threading: one thread per request (ThreadingHTTPServer, daemon threads); each reads the `Source`'s current
snapshot, which the scan thread swaps whole (state.py).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from kafka_txn_tools.monitor.history_store import Incident, ScanPoint
from kafka_txn_tools.monitor.state import Snapshot

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
    server_version = "kafka-txn-monitor"

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


class MonitorServer:
    """The HTTP server on its own thread: `start()`, then `stop()`."""

    def __init__(self, host: str, port: int, source: Source) -> None:
        handler = type("Handler", (_Handler,), {"source": source})
        self._server = ThreadingHTTPServer((host, port), handler)
        self._server.daemon_threads = True
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
