"""Listeners: accept connections, frame requests, hand each to the node's request handler, write responses.

Each connection (an asyncio protocol) handles its requests strictly in order (as Kafka mutes a channel
while a request is in flight), so responses always come back in request order; a request whose handler
does not wait is answered within the callback that received it, with no task or stream per request. A bad
connection never affects another one or the node: a request the handler cannot answer
(ProtocolViolation), a frame of an impossible size or a failing handler closes that connection only.

The listener knows frames, not APIs: the request handler (apis/request_handler.py, given through the
constructor) decodes, dispatches and encodes. Security (kafka_txn_broker/security/auth.py): SSL listeners
wrap connections in TLS; frames stay below sasl.server.max.receive.size until a SASL connection
authenticated, and after SaslHandshake v0 the bare tokens go to the session, not the handler.
Event-loop owned.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import logging
import struct
from collections.abc import Coroutine, Generator
from typing import TYPE_CHECKING, Any, Protocol, cast

if TYPE_CHECKING:
    from kafka_txn_broker.configs.broker_config import BrokerConfig
    from kafka_txn_broker.security.auth import AuthSession, ClusterSecurity

log = logging.getLogger(__name__)

FAILED_AUTHENTICATION_DELAY_S = 0.1


class ProtocolViolation(Exception):
    """The peer sent something that cannot be answered; the connection is closed."""


class RequestHandler(Protocol):
    """A node's request side: one framed request in, its framed response out (None: no response)."""

    async def handle(self, frame: bytes, session: AuthSession, peer: str) -> bytes | None:
        """Raises ProtocolViolation when the connection must be closed instead."""
        ...

    def connection_closed(self, session: AuthSession) -> None:
        """The connection of `session` ended (share sessions opened on it end with it)."""
        ...


class Listener:
    def __init__(self, host: str, port: int, config: BrokerConfig, security: ClusterSecurity,
                 handler: RequestHandler) -> None:
        self.host = host
        self.port = port
        self.config = config
        self.security = security
        self.handler = handler
        self._server: asyncio.Server | None = None
        self._conns: set[Connection] = set()

    async def start(self) -> int:
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(self._connection, self.host, self.port, backlog=1024,
                                                reuse_address=True, ssl=self.security.ssl_context)
        self.port = self._server.sockets[0].getsockname()[1]
        return self.port

    def _connection(self) -> Connection:
        return Connection(self.config, self.handler, self.security, self._conns)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        conns = list(self._conns)
        for conn in conns:
            conn.close(cancel=True)
        for conn in conns:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(conn.finished(), 2)
            conn.abort()  # a client that never read its answers: drop them
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2)
            self._server = None


