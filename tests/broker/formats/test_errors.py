"""The project's one error-code table: Kafka's names and codes, and the codes exceptions carry."""

from __future__ import annotations

import logging

import pytest
from kafka.errors import KafkaTimeoutError, NotLeaderForPartitionError, TopicAuthorizationFailedError

from kafka_txn_broker.formats import errors as E

# A sample of Kafka's Errors enum (clients/.../protocol/Errors.java), names as Kafka spells them.
KAFKA = {-1: "UNKNOWN_SERVER_ERROR", 0: "NONE", 2: "CORRUPT_MESSAGE", 6: "NOT_LEADER_OR_FOLLOWER",
         10: "MESSAGE_TOO_LARGE", 17: "INVALID_TOPIC_EXCEPTION", 29: "TOPIC_AUTHORIZATION_FAILED",
         48: "INVALID_TXN_STATE", 56: "KAFKA_STORAGE_ERROR", 87: "INVALID_RECORD", 90: "PRODUCER_FENCED",
         99: "POSITION_OUT_OF_RANGE", 105: "TRANSACTIONAL_ID_NOT_FOUND", 120: "TRANSACTION_ABORTABLE",
         128: "INVALID_REGULAR_EXPRESSION", 133: "SHARE_SESSION_LIMIT_REACHED"}


@pytest.mark.parametrize(("code", "name"), sorted(KAFKA.items()))
def test_names_and_codes_are_kafkas(code: int, name: str) -> None:
    assert E.name(code) == name
    assert E.code(name) == code
    assert getattr(E, name) == code


def test_every_code_from_minus_one_to_the_newest_has_one_name() -> None:
    assert sorted(E.NAMES) == list(range(-1, 134))
    assert len(set(E.NAMES.values())) == len(E.NAMES)
    assert E.name(4000) == "UNKNOWN_ERROR_4000" and E.code("NOT_A_KAFKA_ERROR") is None


def test_codes_carried_by_exceptions() -> None:
    assert E.code_of(E.CorruptRecordError("bad crc")) == E.CORRUPT_MESSAGE
    assert E.code_of(E.ApiError("moved", E.NOT_COORDINATOR)) == E.NOT_COORDINATOR
    assert E.code_of(NotLeaderForPartitionError("moved")) == E.NOT_LEADER_OR_FOLLOWER  # kafka-python's
    assert E.code_of(OSError(28, "No space left on device")) is None  # an errno that is not Kafka's
    assert E.code_of(KafkaTimeoutError()) is None


def test_an_exception_without_a_code_is_a_logged_unknown_server_error(caplog: pytest.LogCaptureFixture) -> None:
    assert E.error_code(TopicAuthorizationFailedError("no")) == E.TOPIC_AUTHORIZATION_FAILED
    assert E.error_message(TopicAuthorizationFailedError("User:bob may not READ orders")) == \
        "User:bob may not READ orders"
    with caplog.at_level(logging.ERROR):
        assert E.error_code(KeyError("bug")) == E.UNKNOWN_SERVER_ERROR
    assert [r.getMessage() for r in caplog.records] == ["unexpected error"]
    assert E.error_message(KeyError("bug")) == "KeyError: 'bug'"
