"""SaslHandshake (v0-1) and SaslAuthenticate (v0-2): the connection's AuthSession does the work.

Both are allowed before authentication. A failed step is answered (SASL_AUTHENTICATION_FAILED 58 with
a message, UNSUPPORTED_SASL_MECHANISM 33 with the enabled list, ILLEGAL_SASL_STATE 34) and then the
connection closes, as Kafka's SaslServerAuthenticator does. SaslAuthenticate v1+ answers carry the
session's lifetime (KIP-368, security/auth.py): the client re-authenticates before it ends with a new
SaslHandshake on the same connection.
"""

from __future__ import annotations

from typing import Any

from kafka_txn_broker.apis.context import RequestContext
from kafka_txn_broker.apis.registry import api
from kafka_txn_broker.formats import errors as E
from kafka_txn_broker.formats.messages import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from kafka_txn_broker.server.socket_server import ProtocolViolation


@api(SaslHandshakeRequest, SaslHandshakeResponse, 0, 1, pre_auth=True)
async def handshake(ctx: RequestContext, req: Any) -> Any:
    if ctx.session is None:
        return SaslHandshakeResponse[ctx.api_version](error_code=E.ILLEGAL_SASL_STATE, mechanisms=[])
    code, mechanisms = ctx.session.handshake(req.mechanism, ctx.api_version)
    return SaslHandshakeResponse[ctx.api_version](error_code=code, mechanisms=mechanisms)


@api(SaslAuthenticateRequest, SaslAuthenticateResponse, 0, 2, pre_auth=True)
async def authenticate(ctx: RequestContext, req: Any) -> Any:
    message: str | None
    if ctx.session is None:
        code, message, challenge, lifetime = E.ILLEGAL_SASL_STATE, "no SASL session", b"", 0
    elif ctx.session.drop_at_next_token:
        # A re-authentication that switched mechanism: Kafka closes the connection without an answer.
        raise ProtocolViolation(f"re-authentication of {ctx.session.principal} with another SASL mechanism")
    else:
        code, message, challenge, lifetime = await ctx.session.authenticate(bytes(req.auth_bytes))
    # Kafka's schema defaults ErrorMessage to "": a success carries that, not null.
    return SaslAuthenticateResponse[ctx.api_version](error_code=code, error_message="" if message is None else message,
                                                     auth_bytes=challenge, session_lifetime_ms=lifetime)
