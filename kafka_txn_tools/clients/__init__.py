"""Clients for read-process-write loops over share groups with KIP-1289 transactional acknowledgements.

No public client sends TxnShareAcknowledge. Here:
- TransactionalShareProducer (producer.py): kafka-python's transactional KafkaProducer plus
  send_share_acknowledgements_to_transaction(acks, group_metadata);
- ShareGroupMetadata and share_group_metadata() (group_metadata.py): the share member's identity, asked of
  the group coordinator with ShareGroupDescribe, since librdkafka's ShareConsumer does not expose it;
- acks_from_messages() and release_polled() (acks.py): from polled records to acknowledgements, and back to
  the consumer once the transaction has ended.

The reader is librdkafka's ShareConsumer (confluent_kafka 2.16.1). Measured against the embedded broker
(tests/tools/clients/test_librdkafka_share_consumer.py keeps each point):
- It must run with share.acknowledgement.mode=explicit. In implicit mode its next poll ACCEPTs the previous
  poll's records itself: after an aborted transaction, whose records the broker gave back to the member,
  that acknowledges them with no output written, i.e. loses them.
- In explicit mode, poll() raises IllegalStateException ("N records from previous poll have not been
  acknowledged") until every record of the previous poll was passed to acknowledge(). So after commit or
  abort the loop acknowledges them through the consumer too: with RELEASE (release_polled()).
- Committed records stay acknowledged: the consumer's RELEASE (or ACCEPT) reaches the broker with its next
  fetch and is refused whole with INVALID_RECORD_STATE; the consumer does not raise, the error only reaches
  the acknowledgement commit callback (or commit_sync's result). The records are not delivered again.
- Aborted records come back to the member (ACQUIRED); its RELEASE makes them available at once and they are
  delivered again (delivery count + 1). Without that RELEASE they would wait for their acquisition lock.
- Nothing conflicting is sent while the transaction is open: the consumer sends acknowledgements only on
  poll / commit / close, and staged records refuse plain acknowledgements anyway (INVALID_RECORD_STATE).
"""

from __future__ import annotations

from kafka_txn_broker.formats.messages import kafka_python

# Before the modules below import kafka-python: without its schema loader's deprecation warnings.
kafka_python.load()

from kafka_txn_tools.clients.acks import ACCEPT, REJECT, AckBatch, acks_from_messages, release_polled  # noqa: E402
from kafka_txn_tools.clients.errors import (  # noqa: E402
    AbortableShareAcknowledgementError,
    FatalShareAcknowledgementError,
    ShareAcknowledgementError,
    TxnShareAcknowledgeUnsupportedError,
)
from kafka_txn_tools.clients.group_metadata import ShareGroupMetadata, ShareMemberNotFoundError, share_group_metadata  # noqa: E402
from kafka_txn_tools.clients.producer import TransactionalShareProducer  # noqa: E402

__all__ = [
    "ACCEPT", "REJECT", "AbortableShareAcknowledgementError", "AckBatch", "FatalShareAcknowledgementError",
    "ShareAcknowledgementError", "ShareGroupMetadata", "ShareMemberNotFoundError", "TransactionalShareProducer",
    "TxnShareAcknowledgeUnsupportedError", "acks_from_messages", "release_polled", "share_group_metadata",
]
