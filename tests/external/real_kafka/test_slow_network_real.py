"""Many requests to one broker at once, over a network that does not answer at once.

find-hanging reads `__transaction_state` one Fetch per partition, all at once: each hang's id's partition for its
coordinator's decision (which decides between the printed abort and commit), or every partition when a producer
id needs its last owner (KAFKA-9144's expired ids). One broker leads all of them here (50, Kafka's default).
kafka-python fails a request past its fifth in flight to one broker at once, with the error it gives for a
broker it cannot reach; the proxy in front of the broker (conftest's `proxied_kafka`) holds the tool's Fetch
requests for a second, as a slow network would, so that answers cannot come back before the sixth is sent.
Before connection/in_flight.py, every read past the fifth came back "unreachable": decisions unknown, and an
expired id's last owner not found.
"""

from __future__ import annotations

import time

from kafka_txn_broker.formats.partitioning import partition_for
from tests.external.real_kafka.test_expired_id_real import scan_while, until_expired
from tests.support.real_kafka import KafkaCluster
from tests.support.real_kafka.hang import stage_hangs
from tests.support.real_kafka.proxy import HoldingProxy
from tests.support.real_kafka.staging import ready_topic, warm_up

FETCH = 1


def test_every_read_of_transaction_state_is_answered_over_a_slow_network(
        proxied_kafka: KafkaCluster, network: HoldingProxy) -> None:
    bs = proxied_kafka.bootstrap_servers
    warm_up(bs)
    topic = ready_topic(bs, f"real-slow-{time.monotonic_ns() % 10**8}", 8)
    ids = [f"{topic}-late-{p}" for p in range(8)]
    assert len({partition_for(i, 50) for i in ids}) > 5  # more reads than kafka-python keeps in flight
    staged = [h for p, txn_id in enumerate(ids) for h in stage_hangs(bs, topic, [p], txn_id)]
    for txn_id in ids:
        until_expired(bs, txn_id)  # each hang's last owner is then looked for in every partition
    doc = scan_while(network, bs, topic, lambda: time.sleep(1), api_key=FETCH)
    assert not [n for n in doc["notes"] if "__transaction_state" in n], doc["notes"]
    rows = {(h["partition"], h["producer_id"], h["reason"], h["last_known_transactional_id"]) for h in doc["hanging"]}
    assert rows == {(h.partition, h.producer_id, "no-transactional-id", h.transactional_id) for h in staged}
