"""Wall-clock jumps (an NTP step, a VM resumed) against the broker's timers, with real clients.

The broker runs on a ManualClock started at the real time (so librdkafka's record timestamps agree with
it). `set_wall` steps the wall clock alone; `advance` moves wall and monotonic time together, as real
time passing does. The timers under test: the transaction timeout reaper, transactional.id
expiration and producer-id expiration. Each test fails on timers that measure wall-clock deltas.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from kafka.protocol.admin import (
    DescribeProducersRequest,
    DescribeProducersResponse,
    DescribeTransactionsRequest,
    DescribeTransactionsResponse,
)

from kafka_txn_broker import EmbeddedCluster
from kafka_txn_broker.clock import ManualClock
from tests.broker.wire import roundtrip

HOUR = 3_600_000
DAY = 24 * HOUR
TXN_TIMEOUT = 60_000
QUIET = {"log_level": 0}


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(start_ms=int(time.time() * 1000))


@pytest.fixture
def cluster(tmp_path: Any, clock: ManualClock) -> Iterator[EmbeddedCluster]:
    config = {"transaction.state.log.num.partitions": 1, "offsets.topic.num.partitions": 1,
              "producer.id.expiration.check.interval.ms": 1000}
    with EmbeddedCluster(nodes=1, data_dir=tmp_path, config=config, clock=clock) as c:
        c.create_topic("t", 1, 1)
        yield c


def _txn_producer(cluster: EmbeddedCluster, txn_id: str) -> Producer:
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": txn_id,
                  "transaction.timeout.ms": TXN_TIMEOUT, "linger.ms": 0, **QUIET})
    p.init_transactions(30)
    return p


def _txn_state(cluster: EmbeddedCluster, txn_id: str) -> str:
    resp = roundtrip(cluster.bootstrap_servers, DescribeTransactionsRequest[0](transactional_ids=[txn_id]),
                     DescribeTransactionsResponse)
    (state,) = resp.transaction_states
    return "NotFound" if state.error_code == 105 else str(state.transaction_state)


def _producers(cluster: EmbeddedCluster) -> list[int]:
    req = DescribeProducersRequest[0](topics=[DescribeProducersRequest.TopicRequest(name="t", partition_indexes=[0])])
    resp = roundtrip(cluster.bootstrap_servers, req, DescribeProducersResponse)
    return [p.producer_id for p in resp.topics[0].partitions[0].active_producers]


def _committed_values(cluster: EmbeddedCluster) -> list[bytes]:
    c = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "jump-check",
                  "isolation.level": "read_committed", "enable.auto.commit": False, **QUIET})
    c.assign([TopicPartition("t", 0, 0)])
    out: list[bytes] = []
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            msgs = c.consume(100, 0.5)
            out.extend(m.value() for m in msgs if m.error() is None)
            if not msgs and out:
                break
    finally:
        c.close()
    return out


def _wait_state(cluster: EmbeddedCluster, txn_id: str, state: str) -> None:
    """COMPLETE_* is written after commit_transaction returns (markers first): wait for it."""
    deadline = time.monotonic() + 10
    while _txn_state(cluster, txn_id) != state and time.monotonic() < deadline:
        time.sleep(0.02)
    assert _txn_state(cluster, txn_id) == state


def _reap(cluster: EmbeddedCluster, clock: ManualClock, elapsed_ms: int) -> None:
    """Let `elapsed_ms` of real time pass on the broker and run its periodic work."""
    clock.advance(elapsed_ms)
    cluster.tick()


def test_wall_clock_jumping_forward_does_not_abort_a_live_transaction(cluster: EmbeddedCluster,
                                                                     clock: ManualClock) -> None:
    p = _txn_producer(cluster, "fwd")
    p.begin_transaction()
    p.produce("t", value=b"kept")
    assert p.flush(10) == 0
    assert _txn_state(cluster, "fwd") == "Ongoing"

    clock.set_wall(clock.millis() + 2 * HOUR)  # far past the 60 s timeout on the wall clock
    _reap(cluster, clock, 11_000)  # the reaper runs (every 10 s); only 11 s really passed
    assert _txn_state(cluster, "fwd") == "Ongoing"

    p.commit_transaction(30)
    assert _committed_values(cluster) == [b"kept"]


def test_wall_clock_jumping_back_does_not_keep_a_dead_transaction(cluster: EmbeddedCluster,
                                                                  clock: ManualClock) -> None:
    p = _txn_producer(cluster, "back")
    p.begin_transaction()
    p.produce("t", value=b"never committed")
    assert p.flush(10) == 0

    clock.set_wall(clock.millis() - 2 * HOUR)  # the transaction now "started" in the future
    _reap(cluster, clock, 30_000)
    assert _txn_state(cluster, "back") == "Ongoing"  # not early either: 30 s < 60 s
    _reap(cluster, clock, 31_000)  # 61 s since it started: the reaper aborts it
    _wait_state(cluster, "back", "CompleteAbort")

    # The LSO moved past the aborted data: a later committed transaction is readable, the aborted one not.
    q = _txn_producer(cluster, "after")
    q.begin_transaction()
    q.produce("t", value=b"visible")
    q.commit_transaction(30)
    assert _committed_values(cluster) == [b"visible"]


def test_transactional_id_expiration_follows_elapsed_time_not_the_wall_clock(cluster: EmbeddedCluster,
                                                                             clock: ManualClock) -> None:
    p = _txn_producer(cluster, "idle")
    p.begin_transaction()
    p.produce("t", value=b"one")
    p.commit_transaction(30)
    _wait_state(cluster, "idle", "CompleteCommit")

    # transactional.id.expiration.ms is 7 days; the wall clock leaps 8 days, one hour passes.
    clock.set_wall(clock.millis() + 8 * DAY)
    _reap(cluster, clock, HOUR)
    assert _txn_state(cluster, "idle") == "CompleteCommit"
    p.begin_transaction()  # the same producer goes on with its id
    p.produce("t", value=b"two")
    p.commit_transaction(30)
    _wait_state(cluster, "idle", "CompleteCommit")

    # Back 8 days, then 7 days and an hour of real idleness: the id expires regardless.
    clock.set_wall(clock.millis() - 8 * DAY)
    _reap(cluster, clock, 7 * DAY + HOUR)
    assert _txn_state(cluster, "idle") == "NotFound"


def test_producer_id_expiration_follows_elapsed_time_not_the_wall_clock(cluster: EmbeddedCluster,
                                                                        clock: ManualClock) -> None:
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "enable.idempotence": True, **QUIET})
    p.produce("t", value=b"a")
    assert p.flush(10) == 0
    (pid,) = _producers(cluster)

    # producer.id.expiration.ms is one day: a 2-day leap of the wall clock must not forget a producer
    # that wrote a second ago (its next batch would fail with UNKNOWN_PRODUCER_ID).
    clock.set_wall(clock.millis() + 2 * DAY)
    _reap(cluster, clock, 2_000)
    assert _producers(cluster) == [pid]

    # A step back of 2 days, then a real day of silence: the producer is forgotten all the same.
    clock.set_wall(clock.millis() - 4 * DAY)
    _reap(cluster, clock, DAY - 5_000)
    assert _producers(cluster) == [pid]
    _reap(cluster, clock, 5_000)
    assert _producers(cluster) == []
