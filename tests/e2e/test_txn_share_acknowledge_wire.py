"""KIP-1289 TxnShareAcknowledge end to end over the wire. No public client sends it (librdkafka's
ShareConsumer cannot stage acknowledgements in a transaction), so the share-group side is driven request
by request with the project's message classes, and the transaction with RawKafkaClient: a member joins
(ShareGroupHeartbeat) and acquires records (ShareFetch), a transactional producer writes output and
stages the member's acknowledgements in the same transaction, then commits or aborts (EndTxn v5, TV2:
the marker carries the bumped epoch). Codes are Kafka's: STALE_MEMBER_EPOCH 113, UNKNOWN_MEMBER_ID 25,
PRODUCER_FENCED 90, INVALID_RECORD_STATE 121, INVALID_REQUEST 42."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka.protocol.producer import EndTxnRequest, EndTxnResponse

from kafka_txn_broker import EmbeddedCluster
from kafka_txn_broker.clock import ManualClock
from kafka_txn_broker.formats import errors as E
from kafka_txn_broker.formats.messages import TXN_SHARE_ACKNOWLEDGE_KEY
from kafka_txn_broker.formats.partitioning import SHARE_STATE_TOPIC
from kafka_txn_broker.testing import share_client
from kafka_txn_broker.testing.raw_client import ProducerIdAndEpoch, RawKafkaClient
from kafka_txn_broker.testing.share_client import ACCEPT, REJECT, RELEASE, partition_codes
from tests.e2e.cli_support import kafka_txn
from tests.e2e.helpers import consume_all
from tests.e2e.share_support import produce, set_group_configs, share_partitions

GROUP, MEMBER, TXN_ID = "txn-share-group", "member-1", "rpw-1"
INVALID_RECORD_STATE = 121
ENABLED = {"share.transactional.acknowledgement.enable": True, "offsets.topic.num.partitions": 3,
           "transaction.state.log.num.partitions": 3}


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def cluster(tmp_path: Path, clock: ManualClock) -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(nodes=3, data_dir=tmp_path, config=ENABLED, clock=clock) as c:
        c.create_topic("in", 1, 3)
        c.create_topic("out", 1, 3)
        set_group_configs(c.bootstrap_servers, GROUP, share_auto_offset_reset="earliest")
        produce(c.bootstrap_servers, "in", 10, 1)
        yield c


def share_member(client: RawKafkaClient, topic_id: uuid.UUID, leader: int) -> share_client.ShareMember:
    return share_client.ShareMember(client, GROUP, MEMBER, "in", topic_id, 0, leader)


def txn_ack(client: RawKafkaClient, node: int, pe: ProducerIdAndEpoch, topic_id: uuid.UUID,
            batches: list[tuple[int, int, list[int]]], *, member: str = MEMBER, member_epoch: int,
            also: uuid.UUID | None = None) -> Any:
    """Stage `batches` of partition 0 of `topic_id` (and, with `also`, offset 0 of that topic's partition 0)."""
    topics = [(topic_id, 0, batches)] + ([(also, 0, [(0, 0, [ACCEPT])])] if also is not None else [])
    return share_client.txn_share_acknowledge(client, node, TXN_ID, pe, GROUP, member, member_epoch, topics)


def retry_init(client: RawKafkaClient) -> ProducerIdAndEpoch:
    import time

    for _ in range(100):
        code, pe = client.init_producer_id(TXN_ID, 60000)
        if code != E.CONCURRENT_TRANSACTIONS:
            assert code == 0
            return pe
        time.sleep(0.05)
    raise AssertionError("InitProducerId kept answering CONCURRENT_TRANSACTIONS")


def end_txn_v5(client: RawKafkaClient, pe: ProducerIdAndEpoch, commit: bool) -> ProducerIdAndEpoch:
    """EndTxn v5 (TV2): the coordinator bumps the epoch and writes the markers with it."""
    r = client.send(EndTxnRequest[5](transactional_id=TXN_ID, producer_id=pe.producer_id, producer_epoch=pe.epoch,
                                     committed=commit), 5, client.transaction_coordinator(TXN_ID), EndTxnResponse)
    assert r.error_code == 0
    return ProducerIdAndEpoch(r.producer_id, r.producer_epoch)


def committed_output(cluster: EmbeddedCluster) -> list[bytes]:
    return [v for _o, _k, v in consume_all(cluster.bootstrap_servers, "out", 1, read_committed=True).get(0, [])]


def in_state(cluster: EmbeddedCluster) -> dict[str, Any]:
    return share_partitions(cluster, GROUP)[("in", 0)]


def persisted(cluster: EmbeddedCluster, topic_id: uuid.UUID) -> tuple[int, list[tuple[int, int, int]]]:
    """The share-partition's state in `__share_group_state`, as the share coordinator holds it."""
    from kafka_txn_broker.share.share_partition import SharePartitionKey

    core = cluster.cluster
    assert core is not None

    def read() -> tuple[int, list[tuple[int, int, int]]]:
        state = core.nodes[0].share_persister.read_summary(SharePartitionKey(GROUP, topic_id, 0))
        assert state is not None
        return state.start_offset, [(b.first_offset, b.last_offset, b.delivery_state) for b in state.batches]

    return cluster.call_soon(read)  # type: ignore[no-any-return]


def wait_for(cluster: EmbeddedCluster, done: Any) -> dict[str, Any]:
    import time

    deadline = time.monotonic() + 10
    while True:
        state = in_state(cluster)
        if done(state) or time.monotonic() > deadline:
            return state
        time.sleep(0.05)


@pytest.fixture
def setup(cluster: EmbeddedCluster) -> Iterator[tuple[RawKafkaClient, share_client.ShareMember, uuid.UUID, int]]:
    with RawKafkaClient(cluster.bootstrap_servers) as client:
        leader = client.partition_leaders("in")[0]
        topic_id = cluster.call_soon(lambda: cluster.cluster.metadata.topics["in"].topic_id)  # type: ignore[union-attr]
        member = share_member(client, topic_id, leader)
        assert first_acquired(member) == [(0, 9)]
        yield client, member, topic_id, leader


def first_acquired(member: share_client.ShareMember) -> list[tuple[int, int]]:
    """The first ShareFetch that acquires anything: the share partition's first fetch may end its 500 ms wait
    before the partition has loaded its state from the share coordinator (a loaded machine), and acquire
    nothing yet, as a real share consumer's first poll may."""
    import time

    deadline = time.monotonic() + 30
    while not (acquired := member.fetch()) and time.monotonic() < deadline:
        pass
    return acquired


def test_commit_produces_the_output_and_acknowledges_the_input_together(cluster, setup):
    client, member, topic_id, leader = setup
    code, pe = client.init_producer_id(TXN_ID, 60000)
    assert code == 0
    assert client.add_partitions(TXN_ID, pe, "out", [0]) == 0
    assert client.produce_transactional(TXN_ID, pe, "out", 0, 0, [b"o0", b"o1", b"o2", b"o3"], 1)[0] == 0
    r = txn_ack(client, leader, pe, topic_id, [(0, 2, [ACCEPT]), (3, 3, [REJECT])], member_epoch=member.epoch)
    assert (r.error_code, partition_codes(r)) == (0, [0])
    # The group's __share_group_state partition joined the transaction, as AddOffsetsToTxn would add it.
    described = client.describe_transaction(TXN_ID)
    assert SHARE_STATE_TOPIC in {t.topic for t in described.topics}
    shown = kafka_txn(cluster.bootstrap_servers, "describe", "-t", TXN_ID, "-o", "json").json()["transactions"][0]
    assert any(p.startswith(SHARE_STATE_TOPIC + "-") for p in shown["partitions"])  # the operator sees it
    assert in_state(cluster)["TX_PENDING"] == 4
    # A staged record refuses a plain acknowledgement, and nothing is visible or acknowledged yet.
    assert member.acknowledge(0, 0, ACCEPT) == INVALID_RECORD_STATE
    assert committed_output(cluster) == []
    assert persisted(cluster, topic_id)[0] == 0

    end_txn_v5(client, pe, commit=True)  # the markers carry epoch + 1: matched by producer id
    state = wait_for(cluster, lambda s: s["TX_PENDING"] == 0)
    assert (state["start"], state["TX_PENDING"], state["ACQUIRED"]) == (4, 0, 6)
    assert persisted(cluster, topic_id)[0] == 4  # 0-2 ACKNOWLEDGED, 3 ARCHIVED: written, start past them
    assert committed_output(cluster) == [b"o0", b"o1", b"o2", b"o3"]


def test_abort_returns_the_records_to_the_member_and_hides_the_output(cluster, setup):
    client, member, topic_id, leader = setup
    code, pe = client.init_producer_id(TXN_ID, 60000)
    assert client.add_partitions(TXN_ID, pe, "out", [0]) == 0
    assert client.produce_transactional(TXN_ID, pe, "out", 0, 0, [b"x"], 1)[0] == 0
    r = txn_ack(client, leader, pe, topic_id, [(0, 9, [ACCEPT])], member_epoch=member.epoch)
    assert (r.error_code, partition_codes(r)) == (0, [0])
    end_txn_v5(client, pe, commit=False)
    state = wait_for(cluster, lambda s: s["TX_PENDING"] == 0)
    assert (state["start"], state["ACQUIRED"]) == (0, 10)  # the member's again, not acknowledged
    assert persisted(cluster, topic_id) == (0, [])
    assert committed_output(cluster) == []
    assert member.acknowledge(0, 9, RELEASE) == 0  # it holds them: its own acknowledgement works


def test_refusals_stage_nothing(cluster, setup):
    client, member, topic_id, leader = setup
    code, old = client.init_producer_id(TXN_ID, 60000)

    def refused(r: Any) -> tuple[int, list[int]]:
        return r.error_code, partition_codes(r)

    stale = txn_ack(client, leader, old, topic_id, [(0, 0, [ACCEPT])], member_epoch=member.epoch + 1)
    assert refused(stale) == (E.STALE_MEMBER_EPOCH, [])
    unknown = txn_ack(client, leader, old, topic_id, [(0, 0, [ACCEPT])], member="nobody", member_epoch=1)
    assert refused(unknown) == (E.UNKNOWN_MEMBER_ID, [])
    bad_type = txn_ack(client, leader, old, topic_id, [(0, 1, [ACCEPT]), (2, 2, [RELEASE])],
                       member_epoch=member.epoch)
    assert refused(bad_type) == (0, [INVALID_RECORD_STATE])
    # A new instance fences the zombie (its InitProducerId aborts the open transaction first: retried).
    new = retry_init(client)
    assert new.epoch > old.epoch
    zombie = txn_ack(client, leader, old, topic_id, [(0, 0, [ACCEPT])], member_epoch=member.epoch)
    assert refused(zombie) == (E.PRODUCER_FENCED, [])
    # All or nothing: the first partition stages, the second (an unknown topic id) fails, the first is
    # rolled back before the answer.
    partial = txn_ack(client, leader, new, topic_id, [(0, 4, [ACCEPT])], member_epoch=member.epoch,
                      also=uuid.UUID(int=99))
    assert refused(partial) == (0, [E.UNKNOWN_TOPIC_ID, E.UNKNOWN_TOPIC_ID])
    follower = next(n for n in range(3) if n != leader)
    moved = txn_ack(client, follower, new, topic_id, [(0, 0, [ACCEPT])], member_epoch=member.epoch)
    assert refused(moved) == (0, [E.NOT_LEADER_OR_FOLLOWER])
    assert moved.responses[0].partitions[0].current_leader.leader_id == leader
    state = in_state(cluster)
    assert (state["TX_PENDING"], state["ACQUIRED"]) == (0, 10)


def test_the_api_is_advertised_only_when_enabled(tmp_path: Path):
    from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse

    for enabled, tv in ((False, 2), (True, 1), (True, 2)):
        config = {"share.transactional.acknowledgement.enable": enabled, "transaction.version": tv}
        with EmbeddedCluster(nodes=1, data_dir=tmp_path / f"{enabled}-{tv}", config=config) as c, \
                RawKafkaClient(c.bootstrap_servers) as client:
            r = client.send(ApiVersionsRequest[3](client_software_name="t", client_software_version="1"), 3, None,
                            ApiVersionsResponse)
            keys = {k.api_key for k in r.api_keys}
            share_level = {f.name: f.max_version_level for f in r.finalized_features}.get("share.version")
            expected = (True, 2) if enabled and tv == 2 else (False, 1)
            assert (TXN_SHARE_ACKNOWLEDGE_KEY in keys, share_level) == expected


def test_a_stalled_transaction_holds_its_records_past_their_lock_until_the_timeout_aborts_it(cluster, setup, clock):
    from kafka_txn_broker.server import metrics

    client, member, topic_id, leader = setup
    code, pe = client.init_producer_id(TXN_ID, 60000)
    r = txn_ack(client, leader, pe, topic_id, [(0, 9, [ACCEPT])], member_epoch=member.epoch)
    assert (r.error_code, partition_codes(r)) == (0, [0])
    clock.advance(30_001)  # share.record.lock.duration.ms runs out: the records wait for their marker
    cluster.tick()
    assert in_state(cluster)["TX_PENDING"] == 10
    text = cluster.call_soon(lambda: metrics.render(cluster.cluster))
    assert f'{metrics.TXN_PENDING}{{node="{leader}"}} 10' in text
    assert f'{metrics.TXN_PENDING_LOCK_EXPIRED}{{node="{leader}"}} 10' in text
    assert f'{metrics.TXN_ACK_LATENCY}_count{{node="{leader}"}} 1' in text
    held = f'node="{leader}",group="{GROUP}",topic="in",partition="0",producer_id="{pe.producer_id}",' \
           f'transactional_id="{TXN_ID}"'
    assert f"{metrics.TXN_PENDING_BY_TXN}{{{held}}} 10" in text
    assert f"{metrics.TXN_PENDING_AGE}{{{held}}} 30001" in text  # staged before the clock moved
    clock.advance(60_000)  # transaction.timeout.ms: the coordinator aborts the transaction
    cluster.tick()
    state = wait_for(cluster, lambda s: s["TX_PENDING"] == 0)
    cluster.tick()  # back to the member, whose lock is over: released, to be delivered again
    state = in_state(cluster)
    assert (state["start"], state["AVAILABLE"], state["ACKNOWLEDGED"]) == (0, 10, 0)
    assert metrics.TXN_PENDING_BY_TXN + "{" not in cluster.call_soon(lambda: metrics.render(cluster.cluster))
    assert describe_state(client) == "CompleteAbort"


def describe_state(client: RawKafkaClient) -> str:
    return str(client.describe_transaction(TXN_ID).transaction_state)


def stage_then_move_leader(cluster: EmbeddedCluster, client: RawKafkaClient, member: share_client.ShareMember,
                           topic_id: uuid.UUID, leader: int) -> ProducerIdAndEpoch:
    """Stage 0-4 ACCEPT and 5 REJECT with output, then stop the share-partition's leader."""
    code, pe = client.init_producer_id(TXN_ID, 60000)
    assert client.add_partitions(TXN_ID, pe, "out", [0]) == 0
    assert client.produce_transactional(TXN_ID, pe, "out", 0, 0, [b"o"], 1)[0] == 0
    r = txn_ack(client, leader, pe, topic_id, [(0, 4, [ACCEPT]), (5, 5, [REJECT])], member_epoch=member.epoch)
    assert (r.error_code, partition_codes(r)) == (0, [0])
    cluster.stop_node(leader)
    member.leader = client.partition_leaders("in")[0]
    assert member.leader != leader
    return pe


def test_a_leadership_move_while_pending_keeps_the_staged_records_until_the_commit(cluster, setup):
    # The staged acknowledgements are written in the transaction, so the new leader holds them pending:
    # only what was merely acquired (6-9) is delivered again. Delivering 0-5 again would let the COMMIT
    # acknowledge records another consumer is processing a second time (the KIP's in-memory TX_PENDING).
    client, member, topic_id, leader = setup
    pe = stage_then_move_leader(cluster, client, member, topic_id, leader)
    assert member.fetch() == [(6, 9)]
    assert in_state(cluster)["TX_PENDING"] == 6
    end_txn_v5(client, pe, commit=True)
    state = wait_for(cluster, lambda s: s["TX_PENDING"] == 0)
    assert (state["start"], state["ACQUIRED"]) == (6, 4)  # 0-4 ACKNOWLEDGED, 5 ARCHIVED
    assert persisted(cluster, topic_id)[0] == 6
    assert committed_output(cluster) == [b"o"]


def test_a_leadership_move_then_abort_delivers_the_staged_records_again(cluster, setup):
    client, member, topic_id, leader = setup
    pe = stage_then_move_leader(cluster, client, member, topic_id, leader)
    assert member.fetch() == [(6, 9)]
    end_txn_v5(client, pe, commit=False)
    wait_for(cluster, lambda s: s["TX_PENDING"] == 0)
    # No owner to return them to: released. (This member's every fetch opens a new share session, which
    # gives back what it held, so 6-9 come again too.)
    assert member.fetch() == [(0, 5), (6, 9)]
    assert committed_output(cluster) == []


@pytest.mark.parametrize("commit", [True, False])
def test_a_restart_while_pending_resolves_the_staged_records_by_the_marker(cluster, setup, commit):
    client, member, topic_id, leader = setup
    code, pe = client.init_producer_id(TXN_ID, 60000)
    assert client.add_partitions(TXN_ID, pe, "out", [0]) == 0
    assert client.produce_transactional(TXN_ID, pe, "out", 0, 0, [b"o"], 1)[0] == 0
    r = txn_ack(client, leader, pe, topic_id, [(0, 3, [ACCEPT])], member_epoch=member.epoch)
    assert (r.error_code, partition_codes(r)) == (0, [0])
    client.close()
    cluster.restart()  # every node's memory is gone: only the logs remain
    with RawKafkaClient(cluster.bootstrap_servers) as again:
        member = share_member(again, topic_id, again.partition_leaders("in")[0])
        assert member.fetch() == [(4, 9)]  # 0-3 are pending in the open transaction, not delivered again
        end_txn_v5(again, pe, commit=commit)
        wait_for(cluster, lambda s: s["TX_PENDING"] == 0)
        assert member.fetch() == ([(4, 9)] if commit else [(0, 3), (4, 9)])  # 4-9: a new session again
        assert persisted(cluster, topic_id)[0] == (4 if commit else 0)
    assert committed_output(cluster) == ([b"o"] if commit else [])
