"""A slow network in front of one real broker: a TCP proxy that forwards every byte, except that it can hold the
requests of one API from one client (by the key and client id in the request header) until the test lets them
go, and it can lose the response to the next request of one API (the broker handled it; the sender sees its
connection cut before the answer, as after a network fault). A cluster that advertises
the proxy's address (`advertised.listeners`) has every client's traffic pass through it, its own
inter-broker requests included; held or not, the broker sees exactly the bytes the client sent.

It makes a race of production reproducible: a tool reads one thing, the cluster changes, then the tool reads
the next (e.g. ListTransactions answered, the transactional id expired, then DescribeTransactions).

Threading: one accepting thread and two pumping threads per connection, all daemons; `hold`, `release` and
`close` may be called from any thread (an Event gates the held requests).
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
from types import TracebackType


def _read_exactly(sock: socket.socket, n: int) -> bytes | None:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            return None
        data += chunk
    return data


class HoldingProxy:
    """Forwards 127.0.0.1:`port` to 127.0.0.1:`upstream_port`; the requests `hold` names wait until `release()`."""

    def __init__(self, upstream_port: int | None = None) -> None:
        self.upstream_port = upstream_port
        self._server = socket.socket()
        self._server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._server.bind(("127.0.0.1", 0))
        self._server.listen(64)
        self.port = int(self._server.getsockname()[1])
        self._held: tuple[int, str] | None = None
        self._gate = threading.Event()
        self._gate.set()
        self.holding = threading.Event()  # set once a request of the held API waits
        self._lose_key: int | None = None
        self.lost = threading.Event()  # set once a response was lost
        self._closed = False
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> HoldingProxy:
        threading.Thread(target=self._accept, name=f"proxy-{self.port}", daemon=True).start()
        return self

    def hold(self, api_key: int, client_id: str) -> None:
        """From now on, each request of `api_key` from `client_id` waits for `release()` (other clients' pass:
        the test itself can still ask the broker what it needs meanwhile)."""
        self.holding.clear()
        self._held = (api_key, client_id)
        self._gate.clear()

    def release(self) -> None:
        self._held = None
        self._gate.set()

    def lose_next_response(self, api_key: int) -> None:
        """The broker's answer to the next request of `api_key` (from anyone) is read and thrown away, and both
        sides of that connection are closed: the request took effect, its sender never learns it."""
        self.lost.clear()
        self._lose_key = api_key

    def keep_responses(self) -> None:
        """Undo a `lose_next_response` whose request never came (nothing is lost from now on)."""
        self._lose_key = None

    @staticmethod
    def _key_and_client(body: bytes) -> tuple[int, str]:
        """A request header's api key and client id (headers v1 and v2 both carry it as an INT16-sized string)."""
        (key,) = struct.unpack(">h", body[:2])
        (size,) = struct.unpack(">h", body[8:10])
        return key, body[10:10 + size].decode(errors="replace") if size > 0 else ""

    # -- the pumps ---------------------------------------------------------------------------------------------
    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(("127.0.0.1", self.upstream_port or 0))
            except OSError:
                client.close()
                continue
            with self._lock:
                self._sockets += [client, server]
            doomed: list[int] = []
            threading.Thread(target=self._requests, args=(client, server, doomed), daemon=True).start()
            threading.Thread(target=self._responses, args=(server, client, doomed), daemon=True).start()

    def _requests(self, client: socket.socket, server: socket.socket, doomed: list[int]) -> None:
        """Client to broker, one framed request at a time (size, then api key and correlation id first in the
        header). `doomed`: correlation ids whose response `_responses` loses."""
        try:
            while True:
                size = _read_exactly(client, 4)
                body = _read_exactly(client, struct.unpack(">i", size)[0]) if size else None
                if size is None or body is None:
                    break
                if self._held is not None and self._key_and_client(body) == self._held:
                    self.holding.set()
                    self._gate.wait()
                if self._lose_key is not None and struct.unpack(">h", body[:2])[0] == self._lose_key:
                    self._lose_key = None
                    doomed.append(struct.unpack(">i", body[4:8])[0])
                server.sendall(size + body)
        except OSError:
            pass
        self._shut(client, server)

    def _responses(self, server: socket.socket, client: socket.socket, doomed: list[int]) -> None:
        """Broker to client, one framed response at a time (the correlation id first): a doomed one ends the
        connection instead of reaching the client."""
        try:
            while True:
                size = _read_exactly(server, 4)
                body = _read_exactly(server, struct.unpack(">i", size)[0]) if size else None
                if size is None or body is None:
                    break
                if struct.unpack(">i", body[:4])[0] in doomed:
                    self.lost.set()
                    break
                client.sendall(size + body)
        except OSError:
            pass
        self._shut(client, server)

    @staticmethod
    def _shut(*socks: socket.socket) -> None:
        for s in socks:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self._closed = True
        self.release()
        self._server.close()
        with self._lock:
            for s in self._sockets:
                self._shut(s)
                s.close()

    def __enter__(self) -> HoldingProxy:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
