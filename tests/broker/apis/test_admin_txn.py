"""KIP-664 APIs over the wire: DescribeProducers, ListTransactions v0-v2, DescribeTransactions, WriteTxnMarkers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka.protocol.admin import (
    DescribeProducersRequest,
    DescribeProducersResponse,
    DescribeTransactionsRequest,
    DescribeTransactionsResponse,
    ListTransactionsRequest,
    ListTransactionsResponse,
)
from kafka.protocol.producer import WriteTxnMarkersRequest, WriteTxnMarkersResponse

from kafka_txn_broker.clock import ManualClock
from kafka_txn_broker.embedded import EmbeddedCluster
from kafka_txn_broker.formats import errors as E
from kafka_txn_broker.testing.raw_client import ProducerIdAndEpoch, RawKafkaClient
from kafka_txn_tools.connection import wire

TOPIC = "t"


class Env:
    def __init__(self, cluster: EmbeddedCluster, clock: ManualClock) -> None:
        self.cluster = cluster
        self.clock = clock
        self.client = RawKafkaClient(cluster.bootstrap_servers)
        self.client.broker_count()

    def open_txn(self, txn_id: str, partition: int = 0, n: int = 2) -> tuple[ProducerIdAndEpoch, int]:
        code, pe = self.client.init_producer_id(txn_id, 60000)
        assert code == 0
        assert self.client.add_partitions(txn_id, pe, TOPIC, [partition]) == 0
        code, offset = self.client.produce_transactional(txn_id, pe, TOPIC, partition, 0, [b"x"] * n,
                                                         self.clock.millis())
        assert code == 0
        return pe, offset

    def leader(self, partition: int) -> int:
        return self.client.partition_leaders(TOPIC)[partition]

    def send(self, req: Any, version: int, node: int, resp: Any) -> Any:
        return self.client.send(req, version, node, resp)

    def describe_producers(self, node: int, topic: str = TOPIC, partitions: tuple[int, ...] = (0,)) -> Any:
        T = DescribeProducersRequest.TopicRequest
        req = DescribeProducersRequest[0](topics=[T(name=topic, partition_indexes=list(partitions))])
        return self.send(req, 0, node, DescribeProducersResponse).topics[0].partitions

    def list_txns(self, node: int, version: int = 2, **kw: Any) -> Any:
        args: dict[str, Any] = {"state_filters": [], "producer_id_filters": []}
        if version >= 1:
            args["duration_filter"] = kw.pop("duration_filter", -1)
        if version >= 2:
            args["transactional_id_pattern"] = kw.pop("pattern", None)
        args.update(kw)
        return self.send(ListTransactionsRequest[version](**args), version, node, ListTransactionsResponse)

    def list_everywhere(self, **kw: Any) -> list[str]:
        ids = []
        for node in self.cluster.node_ids:
            resp = self.list_txns(node, **kw)
            assert resp.error_code == 0
            ids += [s.transactional_id for s in resp.transaction_states]
        return sorted(ids)

    def markers(self, node: int, pid: int, epoch: int, coordinator_epoch: int, partition: int = 0,
                commit: bool = False, version: int = 1, tv: int = 0, topic: str = TOPIC) -> int:
        M = WriteTxnMarkersRequest.WritableTxnMarker
        kwargs: dict[str, Any] = {"producer_id": pid, "producer_epoch": epoch, "transaction_result": commit,
                                  "topics": [M.WritableTxnMarkerTopic(name=topic, partition_indexes=[partition])],
                                  "coordinator_epoch": coordinator_epoch}
        if version >= 2:
            kwargs["transaction_version"] = tv
        resp = self.send(WriteTxnMarkersRequest[version](markers=[M(**kwargs)]), version, node, WriteTxnMarkersResponse)
        return int(resp.markers[0].topics[0].partitions[0].error_code)

    def lso(self, partition: int) -> tuple[int, int]:
        assert self.cluster.cluster is not None
        state = self.cluster.cluster.metadata.partition(TOPIC, partition)
        part = self.cluster.cluster.nodes[state.leader].replica_manager.get(TOPIC, partition)
        assert part is not None
        return self.cluster.call_soon(lambda: (part.log.last_stable_offset, part.log.high_watermark))


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    clock = ManualClock(start_ms=1_700_000_000_000)
    cfg = {"transaction.state.log.num.partitions": 5}
    with EmbeddedCluster(nodes=3, data_dir=tmp_path, config=cfg, clock=clock) as cluster:
        cluster.create_topic(TOPIC, 3, 3)
        cluster.create_topic("solo", 3, 1)
        e = Env(cluster, clock)
        yield e
        e.client.close()


# ---- DescribeProducers ---------------------------------------------------------------------------
def test_describe_producers_answers_on_leader_and_followers(env: Env) -> None:
    pe, offset = env.open_txn("a")
    rows = []
    for node in env.cluster.node_ids:
        (p,) = env.describe_producers(node)
        assert p.error_code == 0
        rows.append([(a.producer_id, a.producer_epoch, a.last_sequence, a.coordinator_epoch,
                      a.current_txn_start_offset) for a in p.active_producers])
    assert rows == [[(pe.producer_id, pe.epoch, 1, -1, offset)]] * 3


def test_describe_producers_errors(env: Env) -> None:
    node = env.cluster.node_ids[0]
    (p,) = env.describe_producers(node, topic="missing")
    assert p.error_code == E.UNKNOWN_TOPIC_OR_PARTITION
    (p,) = env.describe_producers(node, topic="bad/name")
    assert p.error_code == E.INVALID_TOPIC_EXCEPTION and p.error_message
    (p,) = env.describe_producers(node, partitions=(7,))
    assert p.error_code == E.UNKNOWN_TOPIC_OR_PARTITION
    leaders = env.client.partition_leaders("solo")
    other = next(n for n in env.cluster.node_ids if n != leaders[0])
    (p,) = env.describe_producers(other, topic="solo", partitions=(0,))
    assert p.error_code == E.NOT_LEADER_OR_FOLLOWER


# ---- ListTransactions ------------------------------------------------------------------------------
def test_list_transactions_filters(env: Env) -> None:
    a, _ = env.open_txn("txn-a1")
    env.open_txn("txn-a2", partition=1)
    code, idle = env.client.init_producer_id("idle-b", 60000)
    assert code == 0
    assert env.list_everywhere() == ["idle-b", "txn-a1", "txn-a2"]
    assert env.list_everywhere(state_filters=["Ongoing"]) == ["txn-a1", "txn-a2"]
    assert env.list_everywhere(state_filters=["Empty"]) == ["idle-b"]
    assert env.list_everywhere(producer_id_filters=[a.producer_id]) == ["txn-a1"]
    assert env.list_everywhere(pattern="txn-a.*") == ["txn-a1", "txn-a2"]
    assert env.list_everywhere(pattern="txn-a") == []  # Java Matcher.matches(): the whole id
    assert env.list_everywhere(pattern=r"\Qtxn-a\E\d") == ["txn-a1", "txn-a2"]
    assert env.list_everywhere(pattern="") == ["idle-b", "txn-a1", "txn-a2"]


def test_list_transactions_duration_filter_uses_the_broker_clock(env: Env) -> None:
    env.open_txn("old")
    env.clock.advance(10_000)
    env.open_txn("new", partition=1)
    assert env.list_everywhere(duration_filter=5_000) == ["old"]
    assert env.list_everywhere(duration_filter=-1) == ["new", "old"]


def test_list_transactions_unknown_states_and_bad_regex(env: Env) -> None:
    node = env.cluster.node_ids[0]
    resp = env.list_txns(node, version=0, state_filters=["Ongoing", "Bogus"])
    assert resp.error_code == 0 and list(resp.unknown_state_filters) == ["Bogus"]
    for bad in ("(", "[a-", r"\p{L}+", "(?P<x>y)"):
        resp = env.list_txns(node, pattern=bad)
        assert resp.error_code == E.INVALID_REGULAR_EXPRESSION, bad


# ---- DescribeTransactions --------------------------------------------------------------------------
def describe(env: Env, txn_id: str, node: int | None = None) -> Any:
    if node is None:
        node = env.client.transaction_coordinator(txn_id)
    req = DescribeTransactionsRequest[0](transactional_ids=[txn_id])
    return env.send(req, 0, node, DescribeTransactionsResponse).transaction_states[0]


def test_describe_transactions(env: Env) -> None:
    pe, _ = env.open_txn("a")
    d = describe(env, "a")
    assert (d.error_code, d.transaction_state, d.producer_id, d.producer_epoch, d.transaction_timeout_ms) == (
        0, "Ongoing", pe.producer_id, pe.epoch, 60000)
    assert d.transaction_start_time_ms == env.clock.millis()
    assert [(t.topic, list(t.partitions)) for t in d.topics] == [(TOPIC, [0])]
    assert describe(env, "unknown").error_code == E.TRANSACTIONAL_ID_NOT_FOUND
    coordinator = env.client.transaction_coordinator("a")
    other = next(n for n in env.cluster.node_ids if n != coordinator)
    assert describe(env, "a", other).error_code == E.NOT_COORDINATOR
    assert describe(env, "", coordinator).error_code == E.INVALID_REQUEST


# ---- WriteTxnMarkers -------------------------------------------------------------------------------
def test_admin_abort_moves_the_lso(env: Env) -> None:
    pe, offset = env.open_txn("a", n=3)
    assert env.lso(0) == (offset, 3)
    leader = env.leader(0)
    assert env.markers(leader, pe.producer_id, pe.epoch, 0) == 0
    assert env.lso(0) == (4, 4)
    (p,) = env.describe_producers(leader)
    assert [(a.current_txn_start_offset, a.coordinator_epoch) for a in p.active_producers] == [(-1, 0)]


def test_marker_checks(env: Env) -> None:
    pe, _ = env.open_txn("a")
    leader = env.leader(0)
    follower = next(n for n in env.cluster.node_ids if n != leader)
    assert env.markers(follower, pe.producer_id, pe.epoch, 0) == E.NOT_LEADER_OR_FOLLOWER
    assert env.markers(leader, pe.producer_id, pe.epoch, 0, topic="missing") == E.UNKNOWN_TOPIC_OR_PARTITION
    solo_leaders = env.client.partition_leaders("solo")
    not_hosting = next(n for n in env.cluster.node_ids if n != solo_leaders[0])
    assert env.markers(not_hosting, pe.producer_id, pe.epoch, 0, topic="solo") == E.UNKNOWN_TOPIC_OR_PARTITION
    # TV2 markers must carry a bumped epoch; a marker from an older coordinator epoch is a zombie's.
    assert env.markers(leader, pe.producer_id, pe.epoch, 0, version=2, tv=2) == E.INVALID_PRODUCER_EPOCH
    assert env.markers(leader, pe.producer_id, pe.epoch, 3) == 0
    assert env.markers(leader, pe.producer_id, pe.epoch, 2) == E.TRANSACTION_COORDINATOR_FENCED
    assert env.markers(leader, pe.producer_id, pe.epoch - 1 if pe.epoch else -5, 3) == E.INVALID_PRODUCER_EPOCH


def test_kip664_txn_start_offset(env: Env) -> None:
    pe, offset = env.open_txn("a")
    leader = env.leader(0)
    from kafka_txn_tools.models import TopicPartition

    def abort(start: int | None, coordinator_epoch: int = -1) -> str | None:
        req = wire.abort_marker_request(TopicPartition(TOPIC, 0), pe.producer_id, pe.epoch, coordinator_epoch, start)
        resp = env.send(req, 1, leader, WriteTxnMarkersResponse)
        return wire.parse_write_txn_markers(resp, TopicPartition(TOPIC, 0))

    assert abort(offset + 1) == "INVALID_TXN_STATE"  # no open transaction starts there
    assert env.lso(0)[0] == offset
    assert abort(offset) is None
    assert env.lso(0) == (3, 3)
    assert abort(offset) == "INVALID_TXN_STATE"  # already aborted: nothing to abort


def test_kip664_admin_marker_keeps_the_coordinator_epoch(env: Env) -> None:
    """-1 marks an admin marker: it is written with the producer's coordinator epoch, never regressing it."""
    pe, _ = env.open_txn("a")
    leader = env.leader(0)
    assert env.markers(leader, pe.producer_id, pe.epoch, 4) == 0  # the coordinator (epoch 4) ended it
    code, offset = env.client.produce_transactional("a", pe, TOPIC, 0, 2, [b"late"], env.clock.millis())
    assert code == 0  # verification passes: the coordinator still has t-0 in the open transaction
    from kafka_txn_tools.models import TopicPartition

    req = wire.abort_marker_request(TopicPartition(TOPIC, 0), pe.producer_id, pe.epoch, -1, offset)
    resp = env.send(req, 1, leader, WriteTxnMarkersResponse)
    assert wire.parse_write_txn_markers(resp, TopicPartition(TOPIC, 0)) is None
    (p,) = env.describe_producers(leader)
    assert [a.coordinator_epoch for a in p.active_producers] == [4]
