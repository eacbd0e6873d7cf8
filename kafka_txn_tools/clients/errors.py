"""What `send_share_acknowledgements_to_transaction` raises, by what the caller must do next.

All are kafka-python KafkaError subclasses, so a loop written as the KIP's example (fatal errors first, then
any KafkaError -> abort) handles them as Kafka's Java client would:
- FatalShareAcknowledgementError: the producer is fenced (PRODUCER_FENCED, INVALID_PRODUCER_EPOCH) or not
  allowed to use its transactional id. Nothing was staged by the refused request; close the producer.
- AbortableShareAcknowledgementError: this transaction cannot commit (a stale or unknown member, a record
  the member does not hold, a coordinator that stayed busy, ...). Call abort_transaction(): what was staged
  goes back to the member, the transaction's output is discarded, and the loop polls again.
- TxnShareAcknowledgeUnsupportedError: the cluster does not offer TxnShareAcknowledge at all; raised before
  any byte is sent. Enable `share.transactional.acknowledgement.enable` (with transaction.version 2).
"""

from __future__ import annotations

from kafka.errors import KafkaError

ENABLE_PROPERTY = "share.transactional.acknowledgement.enable"


class ShareAcknowledgementError(KafkaError):
    """Base class; `error` is Kafka's error name when a broker answered with one."""

    def __init__(self, message: str, error: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.error = error

    def __str__(self) -> str:
        return self.message


class FatalShareAcknowledgementError(ShareAcknowledgementError):
    """The producer cannot go on: close it (a new instance with the same transactional id takes over)."""


class AbortableShareAcknowledgementError(ShareAcknowledgementError):
    """The transaction must be aborted with abort_transaction(); the producer stays usable."""


class TxnShareAcknowledgeUnsupportedError(ShareAcknowledgementError):
    """The broker does not advertise TxnShareAcknowledge (KIP-1289)."""

    def __init__(self, broker: str) -> None:
        super().__init__(
            f"{broker} does not offer TxnShareAcknowledge (KIP-1289): transactional share acknowledgements "
            f"need `{ENABLE_PROPERTY}=true` on the brokers (with transaction.version 2)", "UNSUPPORTED_VERSION")
