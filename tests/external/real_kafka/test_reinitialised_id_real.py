"""A hang whose transactional id a new producer instance initialises again, on real Apache Kafka: the epochs of the
coordinator and of the partition's open transaction then differ, but not the way `epoch-mismatch` means.

InitProducerId on a known id keeps its producer id and bumps its epoch, so the coordinator's epoch is newer
than the hang's. `kafka-txn find-hanging` reports `transaction-not-ongoing`: the coordinator holds the id as
Empty at its new epoch and will write no marker for the old one. The printed abort clears the partition, and the
new instance's own transaction on that partition still commits.

`epoch-mismatch` on an epoch means the opposite: the coordinator's epoch is *older* than the partition's, so its
markers would be fenced. Apache Kafka cannot produce that while its coordinator has its state: the coordinator
hands out every epoch a partition ever sees (InitProducerId, the epoch fence of a timeout abort, and under
transaction version 2 each EndTxn), so a partition holds a newer epoch than its coordinator only if that
coordinator lost records of its own `__transaction_state` (an unclean leader election of that topic, a restored
disk). That is not staged here. The other `epoch-mismatch`, an id that now belongs to another producer id, is
staged in test_expired_id_real.py.
"""

from __future__ import annotations

import time

from kafka_txn_broker.testing.raw_client import RawKafkaClient
from tests.external.real_kafka.test_find_hanging_real import (
    BACKDATE_MS,
    clear_by_printed_commands,
    only_row,
    scan,
    until_stable,
)
from tests.support.real_kafka import KafkaCluster
from tests.support.real_kafka.staging import stage


def test_a_hang_whose_id_a_new_instance_initialised_again_is_not_ongoing_and_cleared(
        real_kafka: KafkaCluster) -> None:
    bs = real_kafka.bootstrap_servers
    truth = stage(bs, "late-write-after-abort", backdate_ms=BACKDATE_MS).hanging[0]
    with RawKafkaClient(bs) as client:
        code, pe = client.init_producer_id(truth.transactional_id, 60_000)  # the application starts again
        assert code == 0
        assert (pe.producer_id, pe.epoch) == (truth.producer_id, truth.producer_epoch + 1)
        described = client.describe_transaction(truth.transactional_id)
        assert (described.transaction_state, described.producer_epoch) == ("Empty", pe.epoch)

        row = only_row(scan(bs, truth.topic), truth.partition)
        assert (row["kind"], row["reason"], row["producer_id"], row["producer_epoch"], row["start_offset"]) == (
            "partition", "transaction-not-ongoing", truth.producer_id, truth.producer_epoch, truth.start_offset)
        assert "Empty" in row["detail"]
        clear_by_printed_commands(bs, row)

        # The new instance's transaction on the same partition is unharmed by the abort.
        assert client.add_partitions(truth.transactional_id, pe, truth.topic, [truth.partition]) == 0
        assert client.produce_transactional(truth.transactional_id, pe, truth.topic, truth.partition, 0,
                                            [b"new-instance"], int(time.time() * 1000))[0] == 0
        assert client.end_txn(truth.transactional_id, pe, commit=True) == 0
    until_stable(bs, truth.topic, truth.partition)
