"""A loopback TCP proxy that can stop forwarding: the network between a client and a server going dark.

`forward` relays both ways; `blackhole` keeps every connection (old and new) open and swallows what either
side sends, so the client waits for answers that never come, as behind a dropped route; `forward` again
resumes relaying on the connections opened meanwhile (what was swallowed is lost, as on a real network,
so clients see timeouts and reconnect).

Threading: one accepting thread and two pump threads per connection; `mode` is read by all of them and
set by the test's thread (a str swap).
"""

from __future__ import annotations

import contextlib
import socket
import threading

FORWARD, BLACKHOLE = "forward", "blackhole"


class TcpProxy:
    def __init__(self, listen: tuple[str, int], target: tuple[str, int]) -> None:
        self.target = target
        self.mode = FORWARD
        self._server = socket.create_server(listen)
        self._stopped = threading.Event()
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._accept, name="tcp-proxy", daemon=True)

    @property
    def address(self) -> str:
        host, port = self._server.getsockname()[:2]
        return f"{host}:{port}"

    def __enter__(self) -> TcpProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopped.set()
        with contextlib.suppress(OSError):
            self._server.close()
        with self._lock:
            for s in self._sockets:
                with contextlib.suppress(OSError):
                    s.close()

    def _accept(self) -> None:
        while not self._stopped.is_set():
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            with self._lock:
                self._sockets += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                if self.mode == FORWARD:
                    sink.sendall(data)
        except OSError:
            pass
        finally:
            for s in (source, sink):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
