"""Errors the tools raise for people: each names the thing that failed and the fix.

Every layer raises them (the connection: ConnectionFailed, MissingApi, BrokerError; the flows: Refused,
NothingToDo; everyone: UsageError), so they sit at the bottom beside models.py and import nothing of the tools.

The CLI maps the classes to exit codes (cli/errors.py); nothing here prints or exits.
Kafka error codes are named by kafka_txn_broker.formats.errors (the project's one table), imported
lazily so importing this module stays cheap.
"""

from __future__ import annotations


class KafkaTxnError(Exception):
    """A failure the user can act on; `str()` is the whole message, `fix` the suggested remedy."""

    def __init__(self, message: str, fix: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.fix = fix

    def __str__(self) -> str:
        return f"{self.message}: {self.fix}" if self.fix else self.message


class UsageError(KafkaTxnError):
    """The command line or a file the user gave is wrong."""


class ConfigError(UsageError):
    """--command-config, --profile or the profiles file is wrong."""


class ConnectionFailed(KafkaTxnError):
    """The cluster could not be reached or refused us (network, TLS, SASL). `cause` names which, in Kafka's
    spelling where Kafka has one (SASL_AUTHENTICATION_FAILED, ...): the monitor counts failures by it."""

    def __init__(self, message: str, fix: str | None = None, cause: str = "CONNECTION_FAILED") -> None:
        super().__init__(message, fix)
        self.cause = cause


class BrokerError(KafkaTxnError):
    """A broker answered a request with an error code."""

    def __init__(self, message: str, error: str, fix: str | None = None) -> None:
        super().__init__(message, fix if fix is not None else fix_for(error))
        self.error = error


class NothingToDo(KafkaTxnError):
    """The requested change already happened (e.g. the transaction is no longer open)."""


class Refused(KafkaTxnError):
    """A write was refused before anything was written (the target did not validate, or is live)."""


class MissingApi(KafkaTxnError):
    """The cluster does not offer an API the command needs (Kafka before 2.8/3.0, or a Kafka-compatible
    broker without the KIP-664 admin APIs). One exit code for all of them (cli/exit_codes.py)."""

    def __init__(self, api: str, message: str, fix: str | None = None) -> None:
        super().__init__(message, fix)
        self.api = api


def error_name(code: int) -> str:
    """Kafka's name for an error code (29 -> TOPIC_AUTHORIZATION_FAILED)."""
    from kafka_txn_broker.formats import errors  # lazy, like every use of the broker package in the CLI

    return errors.name(code)


def error_description(code: int) -> str:
    """Kafka's description of a code, as the upstream tool prints it (kafka-python carries Kafka's texts)."""
    from kafka import errors  # lazy: importing kafka costs ~0.1 s

    if code not in errors.kafka_errors:
        return _NEWER_DESCRIPTIONS.get(code, error_name(code))
    return str(errors.for_code(code).description)


# Descriptions of codes newer than kafka-python 3.0.12.
_NEWER_DESCRIPTIONS = {128: "The regular expression is not valid."}


# What an operator does about the errors these commands meet most (names as Kafka spells them).
_FIXES = {
    "TOPIC_AUTHORIZATION_FAILED": "grant the principal READ (DescribeProducers) / DESCRIBE on the topic",
    "CLUSTER_AUTHORIZATION_FAILED": (
        "writing transaction markers needs CLUSTER_ACTION (or ALTER) on the cluster resource"
    ),
    "TRANSACTIONAL_ID_AUTHORIZATION_FAILED": (
        "grant DESCRIBE (WRITE for force-terminate) on the transactional id"
    ),
    "UNKNOWN_TOPIC_OR_PARTITION": "check the topic name and partition number (`kafka-txn describe-producers --all`)",
    "NOT_LEADER_OR_FOLLOWER": "leadership moved or the broker holds no replica; retry or pick a replica's --broker-id",
    "INVALID_TXN_STATE": "no open transaction starts at that offset any more; re-run describe-producers",
    "INVALID_PRODUCER_EPOCH": "the producer's epoch moved on since it was read; re-run describe-producers",
    "TRANSACTION_COORDINATOR_FENCED": "the coordinator epoch is older than the partition's; re-read it and retry",
    "TRANSACTIONAL_ID_NOT_FOUND": "the coordinator does not know this transactional id (check the spelling)",
    "COORDINATOR_LOAD_IN_PROGRESS": "the coordinator is loading its state; retry in a few seconds",
    "COORDINATOR_NOT_AVAILABLE": "the transaction coordinator is unavailable; retry once the broker is healthy",
    "NOT_COORDINATOR": "coordinator moved; retry",
    "CONCURRENT_TRANSACTIONS": "the transaction is completing right now; retry in a moment",
    "INVALID_REGULAR_EXPRESSION": "the pattern must be a valid Java regular expression",
    "KAFKA_STORAGE_ERROR": "the broker's log directory failed; check the broker",
    "UNSUPPORTED_VERSION": "the broker does not support this request version",
}


def fix_for(error: str) -> str | None:
    return _FIXES.get(error)


def error_code(name: str) -> int:
    """Kafka's code for an error name (TOPIC_AUTHORIZATION_FAILED -> 29); -1 for names of ours."""
    from kafka_txn_broker.formats import errors

    found = errors.code(name)
    return -1 if found is None else found
