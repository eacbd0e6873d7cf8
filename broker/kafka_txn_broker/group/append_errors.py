"""What a group member is told when the coordinator's write to `__consumer_offsets` fails."""

from __future__ import annotations

from kafka_txn_broker.formats import errors as E
from kafka_txn_broker.formats.errors import BrokerResponseError

# The log's errors mean nothing to a consumer; these are the group-level errors it knows how to handle
# (find the coordinator again, retry later, or give up on an oversized commit), as Kafka maps them.
_MAPPED: dict[int, int] = {
    E.UNKNOWN_TOPIC_OR_PARTITION: E.COORDINATOR_NOT_AVAILABLE,
    E.NOT_ENOUGH_REPLICAS: E.COORDINATOR_NOT_AVAILABLE,
    E.NOT_ENOUGH_REPLICAS_AFTER_APPEND: E.COORDINATOR_NOT_AVAILABLE,
    E.REQUEST_TIMED_OUT: E.COORDINATOR_NOT_AVAILABLE,
    E.NOT_LEADER_OR_FOLLOWER: E.NOT_COORDINATOR,
    E.KAFKA_STORAGE_ERROR: E.NOT_COORDINATOR,
    E.MESSAGE_TOO_LARGE: E.INVALID_COMMIT_OFFSET_SIZE,
    E.RECORD_LIST_TOO_LARGE: E.INVALID_COMMIT_OFFSET_SIZE,
    E.INVALID_FETCH_SIZE: E.INVALID_COMMIT_OFFSET_SIZE,
}


def append_error_code(exc: BaseException) -> int:
    if isinstance(exc, BrokerResponseError) and isinstance(exc.errno, int):
        return _MAPPED.get(exc.errno, exc.errno)
    return E.UNKNOWN_SERVER_ERROR
