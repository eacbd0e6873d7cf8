"""Kafka's error codes, one table for the whole project (Kafka's org.apache.kafka.common.protocol.Errors).

The broker answers with these codes, its coordinators work with them as Kafka's do with `Errors`
(most outcomes are "reply with this code", not exceptional control flow), and the tools name the codes
brokers send back with `name()`. Names are Kafka's own, e.g. NOT_LEADER_OR_FOLLOWER for 6.

Exceptions that carry a code, all defined here, so the broker raises and catches no class of its wire
codec's library (formats/messages is that codec's one door):
- `ApiError` and its subclasses, raised by the formats in this package and by the coordinators: the text
  given, or the code's name, is the message;
- `BrokerResponseError`, one subclass per code the broker raises by name, named as kafka-python names its
  own (`NotLeaderForPartitionError` for NOT_LEADER_OR_FOLLOWER) and printed as kafka-python prints them,
  because that text reaches clients in some error messages.
Both keep the code in an `errno` class attribute (an ApiError instance may carry another), so `code_of`
reads either, and any exception of a client library built the same way. This package depends on crc32c only.
"""

from __future__ import annotations

import logging

log = logging.getLogger(__name__)

UNKNOWN_SERVER_ERROR = -1
NONE = 0
OFFSET_OUT_OF_RANGE = 1
CORRUPT_MESSAGE = 2
UNKNOWN_TOPIC_OR_PARTITION = 3
INVALID_FETCH_SIZE = 4
LEADER_NOT_AVAILABLE = 5
NOT_LEADER_OR_FOLLOWER = 6
REQUEST_TIMED_OUT = 7
BROKER_NOT_AVAILABLE = 8
REPLICA_NOT_AVAILABLE = 9
MESSAGE_TOO_LARGE = 10
STALE_CONTROLLER_EPOCH = 11
OFFSET_METADATA_TOO_LARGE = 12
NETWORK_EXCEPTION = 13
COORDINATOR_LOAD_IN_PROGRESS = 14
COORDINATOR_NOT_AVAILABLE = 15
NOT_COORDINATOR = 16
INVALID_TOPIC_EXCEPTION = 17
RECORD_LIST_TOO_LARGE = 18
NOT_ENOUGH_REPLICAS = 19
NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
INVALID_REQUIRED_ACKS = 21
ILLEGAL_GENERATION = 22
INCONSISTENT_GROUP_PROTOCOL = 23
INVALID_GROUP_ID = 24
UNKNOWN_MEMBER_ID = 25
INVALID_SESSION_TIMEOUT = 26
REBALANCE_IN_PROGRESS = 27
INVALID_COMMIT_OFFSET_SIZE = 28
TOPIC_AUTHORIZATION_FAILED = 29
GROUP_AUTHORIZATION_FAILED = 30
CLUSTER_AUTHORIZATION_FAILED = 31
INVALID_TIMESTAMP = 32
UNSUPPORTED_SASL_MECHANISM = 33
ILLEGAL_SASL_STATE = 34
UNSUPPORTED_VERSION = 35
TOPIC_ALREADY_EXISTS = 36
INVALID_PARTITIONS = 37
INVALID_REPLICATION_FACTOR = 38
INVALID_REPLICA_ASSIGNMENT = 39
INVALID_CONFIG = 40
NOT_CONTROLLER = 41
INVALID_REQUEST = 42
UNSUPPORTED_FOR_MESSAGE_FORMAT = 43
POLICY_VIOLATION = 44
OUT_OF_ORDER_SEQUENCE_NUMBER = 45
DUPLICATE_SEQUENCE_NUMBER = 46
INVALID_PRODUCER_EPOCH = 47
INVALID_TXN_STATE = 48
INVALID_PRODUCER_ID_MAPPING = 49
INVALID_TRANSACTION_TIMEOUT = 50
CONCURRENT_TRANSACTIONS = 51
TRANSACTION_COORDINATOR_FENCED = 52
TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
SECURITY_DISABLED = 54
OPERATION_NOT_ATTEMPTED = 55
KAFKA_STORAGE_ERROR = 56
LOG_DIR_NOT_FOUND = 57
SASL_AUTHENTICATION_FAILED = 58
UNKNOWN_PRODUCER_ID = 59
REASSIGNMENT_IN_PROGRESS = 60
DELEGATION_TOKEN_AUTH_DISABLED = 61
DELEGATION_TOKEN_NOT_FOUND = 62
DELEGATION_TOKEN_OWNER_MISMATCH = 63
DELEGATION_TOKEN_REQUEST_NOT_ALLOWED = 64
DELEGATION_TOKEN_AUTHORIZATION_FAILED = 65
DELEGATION_TOKEN_EXPIRED = 66
INVALID_PRINCIPAL_TYPE = 67
NON_EMPTY_GROUP = 68
GROUP_ID_NOT_FOUND = 69
FETCH_SESSION_ID_NOT_FOUND = 70
INVALID_FETCH_SESSION_EPOCH = 71
LISTENER_NOT_FOUND = 72
TOPIC_DELETION_DISABLED = 73
FENCED_LEADER_EPOCH = 74
UNKNOWN_LEADER_EPOCH = 75
UNSUPPORTED_COMPRESSION_TYPE = 76
STALE_BROKER_EPOCH = 77
OFFSET_NOT_AVAILABLE = 78
MEMBER_ID_REQUIRED = 79
PREFERRED_LEADER_NOT_AVAILABLE = 80
GROUP_MAX_SIZE_REACHED = 81
FENCED_INSTANCE_ID = 82
ELIGIBLE_LEADERS_NOT_AVAILABLE = 83
ELECTION_NOT_NEEDED = 84
NO_REASSIGNMENT_IN_PROGRESS = 85
GROUP_SUBSCRIBED_TO_TOPIC = 86
INVALID_RECORD = 87
UNSTABLE_OFFSET_COMMIT = 88
THROTTLING_QUOTA_EXCEEDED = 89
PRODUCER_FENCED = 90
RESOURCE_NOT_FOUND = 91
DUPLICATE_RESOURCE = 92
UNACCEPTABLE_CREDENTIAL = 93
INCONSISTENT_VOTER_SET = 94
INVALID_UPDATE_VERSION = 95
FEATURE_UPDATE_FAILED = 96
PRINCIPAL_DESERIALIZATION_FAILURE = 97
SNAPSHOT_NOT_FOUND = 98
POSITION_OUT_OF_RANGE = 99
UNKNOWN_TOPIC_ID = 100
DUPLICATE_BROKER_REGISTRATION = 101
BROKER_ID_NOT_REGISTERED = 102
INCONSISTENT_TOPIC_ID = 103
INCONSISTENT_CLUSTER_ID = 104
TRANSACTIONAL_ID_NOT_FOUND = 105
FETCH_SESSION_TOPIC_ID_ERROR = 106
INELIGIBLE_REPLICA = 107
NEW_LEADER_ELECTED = 108
OFFSET_MOVED_TO_TIERED_STORAGE = 109
FENCED_MEMBER_EPOCH = 110
UNRELEASED_INSTANCE_ID = 111
UNSUPPORTED_ASSIGNOR = 112
STALE_MEMBER_EPOCH = 113
MISMATCHED_ENDPOINT_TYPE = 114
UNSUPPORTED_ENDPOINT_TYPE = 115
UNKNOWN_CONTROLLER_ID = 116
UNKNOWN_SUBSCRIPTION_ID = 117
TELEMETRY_TOO_LARGE = 118
INVALID_REGISTRATION = 119
TRANSACTION_ABORTABLE = 120
INVALID_RECORD_STATE = 121
SHARE_SESSION_NOT_FOUND = 122
INVALID_SHARE_SESSION_EPOCH = 123
FENCED_STATE_EPOCH = 124
INVALID_VOTER_KEY = 125
DUPLICATE_VOTER = 126
VOTER_NOT_FOUND = 127
INVALID_REGULAR_EXPRESSION = 128
REBOOTSTRAP_REQUIRED = 129
STREAMS_INVALID_TOPOLOGY = 130
STREAMS_INVALID_TOPOLOGY_EPOCH = 131
STREAMS_TOPOLOGY_FENCED = 132
SHARE_SESSION_LIMIT_REACHED = 133

