"""The project's one error-code table: Kafka's names and codes, the exceptions that carry them, and the codes
exceptions carry."""

from __future__ import annotations

import logging

import kafka.errors
import pytest

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
    assert E.code_of(E.NotLeaderForPartitionError("moved")) == E.NOT_LEADER_OR_FOLLOWER
    # A client library's error that keeps its code the same way (the tools' kafka-python client).
    assert E.code_of(kafka.errors.NotLeaderForPartitionError("moved")) == E.NOT_LEADER_OR_FOLLOWER
    assert E.code_of(OSError(28, "No space left on device")) is None  # an errno that is not Kafka's
    assert E.code_of(kafka.errors.KafkaTimeoutError()) is None


def test_an_exception_without_a_code_is_a_logged_unknown_server_error(caplog: pytest.LogCaptureFixture) -> None:
    assert E.error_code(E.TopicAuthorizationFailedError("no")) == E.TOPIC_AUTHORIZATION_FAILED
    assert E.error_message(E.TopicAuthorizationFailedError("User:bob may not READ orders")) == \
        "User:bob may not READ orders"
    with caplog.at_level(logging.ERROR):
        assert E.error_code(KeyError("bug")) == E.UNKNOWN_SERVER_ERROR
    assert [r.getMessage() for r in caplog.records] == ["unexpected error"]
    assert E.error_message(KeyError("bug")) == "KeyError: 'bug'"


# ---- the broker's exception per code -------------------------------------------------------------------------
# Those defined by name (for_code may have made others for codes no module raises by name).
BROKER_ERRORS = sorted((cls for cls in E.BrokerResponseError.__subclasses__() if getattr(E, cls.__name__, None) is cls),
                       key=lambda cls: cls.__name__)
# The classes kafka-python names too: before they were defined here, the broker raised kafka-python's, so their
# code and their text (which reaches clients in some error messages) must be kafka-python's.
AS_KAFKA_PYTHON = [cls for cls in BROKER_ERRORS if hasattr(kafka.errors, cls.__name__)]


def test_most_of_the_broker_errors_are_kafka_pythons_and_the_others_carry_kafkas_codes() -> None:
    others = {cls.__name__: cls.errno for cls in BROKER_ERRORS if cls not in AS_KAFKA_PYTHON}
    assert others == {"InvalidRegularExpressionError": 128, "ShareSessionLimitReachedError": 133}
    assert len(AS_KAFKA_PYTHON) > 50


@pytest.mark.parametrize("ours", AS_KAFKA_PYTHON, ids=lambda cls: cls.__name__)
def test_a_broker_error_has_kafka_pythons_code_and_text(ours: type[E.BrokerResponseError]) -> None:
    theirs = getattr(kafka.errors, ours.__name__)
    assert ours.errno == theirs.errno
    for args in ((), ("User:bob may not READ orders",), ("two", 2)):
        assert str(ours(*args)) == str(theirs(*args))
        assert E.error_message(ours(*args)) == E.error_message(theirs(*args))


def test_a_bare_broker_error_leaves_the_error_message_null() -> None:
    # As Kafka's responses do for an error raised without a message: the code alone.
    assert E.error_message(E.NotCoordinatorError()) is None
    assert E.error_code(E.NotCoordinatorError()) == E.NOT_COORDINATOR


def test_for_code_gives_the_class_that_carries_a_code() -> None:
    assert E.for_code(E.INVALID_TXN_STATE) is E.InvalidTxnStateError
    assert E.for_code(E.UNKNOWN_SERVER_ERROR) is E.UnknownError
    # A code no module raises by name: a class made once, named after Kafka's name, carrying the code.
    made = E.for_code(E.CONCURRENT_TRANSACTIONS)
    assert made is E.for_code(E.CONCURRENT_TRANSACTIONS) and issubclass(made, E.BrokerResponseError)
    assert made.__name__ == "ConcurrentTransactionsError"
    assert E.error_code(made("busy")) == 51 and str(made("busy")) == "[Error 51] ConcurrentTransactionsError: busy"