class Connection(asyncio.Protocol):
    """One client connection: frames are cut from the bytes as they arrive and each request is handled in
    turn; the next frame is read only once the previous request is answered (Kafka mutes a channel while a
    request is in flight), so responses go out in request order and a request sees the session as the
    previous one left it (its frame size limit, SASL state).

    A request runs at once, in the callback that delivered its last bytes, as long as its handler does not
    wait (almost every request): no task and no stream per request. A handler that waits (a Fetch's long
    poll, a JoinGroup) goes on in a task of its own, and the connection reads nothing more until it ends."""

    def __init__(self, config: BrokerConfig, handler: RequestHandler, security: ClusterSecurity,
                 registry: set[Connection]) -> None:
        self.config = config
        self.handler = handler
        self.security = security
        self._registry = registry
        self.transport: asyncio.Transport | None = None
        self.peer = "?"
        self.session: AuthSession | None = None
        self._buffer = bytearray()
        self._task: asyncio.Task[None] | None = None  # a request whose handler waits
        self._closing = False  # no more requests: closing, or about to after a failed SASL step
        self._eof = False
        self._lost = False  # connection_lost came
        self._over_ssl = False
        self._write_paused = False
        self._reading_paused = False
        self._done: asyncio.Future[None] | None = None

    # ---- asyncio.Protocol ----------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # any loop's stream transport (not always a subclass)
        self._done = asyncio.get_running_loop().create_future()
        self._registry.add(self)
        peer = self.transport.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if peer else "?"
        self._over_ssl = self.transport.get_extra_info("sslcontext") is not None
        self.session = self.security.new_session(peer[0] if peer else "?", self.transport.get_extra_info("peercert"))

    def data_received(self, data: bytes) -> None:
        if self._closing:
            return  # nothing more is answered on this connection
        self._buffer += data
        if self._task is None and not self._write_paused:
            self._serve()
        elif len(self._buffer) > _BUFFER_LIMIT and not self._reading_paused:
            self._reading_paused = True  # the client sends faster than it is answered: stop reading
            self._transport().pause_reading()

    def eof_received(self) -> bool:
        # The requests already received are still answered (the client may have half-closed its side);
        # over TLS there is no half-close.
        self._eof = True
        if self._task is None and not self._write_paused:
            self._serve()
        return not self._over_ssl

    def pause_writing(self) -> None:
        self._write_paused = True  # the client reads slowly: answer nothing more until it caught up

    def resume_writing(self) -> None:
        self._write_paused = False
        if self._task is None:
            self._serve()

    def connection_lost(self, exc: Exception | None) -> None:
        self._closing = True
        self._lost = True
        self._registry.discard(self)
        if self._task is None:
            self._release()
        # else a request still waits: it runs to its end (its answer goes nowhere), as Kafka's delayed
        # requests complete after their connection closed; the session ends after it

    def _release(self) -> None:
        if self._done is not None and not self._done.done():
            # Share sessions opened on this connection end with it (their records are released).
            assert self.session is not None
            self.handler.connection_closed(self.session)
            self._done.set_result(None)

    # ---- the listener's side -------------------------------------------------------------------------
    def close(self, *, cancel: bool = False) -> None:
        """Answer nothing more and close; `cancel`: stop a waiting request too (the node stops)."""
        self._closing = True
        if cancel and self._task is not None:
            self._task.cancel()
        if self.transport is not None:
            self.transport.close()

    def abort(self) -> None:
        if self.transport is not None and not self._lost:
            self.transport.abort()

    async def finished(self) -> None:
        """Until the connection is gone (and a waiting handler with it)."""
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
        if self._done is not None:
            await self._done

    # ---- requests ------------------------------------------------------------------------------------
    def _transport(self) -> asyncio.Transport:
        assert self.transport is not None
        return self.transport

    def _serve(self) -> None:
        """Answer the whole requests received, in order, until one has to wait or there are none left."""
        try:
            while not self._closing and not self._write_paused:
                frame = self._next_frame()
                if frame is None:
                    break
                request = self._handle(frame)
                try:
                    waits_on = request.send(None)
                except StopIteration as done:
                    self._respond(done.value)
                    continue
                task = self._task = asyncio.get_running_loop().create_task(self._finish(request, waits_on))
                task.add_done_callback(functools.partial(self._waited, request))
                return
        except Exception as exc:
            self._failed(exc)
            return
        if self._reading_paused and not self._closing:
            self._reading_paused = False
            self._transport().resume_reading()
        if self._eof and not self._closing and self._task is None:
            self.close()  # the client sent everything it will send, and all of it is answered

    async def _finish(self, request: Coroutine[Any, Any, bytes | None], waits_on: Any) -> None:
        response = await _Resumed(request, waits_on)
        self._task = None
        if not self._lost:
            self._respond(response)
            self._serve()  # may start the next waiting request's task

    def _waited(self, request: Coroutine[Any, Any, bytes | None], task: asyncio.Task[None]) -> None:
        """A waiting request's task ended: answered, failed, or cancelled (the node stops)."""
        if inspect.getcoroutinestate(request) == inspect.CORO_SUSPENDED:
            # Cancelled before its task first ran: the request is still at its first wait. End it as its
            # task would have: cancelled there.
            with contextlib.suppress(asyncio.CancelledError, StopIteration, Exception):
                request.throw(asyncio.CancelledError())
            request.close()
        if self._task is task:
            self._task = None
        if not task.cancelled() and task.exception() is not None:
            self._failed(cast(Exception, task.exception()))
        if self._lost and self._task is None:
            self._release()

    def _respond(self, response: bytes | None) -> None:
        if response is not None and not self._transport().is_closing():
            self._transport().write(response)
        assert self.session is not None
        if self.session.close_after_response:
            # A failed or illegal SASL step: Kafka answers, then closes after
            # connection.failed.authentication.delay.ms (100 ms), which also lets the client
            # read the answer before it sees the connection go.
            self._closing = True
            asyncio.get_running_loop().call_later(FAILED_AUTHENTICATION_DELAY_S, self.close)

    def _failed(self, exc: Exception) -> None:
        if isinstance(exc, ProtocolViolation):
            log.info("closing connection from %s: %s", self.peer, exc)
        elif not isinstance(exc, ConnectionError):
            # Last line of defence: whatever went wrong stays confined to this connection.
            log.error("connection from %s failed", self.peer, exc_info=exc)
        self.close()

    def _next_frame(self) -> bytes | None:
        buffer = self._buffer
        if len(buffer) < 4:
            return None
        (size,) = _SIZE.unpack_from(buffer)
        session = self.session
        assert session is not None
        limit, name = self.config["socket.request.max.bytes"], "socket.request.max.bytes"
        if session.max_frame is not None:
            limit, name = min(limit, session.max_frame), "sasl.server.max.receive.size before authentication"
        smallest = 0 if session.raw_tokens else 8
        if size < smallest or size > limit:
            # Kafka closes the channel on an invalid size rather than reading a bogus payload.
            raise ProtocolViolation(f"frame size {size} outside {smallest}..{limit} ({name})")
        if len(buffer) < 4 + size:
            return None
        with memoryview(buffer) as view:
            frame = bytes(view[:4 + size])
        del buffer[:4 + size]
        return frame

    async def _handle(self, frame: bytes) -> bytes | None:
        assert self.session is not None
        if self.session.raw_tokens:
            return await self._raw_sasl_token(frame[4:])
        return await self.handler.handle(frame, self.session, self.peer)

    async def _raw_sasl_token(self, token: bytes) -> bytes:
        # After SaslHandshake v0 the client sends bare tokens; a failure there has no error answer.
        assert self.session is not None
        answer = await self.session.raw_token(token)
        if answer is None:
            raise ProtocolViolation("SASL authentication failed")
        return answer


