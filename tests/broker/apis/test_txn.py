"""AddPartitionsToTxn (v0-v5), AddOffsetsToTxn, EndTxn and Produce verification over the wire."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kafka.protocol.metadata import FindCoordinatorRequest
from kafka.protocol.producer import (
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    EndTxnRequest,
    EndTxnResponse,
    ProduceRequest,
    ProduceResponse,
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
)

from kafka_txn_broker.embedded import EmbeddedCluster
from kafka_txn_broker.formats import errors as E
from kafka_txn_broker.formats.partitioning import GROUP_TOPIC, partition_for
from kafka_txn_broker.formats.record_batch import build_batch
from kafka_txn_broker.testing.raw_client import ProducerIdAndEpoch, RawKafkaClient

APT = AddPartitionsToTxnRequest
TOPIC_AUTHORIZATION_FAILED = 29


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedCluster]:
    cfg = {"transaction.state.log.num.partitions": 5, "offsets.topic.num.partitions": 3}
    with EmbeddedCluster(nodes=3, data_dir=tmp_path_factory.mktemp("apis"), config=cfg) as c:
        c.create_topic("t", 3, 3)
        yield c


@pytest.fixture
def client(cluster: EmbeddedCluster) -> Iterator[RawKafkaClient]:
    with RawKafkaClient(cluster.bootstrap_servers) as c:
        c.broker_count()
        yield c


def init(client: RawKafkaClient, txn_id: str) -> tuple[int, ProducerIdAndEpoch]:
    code, pe = client.init_producer_id(txn_id, 60000)
    assert code == 0
    return client.transaction_coordinator(txn_id), pe


def add_v3(client: RawKafkaClient, version: int, txn_id: str, pe: ProducerIdAndEpoch,
           topics: dict[str, list[int]]) -> dict[tuple[str, int], int]:
    wanted = [APT.AddPartitionsToTxnTopic(name=t, partitions=ps) for t, ps in topics.items()]
    req = APT[version](v3_and_below_transactional_id=txn_id, v3_and_below_producer_id=pe.producer_id,
                       v3_and_below_producer_epoch=pe.epoch, v3_and_below_topics=wanted)
    resp = client.send(req, version, client.transaction_coordinator(txn_id), AddPartitionsToTxnResponse)
    return {(t.name, p.partition_index): p.partition_error_code for t in resp.results_by_topic_v3_and_below
            for p in t.results_by_partition}


def add_v4(client: RawKafkaClient, version: int, txn_id: str, pe: ProducerIdAndEpoch, verify_only: bool,
           partitions: list[int]) -> dict[tuple[str, int], int]:
    txn = APT.AddPartitionsToTxnTransaction(transactional_id=txn_id, producer_id=pe.producer_id,
                                            producer_epoch=pe.epoch, verify_only=verify_only,
                                            topics=[APT.AddPartitionsToTxnTopic(name="t", partitions=partitions)])
    resp = client.send(APT[version](transactions=[txn]), version, client.transaction_coordinator(txn_id),
                       AddPartitionsToTxnResponse)
    (result,) = resp.results_by_transaction
    return {(t.name, p.partition_index): p.partition_error_code for t in result.topic_results
            for p in t.results_by_partition}


def end(client: RawKafkaClient, version: int, txn_id: str, pe: ProducerIdAndEpoch, commit: bool) -> Any:
    req = EndTxnRequest[version](transactional_id=txn_id, producer_id=pe.producer_id, producer_epoch=pe.epoch,
                                 committed=commit)
    return client.send(req, version, client.transaction_coordinator(txn_id), EndTxnResponse)


def produce(client: RawKafkaClient, version: int, txn_id: str, pe: ProducerIdAndEpoch, partition: int,
            seq: int = 0) -> int:
    batch = build_batch([(None, b"v")], timestamp_ms=1, producer_id=pe.producer_id, producer_epoch=pe.epoch,
                        base_sequence=seq, transactional=True)
    PD = ProduceRequest.TopicProduceData.PartitionProduceData
    req = ProduceRequest[version](transactional_id=txn_id, acks=-1, timeout_ms=10000, topic_data=[
        ProduceRequest.TopicProduceData(name="t", partition_data=[PD(index=partition, records=batch)])])
    resp = client.send(req, version, client.partition_leaders("t")[partition], ProduceResponse)
    return int(resp.responses[0].partition_responses[0].error_code)


def test_add_partitions_v3_checks_every_partition_first(client: RawKafkaClient) -> None:
    _, pe = init(client, "v3")
    assert add_v3(client, 3, "v3", pe, {"t": [0, 9], "missing": [0]}) == {
        ("t", 0): E.OPERATION_NOT_ATTEMPTED, ("t", 9): E.UNKNOWN_TOPIC_OR_PARTITION,
        ("missing", 0): E.UNKNOWN_TOPIC_OR_PARTITION}
    client.send(AddOffsetsToTxnRequest[3](transactional_id="v3", producer_id=pe.producer_id, producer_epoch=pe.epoch,
                                          group_id="g"), 3, client.transaction_coordinator("v3"),
                AddOffsetsToTxnResponse)
    assert add_v3(client, 3, "v3", pe, {"__consumer_offsets": [0]}) == {
        ("__consumer_offsets", 0): TOPIC_AUTHORIZATION_FAILED}
    assert add_v3(client, 3, "v3", pe, {"t": [0, 1]}) == {("t", 0): 0, ("t", 1): 0}


def test_add_offsets_adds_the_groups_offsets_partition(client: RawKafkaClient) -> None:
    _, pe = init(client, "ao")
    resp = client.send(AddOffsetsToTxnRequest[3](transactional_id="ao", producer_id=pe.producer_id,
                                                 producer_epoch=pe.epoch, group_id="grp"), 3,
                       client.transaction_coordinator("ao"), AddOffsetsToTxnResponse)
    assert resp.error_code == E.NONE
    described = client.describe_transaction("ao")
    assert described.transaction_state == "Ongoing"
    # The group's coordinator partition: partitionFor("grp") of __consumer_offsets (3 partitions here).
    assert [(t.topic, list(t.partitions)) for t in described.topics] == [
        (GROUP_TOPIC, [partition_for("grp", 3)])]
    assert end(client, 3, "ao", pe, True).error_code == E.NONE


def test_old_versions_get_invalid_producer_epoch_instead_of_fenced(client: RawKafkaClient) -> None:
    _, pe = init(client, "old")
    stale = ProducerIdAndEpoch(pe.producer_id, pe.epoch + 1)
    assert add_v3(client, 1, "old", stale, {"t": [0]}) == {("t", 0): E.INVALID_PRODUCER_EPOCH}
    assert add_v3(client, 2, "old", stale, {"t": [0]}) == {("t", 0): E.PRODUCER_FENCED}
    assert end(client, 1, "old", stale, True).error_code == E.INVALID_PRODUCER_EPOCH
    resp = client.send(AddOffsetsToTxnRequest[0](transactional_id="old", producer_id=stale.producer_id,
                                                 producer_epoch=stale.epoch, group_id="g"), 0,
                       client.transaction_coordinator("old"), AddOffsetsToTxnResponse)
    assert resp.error_code == E.INVALID_PRODUCER_EPOCH


def test_v4_verify_only_and_v5_add(client: RawKafkaClient) -> None:
    _, pe = init(client, "v4")
    assert add_v4(client, 4, "v4", pe, False, [0]) == {("t", 0): 0}
    assert add_v4(client, 4, "v4", pe, True, [0, 1]) == {("t", 0): 0, ("t", 1): E.TRANSACTION_ABORTABLE}
    assert add_v4(client, 5, "v4", pe, False, [1]) == {("t", 1): 0}
    assert add_v4(client, 4, "v4", pe, True, [1]) == {("t", 1): 0}


def test_end_txn_v5_returns_the_bumped_epoch(client: RawKafkaClient) -> None:
    _, pe = init(client, "tv2")
    assert add_v4(client, 5, "tv2", pe, False, [0]) == {("t", 0): 0}
    assert produce(client, 11, "tv2", pe, 0) == 0
    resp = end(client, 5, "tv2", pe, True)
    assert (resp.error_code, resp.producer_id, resp.producer_epoch) == (0, pe.producer_id, pe.epoch + 1)
    bumped = ProducerIdAndEpoch(pe.producer_id, pe.epoch + 1)
    resp = end(client, 5, "tv2", bumped, False)  # abort with nothing open: allowed in TV2, bumps again
    assert (resp.error_code, resp.producer_epoch) == (0, pe.epoch + 2)


def test_produce_verification_errors_per_version(client: RawKafkaClient) -> None:
    _, pe = init(client, "ver")
    assert add_v3(client, 3, "ver", pe, {"t": [0]}) == {("t", 0): 0}
    assert produce(client, 8, "ver", pe, 1) == E.INVALID_TXN_STATE  # not in the transaction
    assert produce(client, 11, "ver", pe, 1) == E.TRANSACTION_ABORTABLE  # v11 knows the new error
    stale = ProducerIdAndEpoch(pe.producer_id, pe.epoch - 1 if pe.epoch else pe.epoch + 5)
    assert produce(client, 8, "ver", stale, 2) == E.INVALID_PRODUCER_EPOCH
    assert produce(client, 8, "ver", pe, 0) == 0
    assert produce(client, 8, "ver", pe, 0, seq=1) == 0  # already ongoing here: no question asked


def test_produce_v12_adds_the_partition_for_a_tv2_client(client: RawKafkaClient) -> None:
    _, pe = init(client, "implicit")
    assert produce(client, 12, "implicit", pe, 2) == 0  # no AddPartitionsToTxn at all (KIP-890 part 2)
    assert add_v4(client, 4, "implicit", pe, True, [2]) == {("t", 2): 0}
    assert end(client, 5, "implicit", pe, True).error_code == 0


def test_verification_of_an_unknown_transactional_id(client: RawKafkaClient) -> None:
    _, pe = init(client, "known")
    assert produce(client, 8, "unknown-id", pe, 0) == E.INVALID_PRODUCER_ID_MAPPING


def test_with_verification_off_only_a_tv2_produce_enters_the_transaction(tmp_path: Any) -> None:
    """transaction.partition.verification.enable=false switches off the verify-only question only (Kafka 4.x
    ReplicaManager.maybeSendPartitionsToTransactionCoordinator skips when !supportsEpochBump && !enable): a
    Produce v12 is still added to the transaction, a Produce v8 to a partition never added is appended outside it
    (the hanging transactions the scenarios make)."""
    cfg = {"transaction.state.log.num.partitions": 3, "offsets.topic.num.partitions": 1,
           "transaction.partition.verification.enable": False}
    with EmbeddedCluster(nodes=1, data_dir=tmp_path, config=cfg) as off, \
            RawKafkaClient(off.bootstrap_servers) as raw:
        off.create_topic("t", 2, 1)
        _, tv2 = init(raw, "off-tv2")
        assert produce(raw, 12, "off-tv2", tv2, 0) == 0
        assert add_v4(raw, 4, "off-tv2", tv2, True, [0]) == {("t", 0): 0}  # in the coordinator's transaction
        assert end(raw, 5, "off-tv2", tv2, True).error_code == 0
        _, tv1 = init(raw, "off-tv1")
        assert produce(raw, 8, "off-tv1", tv1, 1) == 0  # accepted without a question
        assert add_v4(raw, 4, "off-tv1", tv1, True, [1]) != {("t", 1): 0}  # but not in any transaction


def txn_offset_commit(raw: RawKafkaClient, version: int, txn_id: str, pe: ProducerIdAndEpoch, group: str) -> int:
    T = TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic
    P = T.TxnOffsetCommitRequestPartition
    req = TxnOffsetCommitRequest[version](
        transactional_id=txn_id, group_id=group, producer_id=pe.producer_id, producer_epoch=pe.epoch,
        generation_id=-1, member_id="", group_instance_id=None,
        topics=[T(name="t", partitions=[P(partition_index=0, committed_offset=5, committed_leader_epoch=-1,
                                          committed_metadata=None)])])
    resp = raw.send(req, version, 0, TxnOffsetCommitResponse)  # one node: it coordinates every group
    return int(resp.topics[0].partitions[0].error_code)


def test_with_verification_off_a_tv2_txn_offset_commit_adds_the_offsets_partition(tmp_path: Any) -> None:
    """The same rule for TxnOffsetCommit (CoordinatorPartitionWriter goes through the same ReplicaManager path):
    v5 adds the group's __consumer_offsets partition with verification off, v3 is written without a question
    and stays outside the transaction."""
    cfg = {"transaction.state.log.num.partitions": 3, "offsets.topic.num.partitions": 1,
           "transaction.partition.verification.enable": False}
    with EmbeddedCluster(nodes=1, data_dir=tmp_path, config=cfg) as off, \
            RawKafkaClient(off.bootstrap_servers) as raw:
        off.create_topic("t", 1, 1)
        offsets_tp = (GROUP_TOPIC, 0)
        for group in ("g1", "g2"):  # creates __consumer_offsets and loads the group's partition
            assert raw.send(FindCoordinatorRequest[1](key=group, key_type=0), 1).error_code == 0
        _, tv2 = init(raw, "off-tv2")
        assert txn_offset_commit(raw, 5, "off-tv2", tv2, "g2") == 0
        described = raw.describe_transaction("off-tv2")
        assert {(t.topic, p) for t in described.topics for p in t.partitions} == {offsets_tp}
        _, tv1 = init(raw, "off-tv1")
        assert txn_offset_commit(raw, 3, "off-tv1", tv1, "g1") == 0  # no AddOffsetsToTxn, no question
        assert list(raw.describe_transaction("off-tv1").topics) == []
