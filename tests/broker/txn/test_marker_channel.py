"""TransactionMarkerChannelManager on fakes (no sockets, no cluster): markers to each partition's leader,
retries, per-partition errors, and COMPLETE_* written only once every marker landed.

Expected behaviour is Kafka's TransactionMarkerChannelManager: retriable answers (no leader,
NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS...) are retried with the then-current leader; a deleted
partition is dropped; INVALID_PRODUCER_EPOCH / TRANSACTION_COORDINATOR_FENCED abandon the transaction;
the completion record is appended after the last marker, and retried alone if that append fails.
A partition without a leader is retried up to Kafka 4.2 and dropped from 4.3 (4.3.0's metadata cache answers no
endpoint for it, as for a deleted partition; 4.4.0 was seen doing so in tests/external/real_kafka/
test_coordinator_side_real.py).
"""

from __future__ import annotations

import asyncio

import pytest

from kafka_txn_broker.clock import ManualClock
from kafka_txn_broker.configs.broker_config import BrokerConfig
from kafka_txn_broker.formats import errors as E
from kafka_txn_broker.formats.errors import NotEnoughReplicasError
from kafka_txn_broker.formats.partitioning import TXN_TOPIC
from kafka_txn_broker.formats.transactions import TransactionState
from kafka_txn_broker.txn.marker_channel import TransactionMarkerChannelManager, skips_leaderless_partitions
from kafka_txn_broker.txn.state_manager import PendingCompletion, TransactionStateManager
from kafka_txn_broker.txn.transaction_metadata import TransactionMetadata
from tests.broker.txn.fakes import FakeMarkers, FakeMetadata, FakePartitionLog

S = TransactionState
T0, T1, U0 = ("t", 0), ("t", 1), ("u", 0)
COORDINATOR_EPOCH = 9
PID, EPOCH = 42, 3


class Setup:
    def __init__(self, skip_leaderless: bool = False) -> None:
        self.clock = ManualClock()
        self.log = FakePartitionLog()
        self.log.lead(0)
        self.metadata = FakeMetadata({TXN_TOPIC: 1, "t": 2, "u": 1})
        self.metadata.leaders.update({T0: 1, T1: 2, U0: 3})
        self.state = TransactionStateManager(0, BrokerConfig(), self.clock, self.log, self.metadata)
        self.state.load_partition(0, COORDINATOR_EPOCH)
        self.markers = FakeMarkers()
        self.online = True
        self.channel = TransactionMarkerChannelManager(self.state, self.metadata, self.markers, lambda: self.online,
                                                       skip_leaderless)

    def prepared(self, commit: bool = True, tid: str = "a") -> TransactionMetadata:
        """A transaction in PREPARE_COMMIT / PREPARE_ABORT on T0, T1 and U0, written through the state manager."""
        epoch, md = self.state.put_if_not_exists(TransactionMetadata(tid, PID, producer_epoch=EPOCH))
        now = self.clock.millis()
        added = md.prepare_add_partitions({T0, T1, U0}, now, 0)
        assert self.state.append_transaction_to_log(tid, epoch, added) == E.NONE
        prepared = md.prepare_abort_or_commit(S.PREPARE_COMMIT if commit else S.PREPARE_ABORT, 0, -1, now, False)
        assert self.state.append_transaction_to_log(tid, epoch, prepared) == E.NONE
        return md

    def hand_over(self, md: TransactionMetadata, commit: bool = True) -> None:
        """What the coordinator does once PREPARE_* is durable (outside a loop the channel drives at once)."""
        self.channel.add_txn_markers_to_send(COORDINATOR_EPOCH, commit, md, md.prepare_complete(self.clock.millis()))

    def states_written(self) -> list[TransactionState]:
        return [v.state for _tid, v in self.log.records(0) if v is not None]


@pytest.fixture
def setup() -> Setup:
    return Setup()


