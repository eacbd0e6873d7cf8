"""Listeners: accept connections, frame requests, hand each to the node's request handler, write responses.

One asyncio task per connection handles its requests strictly in order (as Kafka mutes a channel while
a request is in flight), so responses always come back in request order. A bad connection never
affects another one or the node: a request the handler cannot answer (ProtocolViolation), a frame of an
impossible size or a failing handler closes that connection only.

The listener knows frames, not APIs: the request handler (apis/request_handler.py, given through the
constructor) decodes, dispatches and encodes. Security (kafka_txn_broker/security/auth.py): SSL listeners
wrap connections in TLS; frames stay below sasl.server.max.receive.size until a SASL connection
authenticated, and after SaslHandshake v0 the bare tokens go to the session, not the handler.
Event-loop owned.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import struct
from typing import TYPE_CHECKING, Protocol

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
        self._conns: set[asyncio.Task[None]] = set()

    async def start(self) -> int:
        self._server = await asyncio.start_server(self._accept, self.host, self.port, backlog=1024,
                                                  reuse_address=True, ssl=self.security.ssl_context)
        self.port = self._server.sockets[0].getsockname()[1]
        return self.port

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._conns):
            task.cancel()
        for task in list(self._conns):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2)
            self._server = None

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._conns.add(task)
        peer = writer.get_extra_info("peername")
        session = self.security.new_session(peer[0] if peer else "?", writer.get_extra_info("peercert"))
        conn = Connection(self.config, self.handler, reader, writer, f"{peer[0]}:{peer[1]}" if peer else "?", session)
        try:
            await conn.run()
        except asyncio.CancelledError:
            # Stopping the node cancels its connections; ending quietly keeps asyncio from logging it.
            pass
        finally:
            self._conns.discard(task)


class Connection:
    def __init__(self, config: BrokerConfig, handler: RequestHandler, reader: asyncio.StreamReader,
                 writer: asyncio.StreamWriter, peer: str, session: AuthSession) -> None:
        self.config = config
        self.handler = handler
        self.reader = reader
        self.writer = writer
        self.peer = peer
        self.session = session

    async def run(self) -> None:
        try:
            while True:
                frame = await self._read_frame()
                if frame is None:
                    return
                response = await self._handle(frame)
                if response is not None:
                    self.writer.write(response)
                    await self.writer.drain()
                if self.session.close_after_response:
                    # A failed or illegal SASL step: Kafka answers, then closes after
                    # connection.failed.authentication.delay.ms (100 ms), which also lets the client
                    # read the answer before it sees the connection go.
                    await asyncio.sleep(FAILED_AUTHENTICATION_DELAY_S)
                    return
        except ProtocolViolation as exc:
            log.info("closing connection from %s: %s", self.peer, exc)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        except Exception:
            # Last line of defence: whatever went wrong stays confined to this connection.
            log.exception("connection from %s failed", self.peer)
        finally:
            # Share sessions opened on this connection end with it (their records are released).
            self.handler.connection_closed(self.session)
            self.writer.close()
            with contextlib.suppress(Exception):
                await self.writer.wait_closed()

    async def _read_frame(self) -> bytes | None:
        try:
            head = await self.reader.readexactly(4)
        except asyncio.IncompleteReadError:
            return None
        (size,) = struct.unpack(">i", head)
        limit, name = self.config["socket.request.max.bytes"], "socket.request.max.bytes"
        if self.session.max_frame is not None:
            limit, name = min(limit, self.session.max_frame), "sasl.server.max.receive.size before authentication"
        smallest = 0 if self.session.raw_tokens else 8
        if size < smallest or size > limit:
            # Kafka closes the channel on an invalid size rather than reading a bogus payload.
            raise ProtocolViolation(f"frame size {size} outside {smallest}..{limit} ({name})")
        return head + await self.reader.readexactly(size)

    async def _handle(self, frame: bytes) -> bytes | None:
        if self.session.raw_tokens:
            return await self._raw_sasl_token(frame[4:])
        return await self.handler.handle(frame, self.session, self.peer)

    async def _raw_sasl_token(self, token: bytes) -> bytes:
        # After SaslHandshake v0 the client sends bare tokens; a failure there has no error answer.
        answer = await self.session.raw_token(token)
        if answer is None:
            raise ProtocolViolation("SASL authentication failed")
        return answer