NAMES: dict[int, str] = {v: k for k, v in list(globals().items()) if k.isupper() and isinstance(v, int)}
_CODES = {v: k for k, v in NAMES.items()}


def name(code: int) -> str:
    """Kafka's name for a code (29 -> TOPIC_AUTHORIZATION_FAILED); UNKNOWN_ERROR_<code> for codes newer than
    this table."""
    return NAMES.get(code, f"UNKNOWN_ERROR_{code}")


def code(error_name: str) -> int | None:
    """The code of a Kafka error name (TOPIC_AUTHORIZATION_FAILED -> 29); None for names Kafka does not have."""
    return _CODES.get(error_name)


class ApiError(Exception):
    """An error with a Kafka error code (Kafka's ApiException). Subclasses fix the code; an instance may
    carry any code, for outcomes passed through helpers that would otherwise return tuples."""

    errno: int = UNKNOWN_SERVER_ERROR

    def __init__(self, message: str = "", errno: int | None = None) -> None:
        if errno is not None:
            self.errno = errno
        super().__init__(message or name(self.errno))

    @property
    def code(self) -> int:
        return self.errno


class CorruptRecordError(ApiError, ValueError):
    errno = CORRUPT_MESSAGE


class InvalidRecordError(ApiError, ValueError):
    errno = INVALID_RECORD