@pytest.mark.parametrize("commit", [True, False])
def test_markers_go_to_each_leader_then_complete_is_written(setup: Setup, commit: bool) -> None:
    md = setup.prepared(commit)
    setup.hand_over(md, commit)
    assert sorted(setup.markers.sent) == [(1, T0, PID, EPOCH, commit, COORDINATOR_EPOCH, 0),
                                          (2, T1, PID, EPOCH, commit, COORDINATOR_EPOCH, 0),
                                          (3, U0, PID, EPOCH, commit, COORDINATOR_EPOCH, 0)]
    done = S.COMPLETE_COMMIT if commit else S.COMPLETE_ABORT
    assert setup.states_written()[-1] is done and md.state is done
    assert setup.channel.pending == {}


def test_retriable_errors_are_retried_with_the_new_leader_and_complete_waits_for_them(setup: Setup) -> None:
    md = setup.prepared()
    setup.markers.answer(T1, E.NOT_LEADER_OR_FOLLOWER)
    setup.metadata.leaders[U0] = -1  # no leader right now: nothing can be sent
    setup.hand_over(md)
    assert [s[1] for s in setup.markers.sent] == [T0, T1]
    assert md.topic_partitions == {T1, U0}  # T0 acknowledged
    assert setup.states_written()[-1] is S.PREPARE_COMMIT  # no COMPLETE while markers are missing

    setup.metadata.leaders.update({T1: 5, U0: 6})  # leadership moved
    setup.channel.drive()
    assert setup.markers.sent[2:] == [(5, T1, PID, EPOCH, True, COORDINATOR_EPOCH, 0),
                                      (6, U0, PID, EPOCH, True, COORDINATOR_EPOCH, 0)]
    assert setup.states_written()[-1] is S.COMPLETE_COMMIT and md.state is S.COMPLETE_COMMIT
    assert setup.states_written().count(S.COMPLETE_COMMIT) == 1


@pytest.mark.parametrize("code", [E.NOT_ENOUGH_REPLICAS, E.NOT_ENOUGH_REPLICAS_AFTER_APPEND, E.REQUEST_TIMED_OUT,
                                  E.KAFKA_STORAGE_ERROR, E.UNKNOWN_TOPIC_OR_PARTITION, E.UNKNOWN_SERVER_ERROR])
def test_other_failures_keep_the_partition_for_the_next_pass(setup: Setup, code: int) -> None:
    md = setup.prepared()
    setup.markers.answer(U0, code)
    setup.hand_over(md)
    assert md.topic_partitions == {U0} and S.COMPLETE_COMMIT not in setup.states_written()
    setup.channel.drive()
    assert setup.states_written()[-1] is S.COMPLETE_COMMIT


def test_a_deleted_partition_is_dropped_so_the_transaction_completes(setup: Setup) -> None:
    md = setup.prepared()
    del setup.metadata.partitions["u"]
    setup.hand_over(md)
    assert [s[1] for s in setup.markers.sent] == [T0, T1]
    assert setup.states_written()[-1] is S.COMPLETE_COMMIT


@pytest.mark.parametrize("code", [E.INVALID_PRODUCER_EPOCH, E.TRANSACTION_COORDINATOR_FENCED])
def test_a_fenced_marker_abandons_the_transaction(setup: Setup, code: int) -> None:
    md = setup.prepared()
    setup.markers.answer(T0, code)
    setup.hand_over(md)
    assert [s[1] for s in setup.markers.sent] == [T0]  # partitions go in order; the rest are not tried
    assert setup.channel.pending == {} and S.COMPLETE_COMMIT not in setup.states_written()
    setup.channel.drive()
    assert len(setup.markers.sent) == 1


