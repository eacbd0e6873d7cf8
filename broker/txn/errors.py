"""Kafka error codes the transaction coordinator returns, by Kafka's names (org.apache.kafka.common.protocol.Errors).

The coordinator works with plain codes, as Kafka's does with `Errors`, because most outcomes are
"reply with this code" rather than exceptional control flow.
"""

from __future__ import annotations

from kafka.errors import BrokerResponseError

NONE = 0
UNKNOWN_SERVER_ERROR = -1
CORRUPT_MESSAGE = 2
UNKNOWN_TOPIC_OR_PARTITION = 3
NOT_LEADER_OR_FOLLOWER = 6
REQUEST_TIMED_OUT = 7
MESSAGE_TOO_LARGE = 10
COORDINATOR_LOAD_IN_PROGRESS = 14
COORDINATOR_NOT_AVAILABLE = 15
NOT_COORDINATOR = 16
INVALID_TOPIC_EXCEPTION = 17
RECORD_LIST_TOO_LARGE = 18
NOT_ENOUGH_REPLICAS = 19
NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
INVALID_REQUIRED_ACKS = 21
CLUSTER_AUTHORIZATION_FAILED = 31
UNSUPPORTED_FOR_MESSAGE_FORMAT = 43
UNSUPPORTED_VERSION = 35
INVALID_REQUEST = 42
INVALID_PRODUCER_EPOCH = 47
INVALID_TXN_STATE = 48
INVALID_PRODUCER_ID_MAPPING = 49
INVALID_TRANSACTION_TIMEOUT = 50
CONCURRENT_TRANSACTIONS = 51
TRANSACTION_COORDINATOR_FENCED = 52
KAFKA_STORAGE_ERROR = 56
OPERATION_NOT_ATTEMPTED = 55
PRODUCER_FENCED = 90
TRANSACTIONAL_ID_NOT_FOUND = 105
TRANSACTION_ABORTABLE = 120
INVALID_REGULAR_EXPRESSION = 128

NAMES = {v: k for k, v in list(globals().items()) if k.isupper() and isinstance(v, int)}


def name(code: int) -> str:
    return NAMES.get(code, str(code))


class InvalidRegularExpressionError(BrokerResponseError):
    """INVALID_REGULAR_EXPRESSION (128, KIP-848/KIP-1152): kafka-python 3.0.12 has no class for it."""

    errno = INVALID_REGULAR_EXPRESSION
    message = "INVALID_REGULAR_EXPRESSION"
    description = "The regular expression is not valid."


class CoordinatorError(Exception):
    """A coordinator outcome other than NONE, carried through helpers that would otherwise return tuples."""

    def __init__(self, code: int, message: str = "") -> None:
        super().__init__(message or name(code))
        self.code = code
