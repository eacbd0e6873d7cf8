"""A node's request side (Kafka's KafkaApis entry and the request channel's header parsing): a framed
request in, the framed response out.

Per request, in Kafka's order: the API key must be registered, the API allowed before authentication
(ApiVersions, SaslHandshake, SaslAuthenticate) or the connection authenticated, the version within the
ranges this node advertises (ApiVersions outside them is answered v0 UNSUPPORTED_VERSION, KIP-511;
anything else closes the connection, as Kafka's SocketServer does); then the request is decoded, its
non-nullable fields checked, and handed to its handler with a RequestContext of this node. Anything that
cannot be answered raises ProtocolViolation (server/socket_server.py closes that connection).
Event-loop owned; one instance per node.
"""

from __future__ import annotations

import logging
import struct
from typing import TYPE_CHECKING, Any

from kafka_txn_broker.apis.context import RequestContext
from kafka_txn_broker.apis.registry import APIS, ApiSpec, advertised_range, load_all
from kafka_txn_broker.formats import errors as E
from kafka_txn_broker.formats.messages import MalformedRequest, decode_request, encode_response
from kafka_txn_broker.server.socket_server import ProtocolViolation

if TYPE_CHECKING:
    from kafka_txn_broker.security.auth import AuthSession
    from kafka_txn_broker.server.broker_services import BrokerServices

log = logging.getLogger(__name__)

API_VERSIONS_KEY = 18
SASL_HANDSHAKE_KEY = 17
SASL_AUTHENTICATE_KEY = 36


class KafkaApis:
    """The server side's RequestHandler for one node: every registered API, served with `broker`."""

    def __init__(self, broker: BrokerServices) -> None:
        self.broker = broker
        load_all()

    def connection_closed(self, session: AuthSession) -> None:
        # Share sessions opened on this connection end with it (their records are released).
        self.broker.share_partition_manager.on_connection_closed(session)

    async def handle(self, frame: bytes, session: AuthSession, peer: str) -> bytes | None:
        api_key, api_version = struct.unpack_from(">hh", frame, 4)
        spec = APIS.get(api_key)
        if spec is None:
            raise ProtocolViolation(f"unknown API key {api_key}")
        if not spec.pre_auth and not session.authenticated:
            raise ProtocolViolation(f"API {api_key} sent before SASL authentication completed")
        if session.expired() and api_key != SASL_HANDSHAKE_KEY and not (
                api_key == SASL_AUTHENTICATE_KEY and session.exchanging):
            # KIP-368: a session past its lifetime, not re-authenticated: Kafka closes it, the request unanswered.
            raise ProtocolViolation(f"the SASL session of {session.principal} expired without re-authentication")
        # Kafka closes the connection on a request outside the advertised ranges (SocketServer's
        # parseRequestHeader); only ApiVersions is answered, with UNSUPPORTED_VERSION (KIP-511).
        low, high = advertised_range(self.broker.config, api_key) or (0, -1)
        if not low <= api_version <= high:
            if api_key == API_VERSIONS_KEY:
                return self._unsupported_api_versions(frame)
            raise ProtocolViolation(f"unsupported version {api_version} of API {api_key}")
        try:
            request, correlation_id, client_id = decode_request(spec.request, frame, api_version)
        except MalformedRequest as exc:
            raise ProtocolViolation(str(exc)) from None
        ctx = RequestContext(self.broker, api_key, api_version, correlation_id, client_id, peer, session.principal,
                             session.security.authorizer, session)
        response = await self._dispatch(spec, ctx, request)
        if response is None:
            return None
        return encode_response(response, api_version, correlation_id)

    @staticmethod
    async def _dispatch(spec: ApiSpec, ctx: RequestContext, request: Any) -> Any:
        try:
            return await spec.handler(ctx, request)
        except ProtocolViolation:
            raise
        except Exception as exc:
            # A handler bug must not take the node down: log it and drop this connection only.
            log.exception("API %s v%s from %s failed", spec.key, ctx.api_version, ctx.peer)
            raise ProtocolViolation(f"internal error handling API {spec.key}: {exc!r}") from exc

    def _unsupported_api_versions(self, frame: bytes) -> bytes:
        # A client asking for a newer ApiVersions than we know gets v0 with UNSUPPORTED_VERSION and
        # our ranges, then retries with a version we support (KIP-511).
        (correlation_id,) = struct.unpack_from(">i", frame, 8)
        from kafka_txn_broker.apis.api_versions import build_response

        config = self.broker.config
        return encode_response(build_response(0, E.UNSUPPORTED_VERSION, release=config["kafka.version.emulate"],
                                              config=config), 0, correlation_id)
