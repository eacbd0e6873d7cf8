"""A tiny raw Kafka client for tests: one request, one decoded response, over a plain socket."""

from __future__ import annotations

import socket
import struct
from typing import Any


def recv_exact(s: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    return buf


def recv_frame(s: socket.socket) -> bytes:
    (size,) = struct.unpack(">i", recv_exact(s, 4))
    return recv_exact(s, size)


def send_request(s: socket.socket, req: Any, correlation_id: int = 1) -> None:
    req.with_header(correlation_id=correlation_id, client_id="test")
    s.sendall(bytes(req.encode(header=True, framed=True)))


def connect(address: str) -> socket.socket:
    host, port = address.split(",")[0].split(":")
    return socket.create_connection((host, int(port)), timeout=10)


def roundtrip(address: str, req: Any, response_cls: Any) -> Any:
    """Send `req` (a versioned request object) to the first broker of `address`, decode the answer."""
    with connect(address) as s:
        send_request(s, req, 11)
        resp = response_cls.decode(recv_frame(s), version=req.API_VERSION, header=True)
        assert resp.header.correlation_id == 11
        return resp