_SIZE = struct.Struct(">i")
# Bytes received ahead of the request being handled before the connection stops reading (as a stream's
# default limit, 64 KiB, makes it pause at twice that).
_BUFFER_LIMIT = 128 * 1024


class _Resumed:
    """Awaiting it continues a coroutine that was started outside any task and stopped at its first wait
    (`waits_on`, what it yielded then): exactly what `await coroutine` would have done from that point on.
    The task awaiting it sees every future the coroutine waits on, so cancelling that task cancels the
    coroutine's wait, as it would have had the task run the coroutine from its start."""

    __slots__ = ("_coroutine", "_waits_on")

    def __init__(self, coroutine: Coroutine[Any, Any, bytes | None], waits_on: Any) -> None:
        self._coroutine = coroutine
        self._waits_on = waits_on

    def __await__(self) -> Generator[Any, Any, bytes | None]:
        coroutine, value = self._coroutine, self._waits_on
        while True:
            try:
                sent = yield value
            except BaseException as exc:  # noqa: BLE001  (thrown in by the task: passed on, as `await` would)
                try:
                    value = coroutine.throw(exc)
                except StopIteration as done:
                    return cast("bytes | None", done.value)
            else:
                try:
                    value = coroutine.send(sent)
                except StopIteration as done:
                    return cast("bytes | None", done.value)
