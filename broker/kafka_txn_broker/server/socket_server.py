"""Listeners: accept connections, frame requests, dispatch them by API key, write responses.

One asyncio task per connection handles its requests strictly in order (as Kafka mutes a channel while
a request is in flight), so responses always come back in request order. Anything malformed gets the
Kafka error code when the request can be read, or a clean close when it cannot; a bad connection never
affects another one or the node.

Security (kafka_txn_broker/security/auth.py): SSL listeners wrap connections in TLS; on SASL listeners a connection may
send only ApiVersions, SaslHandshake and SaslAuthenticate (`pre_auth` APIs) until it authenticates,
and frames stay below sasl.server.max.receive.size until then.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import struct
from typing import TYPE_CHECKING, Any

from kafka_txn_broker.apis.context import RequestContext
from kafka_txn_broker.apis.registry import APIS, ApiSpec, advertised_by, load_all
from kafka_txn_broker.apis.validate import null_violation

if TYPE_CHECKING:
    from kafka_txn_broker.security.auth import AuthSession
    from kafka_txn_broker.server.node import BrokerNode

log = logging.getLogger(__name__)

API_VERSIONS_KEY = 18
FAILED_AUTHENTICATION_DELAY_S = 0.1
UNSUPPORTED_VERSION = 35


class ProtocolViolation(Exception):
    """The peer sent something that cannot be answered; the connection is closed."""


class Listener:
    def __init__(self, node: BrokerNode, host: str, port: int) -> None:
        self.node = node
        self.host = host
        self.port = port
        self._server: asyncio.Server | None = None
        self._conns: set[asyncio.Task[None]] = set()
        load_all()

    async def start(self) -> int:
        self._server = await asyncio.start_server(self._accept, self.host, self.port, backlog=1024,
                                                  reuse_address=True,
                                                  ssl=self.node.cluster.security.ssl_context)
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
        session = self.node.cluster.security.new_session(peer[0] if peer else "?", writer.get_extra_info("peercert"))
        conn = Connection(self.node, reader, writer, f"{peer[0]}:{peer[1]}" if peer else "?", session)
        try:
            await conn.run()
        except asyncio.CancelledError:
            # Stopping the node cancels its connections; ending quietly keeps asyncio from logging it.
            pass
        finally:
            self._conns.discard(task)


class Connection:
    def __init__(self, node: BrokerNode, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 peer: str, session: AuthSession) -> None:
        self.node = node
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
            self.node.share_partition_manager.on_connection_closed(self.session)
            self.writer.close()
            with contextlib.suppress(Exception):
                await self.writer.wait_closed()

    async def _read_frame(self) -> bytes | None:
        try:
            head = await self.reader.readexactly(4)
        except asyncio.IncompleteReadError:
            return None
        (size,) = struct.unpack(">i", head)
        limit, name = self.node.config["socket.request.max.bytes"], "socket.request.max.bytes"
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
        api_key, api_version = struct.unpack_from(">hh", frame, 4)
        spec = APIS.get(api_key)
        if spec is None:
            raise ProtocolViolation(f"unknown API key {api_key}")
        if not spec.pre_auth and not self.session.authenticated:
            raise ProtocolViolation(f"API {api_key} sent before SASL authentication completed")
        # Kafka closes the connection on a request outside the advertised ranges (SocketServer's
        # parseRequestHeader); only ApiVersions is answered, with UNSUPPORTED_VERSION (KIP-511).
        low, high = advertised_by(self.node.config).get(api_key, (0, -1))
        if not low <= api_version <= high:
            if api_key == API_VERSIONS_KEY:
                return self._unsupported_api_versions(frame)
            raise ProtocolViolation(f"unsupported version {api_version} of API {api_key}")
        try:
            request = spec.request.decode(frame, version=api_version, header=True, framed=True)
        except Exception as exc:  # the generated decoder raises many types on garbage
            raise ProtocolViolation(f"cannot decode API {api_key} v{api_version}: {exc!r}") from None
        bad_null = null_violation(request, api_version)
        if bad_null is not None:
            # Kafka's reader fails on this too ("non-nullable field was serialized as null").
            raise ProtocolViolation(f"API {api_key} v{api_version}: non-nullable field {bad_null} is null")
        header = request.header
        ctx = RequestContext(self.node, api_key, api_version, header.correlation_id,
                             getattr(header, "client_id", None), self.peer, self.session.principal,
                             self.session.security.authorizer, self.session)
        response = await self._dispatch(spec, ctx, request)
        if response is None:
            return None
        return self._encode(response, api_version, header.correlation_id)

    async def _dispatch(self, spec: ApiSpec, ctx: RequestContext, request: Any) -> Any:
        try:
            return await spec.handler(ctx, request)
        except ProtocolViolation:
            raise
        except Exception as exc:
            # A handler bug must not take the node down: log it and drop this connection only.
            log.exception("API %s v%s from %s failed", spec.key, ctx.api_version, self.peer)
            raise ProtocolViolation(f"internal error handling API {spec.key}: {exc!r}") from exc

    @staticmethod
    def _encode(response: Any, version: int, correlation_id: int) -> bytes:
        if version != response.API_VERSION:
            response.API_VERSION = version
        response.with_header(correlation_id=correlation_id)
        return bytes(response.encode(header=True, framed=True))

    async def _raw_sasl_token(self, token: bytes) -> bytes:
        # After SaslHandshake v0 the client sends bare tokens; a failure there has no error answer.
        answer = await self.session.raw_token(token)
        if answer is None:
            raise ProtocolViolation("SASL authentication failed")
        return answer

    def _unsupported_api_versions(self, frame: bytes) -> bytes:
        # A client asking for a newer ApiVersions than we know gets v0 with UNSUPPORTED_VERSION and
        # our ranges, then retries with a version we support (KIP-511).
        (correlation_id,) = struct.unpack_from(">i", frame, 8)
        from kafka_txn_broker.apis.api_versions import build_response

        release = self.node.config["kafka.version.emulate"]
        return self._encode(build_response(0, UNSUPPORTED_VERSION, release=release, config=self.node.config), 0,
                            correlation_id)
