"""Turning exceptions into Kafka error codes."""

from __future__ import annotations

import logging

from kafka.errors import BrokerResponseError

log = logging.getLogger(__name__)

NONE = 0
UNKNOWN_SERVER_ERROR = -1
UNKNOWN_TOPIC_OR_PARTITION = 3
LEADER_NOT_AVAILABLE = 5
NOT_LEADER_OR_FOLLOWER = 6
COORDINATOR_LOAD_IN_PROGRESS = 14
COORDINATOR_NOT_AVAILABLE = 15
NOT_COORDINATOR = 16
TOPIC_AUTHORIZATION_FAILED = 29
GROUP_AUTHORIZATION_FAILED = 30
CLUSTER_AUTHORIZATION_FAILED = 31
INVALID_REQUEST = 42
TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
UNKNOWN_TOPIC_ID = 100


def error_code(exc: BaseException) -> int:
    """The Kafka error code for an exception; unexpected ones are logged and become UNKNOWN_SERVER_ERROR."""
    if isinstance(exc, BrokerResponseError) and isinstance(exc.errno, int):
        return exc.errno
    log.error("unexpected error", exc_info=exc)
    return UNKNOWN_SERVER_ERROR


def error_message(exc: BaseException) -> str | None:
    if isinstance(exc, BrokerResponseError):
        text = str(exc.args[0]) if exc.args else None
        return text
    return f"{type(exc).__name__}: {exc}"
