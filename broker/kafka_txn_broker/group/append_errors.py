"""What a group member is told when the coordinator's write to `__consumer_offsets` fails."""

from __future__ import annotations

from kafka.errors import (
    BrokerResponseError,
    CoordinatorNotAvailableError,
    InvalidCommitOffsetSizeError,
    InvalidFetchRequestError,
    KafkaStorageError,
    MessageSizeTooLargeError,
    NotCoordinatorError,
    NotEnoughReplicasAfterAppendError,
    NotEnoughReplicasError,
    NotLeaderForPartitionError,
    RecordListTooLargeError,
    RequestTimedOutError,
    UnknownTopicOrPartitionError,
)

UNKNOWN_SERVER_ERROR = -1

# The log's errors mean nothing to a consumer; these are the group-level errors it knows how to handle
# (find the coordinator again, retry later, or give up on an oversized commit), as Kafka maps them.
_MAPPED: dict[int, int] = {
    UnknownTopicOrPartitionError.errno: CoordinatorNotAvailableError.errno,
    NotEnoughReplicasError.errno: CoordinatorNotAvailableError.errno,
    NotEnoughReplicasAfterAppendError.errno: CoordinatorNotAvailableError.errno,
    RequestTimedOutError.errno: CoordinatorNotAvailableError.errno,
    NotLeaderForPartitionError.errno: NotCoordinatorError.errno,
    KafkaStorageError.errno: NotCoordinatorError.errno,
    MessageSizeTooLargeError.errno: InvalidCommitOffsetSizeError.errno,
    RecordListTooLargeError.errno: InvalidCommitOffsetSizeError.errno,
    InvalidFetchRequestError.errno: InvalidCommitOffsetSizeError.errno,
}


def append_error_code(exc: BaseException) -> int:
    if isinstance(exc, BrokerResponseError) and isinstance(exc.errno, int):
        return _MAPPED.get(exc.errno, exc.errno)
    return UNKNOWN_SERVER_ERROR