def test_a_failed_completion_append_is_retried_without_resending_markers(setup: Setup) -> None:
    md = setup.prepared()
    setup.log.fail_with = NotEnoughReplicasError("__transaction_state has too few in-sync replicas")
    setup.hand_over(md)
    assert len(setup.markers.sent) == 3 and md.state is S.PREPARE_COMMIT
    assert md.pending_state is S.COMPLETE_COMMIT  # kept: the completion is retried, not abandoned
    setup.log.fail_with = None
    setup.channel.drive()
    assert len(setup.markers.sent) == 3
    assert setup.states_written()[-1] is S.COMPLETE_COMMIT and setup.channel.pending == {}


@pytest.mark.parametrize("back_at_a_new_epoch", [False, True])
def test_a_coordinator_that_lost_the_partition_drops_its_markers(setup: Setup, back_at_a_new_epoch: bool) -> None:
    md = setup.prepared()
    setup.markers.answer(T0, E.NOT_LEADER_OR_FOLLOWER)
    setup.hand_over(md)
    sent = len(setup.markers.sent)
    setup.state.remove_partition(0)  # another coordinator re-drives the transaction from the log
    if back_at_a_new_epoch:  # ... and it may be this node again, with a new coordinator epoch
        redriven: list[PendingCompletion] = []
        setup.state.load_partition(0, COORDINATOR_EPOCH + 1, redriven.append)
        [again] = redriven
        assert again.transactional_id == "a" and again.metadata is not md
    setup.channel.drive()
    assert len(setup.markers.sent) == sent and setup.channel.pending == {}


def test_markers_wait_for_the_response_and_not_for_a_stopped_node(setup: Setup) -> None:
    md = setup.prepared()

    async def end_then_stop() -> int:
        setup.hand_over(md)  # inside the loop: scheduled after the current request's response
        sent_before_yield = len(setup.markers.sent)
        setup.online = False
        await asyncio.sleep(0)
        return sent_before_yield

    assert asyncio.run(end_then_stop()) == 0
    assert setup.markers.sent == [] and "a" in setup.channel.pending


@pytest.mark.parametrize(("release", "skips"), [("", False), ("3.9", False), ("4.1", False), ("4.2", False),
                                                ("4.3", True), ("4.4", True)])
def test_the_emulated_release_decides_whether_a_leaderless_partition_is_dropped(release: str, skips: bool) -> None:
    assert skips_leaderless_partitions(BrokerConfig({"kafka.version.emulate": release})) is skips


def test_emulating_4_3_a_leaderless_partition_is_dropped_and_the_commit_completes_without_its_marker() -> None:
    # Kafka 4.3+: the offline partition leaves the transaction and CompleteCommit is written at once; its
    # marker is never sent, not even once a leader is back (the partition then holds the open transaction).
    setup = Setup(skip_leaderless=True)
    md = setup.prepared()
    setup.metadata.leaders[T1] = -1
    setup.hand_over(md)
    assert [s[1] for s in setup.markers.sent] == [T0, U0]
    assert setup.states_written()[-1] is S.COMPLETE_COMMIT and md.state is S.COMPLETE_COMMIT
    assert md.topic_partitions == set() and setup.channel.pending == {}
    setup.metadata.leaders[T1] = 2
    setup.clock.advance(60_000)
    setup.channel.drive()
    assert [s[1] for s in setup.markers.sent] == [T0, U0]


def test_emulating_4_3_a_partition_whose_leader_answers_not_leader_is_still_retried() -> None:
    # Only "no leader" is taken for deletion: a leader that refuses the marker keeps it pending.
    setup = Setup(skip_leaderless=True)
    md = setup.prepared()
    setup.markers.answer(T1, E.NOT_LEADER_OR_FOLLOWER)
    setup.hand_over(md)
    assert md.topic_partitions == {T1} and S.COMPLETE_COMMIT not in setup.states_written()
    setup.metadata.leaders[T1] = 5
    setup.channel.drive()
    assert setup.markers.sent[-1][:2] == (5, T1) and setup.states_written()[-1] is S.COMPLETE_COMMIT
