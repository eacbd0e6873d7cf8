"""One client connection of the listener (server/socket_server.Connection), on fakes of its transport, session and
request handler: requests answered strictly in order, whether their handler answers at once or waits; a closed
connection's waiting request runs to its end before the session ends; half-closes, slow readers, node stops."""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Callable, Coroutine
from typing import Any

from kafka_txn_broker.server.socket_server import Connection


def frame(correlation_id: int, api_key: int = 3) -> bytes:
    body = struct.pack(">hhih", api_key, 0, correlation_id, -1)
    return struct.pack(">i", len(body)) + body


WAITS = 1  # api key the fake handler waits on (a long poll)


class FakeSession:
    raw_tokens = False
    max_frame: int | None = None
    close_after_response = False
    authenticated = True


class FakeSecurity:
    def __init__(self) -> None:
        self.session = FakeSession()

    def new_session(self, peer_host: str, peer_cert: Any) -> FakeSession:
        return self.session


class FakeHandler:
    """Answers b"<correlation id>" at once, or (api key WAITS) once `release` is set."""

    def __init__(self) -> None:
        self.release = asyncio.get_running_loop().create_future()
        self.seen: list[int] = []
        self.closed: list[FakeSession] = []
        self.cancelled = 0
        self.events: list[str] = []

    async def handle(self, data: bytes, session: Any, peer: str) -> bytes | None:
        api_key, _version, correlation_id = struct.unpack_from(">hhi", data, 4)
        self.seen.append(correlation_id)
        if api_key == WAITS:
            try:
                await self.release
            except asyncio.CancelledError:
                self.cancelled += 1
                raise
            self.events.append(f"answered {correlation_id}")
        return str(correlation_id).encode()

    def connection_closed(self, session: Any) -> None:
        self.events.append("session ended")
        self.closed.append(session)


class FakeTransport(asyncio.Transport):
    def __init__(self, protocol: Connection) -> None:
        super().__init__()
        self.protocol = protocol
        self.written: list[bytes] = []
        self.closing = False
        self.reading = True

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 5555) if name == "peername" else default

    def write(self, data: bytes | bytearray | memoryview) -> None:
        assert not self.closing
        self.written.append(bytes(data))

    def is_closing(self) -> bool:
        return self.closing

    def close(self) -> None:
        if not self.closing:
            self.closing = True
            asyncio.get_running_loop().call_soon(self.protocol.connection_lost, None)

    def abort(self) -> None:
        self.close()

    def pause_reading(self) -> None:
        self.reading = False

    def resume_reading(self) -> None:
        self.reading = True

    def get_write_buffer_size(self) -> int:
        return 0


def run(test: Callable[[], Coroutine[Any, Any, None]]) -> None:
    asyncio.run(test())


async def _open() -> tuple[Connection, FakeTransport, FakeHandler, set[Connection]]:
    handler = FakeHandler()
    registry: set[Connection] = set()
    conn = Connection({"socket.request.max.bytes": 1 << 20}, handler, FakeSecurity(), registry)  # type: ignore[arg-type]
    transport = FakeTransport(conn)
    conn.connection_made(transport)
    return conn, transport, handler, registry


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


def test_requests_are_answered_in_order_behind_one_that_waits() -> None:
    async def test() -> None:
        conn, transport, handler, _ = await _open()
        conn.data_received(frame(1) + frame(2, WAITS) + frame(3) + frame(4)[:5])
        assert transport.written == [b"1"] and handler.seen == [1, 2]  # 3 is not read while 2 waits
        conn.data_received(frame(4)[5:])
        await _settle()
        assert transport.written == [b"1"] and handler.seen == [1, 2]
        handler.release.set_result(None)
        await _settle()
        assert transport.written == [b"1", b"2", b"3", b"4"] and handler.seen == [1, 2, 3, 4]
    run(test)


def test_a_frame_arriving_byte_by_byte_is_answered_once_whole() -> None:
    async def test() -> None:
        conn, transport, handler, _ = await _open()
        data = frame(7) + frame(8)
        for i in range(len(data)):
            conn.data_received(data[i:i + 1])
        assert transport.written == [b"7", b"8"]
    run(test)


def test_a_closed_connections_waiting_request_ends_before_its_session() -> None:
    async def test() -> None:
        conn, transport, handler, registry = await _open()
        conn.data_received(frame(1, WAITS) + frame(2))
        transport.close()  # the client went away while request 1 waits
        await _settle()
        assert handler.closed == [] and conn not in registry
        handler.release.set_result(None)
        await _settle()
        # Request 1 ran to its end (its answer goes nowhere), 2 was never handled, then the session ended.
        assert handler.events == ["answered 1", "session ended"] and handler.seen == [1]
        assert transport.written == []
    run(test)


def test_requests_sent_before_a_half_close_are_answered_then_the_connection_closes() -> None:
    async def test() -> None:
        conn, transport, handler, _ = await _open()
        conn.data_received(frame(1) + frame(2, WAITS) + frame(3))
        assert conn.eof_received() is True  # keep the write side open
        assert not transport.closing
        handler.release.set_result(None)
        await _settle()
        assert transport.written == [b"1", b"2", b"3"] and transport.closing
        await _settle()
        assert len(handler.closed) == 1
    run(test)


def test_a_slow_reader_is_answered_once_it_caught_up() -> None:
    async def test() -> None:
        conn, transport, handler, _ = await _open()
        conn.pause_writing()
        conn.data_received(frame(1) + frame(2))
        assert transport.written == []
        conn.data_received(b"\x00" * (200 * 1024))  # still sending: the connection stops reading
        assert not transport.reading
        conn.resume_writing()
        assert transport.written == [b"1", b"2"]
    run(test)


def test_a_stopping_node_cancels_a_waiting_request() -> None:
    async def test() -> None:
        conn, transport, handler, _ = await _open()
        conn.data_received(frame(1, WAITS) + frame(2))
        conn.close(cancel=True)
        await asyncio.wait_for(conn.finished(), 1)
        assert handler.cancelled == 1 and handler.seen == [1] and handler.events == ["session ended"]
    run(test)


def test_a_frame_of_an_impossible_size_closes_the_connection() -> None:
    async def test() -> None:
        conn, transport, handler, _ = await _open()
        conn.data_received(frame(1) + struct.pack(">i", 3) + b"\x00" * 8)
        assert transport.written == [b"1"] and transport.closing
        await _settle()
        assert len(handler.closed) == 1
    run(test)