class MessageTooLargeError(ApiError):
    errno = MESSAGE_TOO_LARGE


class UnsupportedForMessageFormatError(ApiError):
    errno = UNSUPPORTED_FOR_MESSAGE_FORMAT


class BrokerResponseError(Exception):
    """An outcome the broker answers with the Kafka error code in the class's `errno`; args[0], when given, is
    the response's error message (a bare instance leaves it null).

    str() is kafka-python's text for its error of the same name, "[Error 29] TopicAuthorizationFailedError:
    User:bob may not READ orders": some responses carry it (a denied resource, a bad topic name, a config a
    validator refuses), and clients read it, so it must not change with the codec.
    """

    errno: int = UNKNOWN_SERVER_ERROR

    def __str__(self) -> str:
        named = f"{type(self).__name__}: {super().__str__()}" if self.args else type(self).__name__
        return f"[Error {self.errno}] {named}"



class UnknownError(BrokerResponseError):
    errno = UNKNOWN_SERVER_ERROR


class OffsetOutOfRangeError(BrokerResponseError):
    errno = OFFSET_OUT_OF_RANGE


class UnknownTopicOrPartitionError(BrokerResponseError):
    errno = UNKNOWN_TOPIC_OR_PARTITION


class NotLeaderForPartitionError(BrokerResponseError):
    errno = NOT_LEADER_OR_FOLLOWER


class OffsetMetadataTooLargeError(BrokerResponseError):
    errno = OFFSET_METADATA_TOO_LARGE


class CoordinatorLoadInProgressError(BrokerResponseError):
    errno = COORDINATOR_LOAD_IN_PROGRESS


class CoordinatorNotAvailableError(BrokerResponseError):
    errno = COORDINATOR_NOT_AVAILABLE


class NotCoordinatorError(BrokerResponseError):
    errno = NOT_COORDINATOR


class InvalidTopicError(BrokerResponseError):
    errno = INVALID_TOPIC_EXCEPTION


class RecordListTooLargeError(BrokerResponseError):
    errno = RECORD_LIST_TOO_LARGE


class NotEnoughReplicasError(BrokerResponseError):
    errno = NOT_ENOUGH_REPLICAS


class InvalidRequiredAcksError(BrokerResponseError):
    errno = INVALID_REQUIRED_ACKS


class IllegalGenerationError(BrokerResponseError):
    errno = ILLEGAL_GENERATION


class InconsistentGroupProtocolError(BrokerResponseError):
    errno = INCONSISTENT_GROUP_PROTOCOL


class InvalidGroupIdError(BrokerResponseError):
    errno = INVALID_GROUP_ID


class UnknownMemberIdError(BrokerResponseError):
    errno = UNKNOWN_MEMBER_ID


class InvalidSessionTimeoutError(BrokerResponseError):
    errno = INVALID_SESSION_TIMEOUT


class RebalanceInProgressError(BrokerResponseError):
    errno = REBALANCE_IN_PROGRESS


class TopicAuthorizationFailedError(BrokerResponseError):
    errno = TOPIC_AUTHORIZATION_FAILED


class GroupAuthorizationFailedError(BrokerResponseError):
    errno = GROUP_AUTHORIZATION_FAILED


class ClusterAuthorizationFailedError(BrokerResponseError):
    errno = CLUSTER_AUTHORIZATION_FAILED


class UnsupportedVersionError(BrokerResponseError):
    errno = UNSUPPORTED_VERSION


class TopicAlreadyExistsError(BrokerResponseError):
    errno = TOPIC_ALREADY_EXISTS


class InvalidPartitionsError(BrokerResponseError):
    errno = INVALID_PARTITIONS


class InvalidReplicationFactorError(BrokerResponseError):
    errno = INVALID_REPLICATION_FACTOR


class InvalidConfigurationError(BrokerResponseError):
    errno = INVALID_CONFIG


class InvalidRequestError(BrokerResponseError):
    errno = INVALID_REQUEST


class PolicyViolationError(BrokerResponseError):
    errno = POLICY_VIOLATION


class OutOfOrderSequenceNumberError(BrokerResponseError):
    errno = OUT_OF_ORDER_SEQUENCE_NUMBER


class InvalidProducerEpochError(BrokerResponseError):
    errno = INVALID_PRODUCER_EPOCH


class InvalidTxnStateError(BrokerResponseError):
    errno = INVALID_TXN_STATE


class TransactionCoordinatorFencedError(BrokerResponseError):
    errno = TRANSACTION_COORDINATOR_FENCED


class TransactionalIdAuthorizationFailedError(BrokerResponseError):
    errno = TRANSACTIONAL_ID_AUTHORIZATION_FAILED


class SecurityDisabledError(BrokerResponseError):
    errno = SECURITY_DISABLED


class KafkaStorageError(BrokerResponseError):
    errno = KAFKA_STORAGE_ERROR


class UnknownProducerIdError(BrokerResponseError):
    errno = UNKNOWN_PRODUCER_ID


class NonEmptyGroupError(BrokerResponseError):
    errno = NON_EMPTY_GROUP


class GroupIdNotFoundError(BrokerResponseError):
    errno = GROUP_ID_NOT_FOUND


class FencedLeaderEpochError(BrokerResponseError):
    errno = FENCED_LEADER_EPOCH


class UnknownLeaderEpochError(BrokerResponseError):
    errno = UNKNOWN_LEADER_EPOCH


class MemberIdRequiredError(BrokerResponseError):
    errno = MEMBER_ID_REQUIRED


class GroupMaxSizeReachedError(BrokerResponseError):
    errno = GROUP_MAX_SIZE_REACHED


class FencedInstanceIdError(BrokerResponseError):
    errno = FENCED_INSTANCE_ID


class GroupSubscribedToTopicError(BrokerResponseError):
    errno = GROUP_SUBSCRIBED_TO_TOPIC


class UnstableOffsetCommitError(BrokerResponseError):
    errno = UNSTABLE_OFFSET_COMMIT


class ProducerFencedError(BrokerResponseError):
    errno = PRODUCER_FENCED


class UnknownTopicIdError(BrokerResponseError):
    errno = UNKNOWN_TOPIC_ID


class FencedMemberEpochError(BrokerResponseError):
    errno = FENCED_MEMBER_EPOCH


class UnreleasedInstanceIdError(BrokerResponseError):
    errno = UNRELEASED_INSTANCE_ID


class UnsupportedAssignorError(BrokerResponseError):
    errno = UNSUPPORTED_ASSIGNOR


class StaleMemberEpochError(BrokerResponseError):
    errno = STALE_MEMBER_EPOCH


class TransactionAbortableError(BrokerResponseError):
    errno = TRANSACTION_ABORTABLE


class InvalidRecordStateError(BrokerResponseError):
    errno = INVALID_RECORD_STATE


class ShareSessionNotFoundError(BrokerResponseError):
    errno = SHARE_SESSION_NOT_FOUND


class InvalidShareSessionEpochError(BrokerResponseError):
    errno = INVALID_SHARE_SESSION_EPOCH


class FencedStateEpochError(BrokerResponseError):
    errno = FENCED_STATE_EPOCH


class InvalidRegularExpressionError(BrokerResponseError):
    errno = INVALID_REGULAR_EXPRESSION


class ShareSessionLimitReachedError(BrokerResponseError):
    errno = SHARE_SESSION_LIMIT_REACHED


_BY_CODE: dict[int, type[BrokerResponseError]] = {cls.errno: cls for cls in BrokerResponseError.__subclasses__()}


def for_code(code: int) -> type[BrokerResponseError]:
    """The BrokerResponseError class of a code: the one above, or one made (and kept) for a code that no module
    raises by name, named after Kafka's name (CONCURRENT_TRANSACTIONS -> ConcurrentTransactionsError)."""
    found = _BY_CODE.get(code)
    if found is None:
        camel = "".join(part.capitalize() for part in name(code).split("_"))
        found = _BY_CODE.setdefault(code, type(f"{camel}Error", (BrokerResponseError,), {"errno": code}))
    return found


def code_of(exc: BaseException) -> int | None:
    """The Kafka error code an exception carries (ours, or a client library's that keeps it in `errno` the same
    way), None for any other exception."""
    errno = getattr(type(exc), "errno", None)  # a class attribute: OSError's errno is per instance
    if isinstance(exc, ApiError):
        errno = exc.errno
    return errno if isinstance(errno, int) else None


def error_code(exc: BaseException) -> int:
    """The code to answer with; an exception without one is a bug: logged, and UNKNOWN_SERVER_ERROR."""
    found = code_of(exc)
    if found is None:
        log.error("unexpected error", exc_info=exc)
        return UNKNOWN_SERVER_ERROR
    return found


def error_message(exc: BaseException) -> str | None:
    """The text for a response's error message: the exception's own for a Kafka error, else its type too."""
    if code_of(exc) is not None:
        return str(exc.args[0]) if exc.args else None
    return f"{type(exc).__name__}: {exc}"
