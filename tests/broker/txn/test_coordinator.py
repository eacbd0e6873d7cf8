"""TransactionCoordinator: Kafka's answers for every request and state.

The request and state tables run on fakes (`coordinator`: no sockets, no cluster); what needs real
partitions (markers moving the LSO, the reaper, restarts, an offline leader) runs on a live embedded
cluster (`harness`). Both expose the same init/add/end/metadata helpers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kafka_txn_broker.formats import errors as E
from kafka_txn_broker.formats.transactions import MAX_EPOCH, TransactionState
from tests.broker.harness import Harness, make_harness
from tests.broker.txn.fakes import FakeCoordinator

S = TransactionState


def begin(h: Harness | FakeCoordinator, txn_id: str, *parts: tuple[str, int]) -> tuple[int, int]:
    code, pid, epoch = h.init(txn_id)
    assert code == E.NONE
    assert h.add(txn_id, pid, epoch, *(parts or (("t", 0),))) == E.NONE
    return pid, epoch


def test_init_producer_id_creates_then_bumps(coordinator: FakeCoordinator) -> None:
    code, pid, epoch = coordinator.init("a")
    assert (code, epoch) == (E.NONE, 0)
    assert coordinator.init("a") == (E.NONE, pid, 1)
    md = coordinator.metadata("a")
    assert md is not None and (md.state, md.producer_epoch, md.txn_timeout_ms) == (S.EMPTY, 1, 60000)


@pytest.mark.parametrize(("txn_id", "timeout", "pid", "epoch", "code"), [
    ("", 1000, -1, -1, E.INVALID_REQUEST),
    ("a", 0, -1, -1, E.INVALID_TRANSACTION_TIMEOUT),
    ("a", 900001, -1, -1, E.INVALID_TRANSACTION_TIMEOUT),
    ("a", 1000, 5, -1, E.INVALID_REQUEST),
])
def test_init_producer_id_rejects(coordinator: FakeCoordinator, txn_id: str, timeout: int, pid: int, epoch: int,
                                  code: int) -> None:
    assert coordinator.coord("a").init_producer_id(txn_id, timeout, pid, epoch) == (code, -1, -1)


def test_init_with_expected_producer_id_and_epoch(coordinator: FakeCoordinator) -> None:
    _, pid, _ = coordinator.init("a")
    _, _, e1 = coordinator.init("a")
    assert coordinator.init("a", 60000, pid + 100, e1)[0] == E.PRODUCER_FENCED  # someone else's id
    assert coordinator.init("a", 60000, pid, e1) == (E.NONE, pid, e1 + 1)  # recovering producer: bump
    assert coordinator.init("a", 60000, pid, e1) == (E.NONE, pid, e1 + 1)  # its retry: same epoch back
    assert coordinator.init("a", 60000, pid, 0)[0] == E.PRODUCER_FENCED  # a zombie's stale epoch


def test_add_partitions_errors_and_no_op(coordinator: FakeCoordinator) -> None:
    assert coordinator.add("nobody", 1, 0, ("t", 0)) == E.INVALID_PRODUCER_ID_MAPPING
    _, pid, epoch = coordinator.init("a")
    assert coordinator.add("a", pid + 1, epoch, ("t", 0)) == E.INVALID_PRODUCER_ID_MAPPING
    assert coordinator.add("a", pid, epoch + 1, ("t", 0)) == E.PRODUCER_FENCED
    assert coordinator.add("a", pid, epoch, ("t", 0)) == E.NONE
    written = coordinator.records_written()
    assert coordinator.add("a", pid, epoch, ("t", 0)) == E.NONE
    assert coordinator.records_written() == written  # already in the transaction: answered without a write


def test_tv1_commit_writes_markers_then_complete(harness: Harness) -> None:
    pid, epoch = begin(harness, "a", ("t", 0), ("t", 1))
    harness.produce("t", 0, pid, epoch, 0)
    harness.produce("t", 1, pid, epoch, 0)
    assert harness.lso("t", 0) == (0, 2)
    assert harness.end("a", pid, epoch, True) == (E.NONE, -1, -1)
    md = harness.metadata("a")
    assert md is not None and (md.state, md.topic_partitions, md.producer_epoch) == (S.COMPLETE_COMMIT, set(), epoch)
    assert harness.lso("t", 0) == (3, 3)  # two records + the COMMIT marker
    assert harness.lso("t", 1) == (3, 3)
    # TV1 retry of the same end is fine; the other outcome is not.
    assert harness.end("a", pid, epoch, True)[0] == E.NONE
    assert harness.end("a", pid, epoch, False)[0] == E.INVALID_TXN_STATE
    assert harness.end("a", pid, epoch + 1, True)[0] == E.PRODUCER_FENCED


def test_end_on_empty_and_unknown(coordinator: FakeCoordinator) -> None:
    _, pid, epoch = coordinator.init("a")
    assert coordinator.end("a", pid, epoch, True)[0] == E.INVALID_TXN_STATE
    assert coordinator.end("nobody", pid, epoch, True)[0] == E.INVALID_PRODUCER_ID_MAPPING


def test_init_during_ongoing_fences_and_aborts_the_dangling_transaction(harness: Harness) -> None:
    pid, epoch = begin(harness, "a")
    harness.produce("t", 0, pid, epoch, 0)
    assert harness.init("a")[0] == E.CONCURRENT_TRANSACTIONS
    md = harness.metadata("a")
    assert md is not None and md.state is S.COMPLETE_ABORT and md.producer_epoch == epoch + 1
    assert harness.lso("t", 0) == (3, 3)  # aborted: the LSO moved past the ABORT marker
    assert harness.init("a") == (E.NONE, pid, epoch + 2)
    assert harness.add("a", pid, epoch, ("t", 1)) == E.PRODUCER_FENCED  # the zombie


def test_tv2_end_bumps_the_epoch_and_follows_kafkas_retry_table(coordinator: FakeCoordinator) -> None:
    _, pid, e = coordinator.init("a")
    assert coordinator.add("a", pid, e, ("t", 0), tv=2) == E.NONE
    assert coordinator.end("a", pid, e, True, tv=2) == (E.NONE, pid, e + 1)
    md = coordinator.metadata("a")
    assert md is not None and (md.state, md.producer_epoch, md.client_transaction_version) == (S.COMPLETE_COMMIT,
                                                                                                e + 1, 2)
    assert coordinator.end("a", pid, e, True, tv=2) == (E.NONE, pid, e + 1)  # retry: NONE, no new bump
    assert coordinator.end("a", pid, e, False, tv=2)[0] == E.INVALID_TXN_STATE  # retry with the other result
    assert coordinator.end("a", pid, e + 1, True, tv=2)[0] == E.INVALID_TXN_STATE  # commit with nothing open
    assert coordinator.end("a", pid, e + 1, False, tv=2) == (E.NONE, pid, e + 2)  # abort when unsure: bump
    assert coordinator.end("a", pid, e + 1, False, tv=2) == (E.NONE, pid, e + 2)  # its retry
    assert coordinator.end("a", pid, e + 5, False, tv=2)[0] == E.PRODUCER_FENCED


def test_tv2_abort_from_empty_retry_is_fenced(coordinator: FakeCoordinator) -> None:
    _, pid, e = coordinator.init("b")
    assert coordinator.init("b")[2] == e + 1
    assert coordinator.end("b", pid, e, False, tv=2)[0] == E.PRODUCER_FENCED  # Empty + retry epoch


def test_epoch_exhaustion_rotates_the_producer_id(coordinator: FakeCoordinator) -> None:
    _, pid, _ = coordinator.init("a")
    md = coordinator.metadata("a")
    assert md is not None
    md.producer_epoch = MAX_EPOCH - 1  # as if 32766 transactions had run
    code, new_pid, epoch = coordinator.init("a", 60000, pid, MAX_EPOCH - 1)
    assert code == E.NONE and new_pid != pid and epoch == 0
    md = coordinator.metadata("a")
    assert md is not None and (md.prev_producer_id, md.last_producer_epoch) == (pid, MAX_EPOCH - 1)
    # The client never got the answer and retries with its old id and epoch: recognised, same result.
    assert coordinator.init("a", 60000, pid, MAX_EPOCH - 1) == (E.NONE, new_pid, 0)


def test_tv2_epoch_overflow_moves_the_client_to_a_new_producer_id(coordinator: FakeCoordinator) -> None:
    _, pid, _ = coordinator.init("a")
    md = coordinator.metadata("a")
    assert md is not None
    md.producer_epoch = MAX_EPOCH - 1
    assert coordinator.add("a", pid, MAX_EPOCH - 1, ("t", 0), tv=2) == E.NONE
    code, new_pid, epoch = coordinator.end("a", pid, MAX_EPOCH - 1, True, tv=2)
    assert code == E.NONE and new_pid != pid and epoch == 0
    md = coordinator.metadata("a")
    assert md is not None and (md.producer_id, md.producer_epoch, md.state) == (new_pid, 0, S.COMPLETE_COMMIT)


def test_timeout_reaper_fences_and_aborts(harness: Harness) -> None:
    code, pid, epoch = harness.init("a", timeout_ms=5000)
    assert harness.add("a", pid, epoch, ("t", 0)) == E.NONE
    harness.produce("t", 0, pid, epoch, 0)
    harness.tick(4000)
    assert harness.metadata("a").state is S.ONGOING  # type: ignore[union-attr]
    harness.tick(11000)  # past the timeout and the 10 s reaper interval
    md = harness.metadata("a")
    assert md is not None and (md.state, md.producer_epoch) == (S.COMPLETE_ABORT, epoch + 1)
    assert harness.lso("t", 0) == (3, 3)
    assert harness.end("a", pid, epoch, True)[0] == E.PRODUCER_FENCED


def test_transactional_id_expiration_writes_a_tombstone(tmp_path: Path) -> None:
    cfg = {"transactional.id.expiration.ms": 60000, "transaction.remove.expired.transaction.cleanup.interval.ms": 1000}
    with make_harness(tmp_path, nodes=1, config=cfg) as h:
        h.init("idle")
        pid, epoch = begin(h, "busy")
        h.tick(61000)
        assert h.metadata("idle") is None
        assert h.metadata("busy") is not None  # Ongoing never expires
        coordinator = h.coord("idle")
        assert h.run(lambda: coordinator.describe_transaction("idle"))[0] == E.TRANSACTIONAL_ID_NOT_FOUND
        h.cluster.restart()
        h.core = h.cluster.cluster  # type: ignore[assignment]
        assert h.metadata("idle") is None and h.metadata("busy") is not None


def test_verify_partitions(coordinator: FakeCoordinator) -> None:
    pid, epoch = begin(coordinator, "a", ("t", 0))
    verify = coordinator.coord("a").verify_partitions_in_transaction
    assert verify("a", pid, epoch, [("t", 0), ("t", 1)]) == {
        ("t", 0): E.NONE, ("t", 1): E.TRANSACTION_ABORTABLE}
    assert verify("a", pid, epoch + 1, [("t", 0)]) == {("t", 0): E.PRODUCER_FENCED}
    assert verify("a", pid + 1, epoch, [("t", 0)]) == {("t", 0): E.INVALID_PRODUCER_ID_MAPPING}
    assert verify("", pid, epoch, [("t", 0)]) == {("t", 0): E.INVALID_REQUEST}


@pytest.fixture
def single(tmp_path: Path) -> Iterator[Harness]:
    with make_harness(tmp_path, nodes=1) as h:
        yield h


def test_prepare_commit_is_redriven_after_a_restart(single: Harness) -> None:
    h = single
    pid, epoch = begin(h, "a", ("t", 0), ("t", 1))
    h.produce("t", 0, pid, epoch, 0)

    def end_and_lose_the_markers() -> None:
        coord = h.coord("a")
        assert coord.end_transaction("a", pid, epoch, True, client_tv=0)[0] == E.NONE
        coord.marker_channel.clear()  # the node dies before sending any marker

    h.cluster.call_soon(end_and_lose_the_markers)
    assert h.metadata("a").state is S.PREPARE_COMMIT  # type: ignore[union-attr]
    assert h.lso("t", 0) == (0, 2)
    h.cluster.restart()
    h.core = h.cluster.cluster  # type: ignore[assignment]
    h.run(lambda: None)
    md = h.metadata("a")
    assert md is not None and md.state is S.COMPLETE_COMMIT
    assert h.lso("t", 0) == (3, 3) and h.lso("t", 1) == (1, 1)


def test_markers_wait_for_an_offline_leader(tmp_path: Path) -> None:
    with make_harness(tmp_path, nodes=3) as h:
        h.cluster.create_topic("solo", 3, 1)  # RF 1: a stopped leader leaves its partition offline
        coord_node = h.coordinator_node("a").node_id
        victim = next(p for p in range(3)
                      if h.core.metadata.partition("solo", p).leader != coord_node)
        victim_node = h.core.metadata.partition("solo", victim).leader
        pid, epoch = begin(h, "a", ("solo", victim))
        h.produce("solo", victim, pid, epoch, 0)
        h.cluster.stop_node(victim_node)
        assert h.end("a", pid, epoch, True)[0] == E.NONE
        h.tick(100)
        assert h.metadata("a").state is S.PREPARE_COMMIT  # type: ignore[union-attr]
        h.cluster.start_node(victim_node)
        h.tick(100)
        assert h.metadata("a").state is S.COMPLETE_COMMIT  # type: ignore[union-attr]
        assert h.lso("solo", victim) == (3, 3)


def test_timeout_counts_from_the_first_partition_even_when_partitions_are_added_late(
        coordinator: FakeCoordinator) -> None:
    # Kafka's TransactionMetadata.prepareAddPartitions keeps txnStartTimestamp once the transaction is Ongoing,
    # and TransactionStateManager.timedOutTransactions aborts when txnStartTimestamp + txnTimeoutMs < now: a
    # partition added late does not restart the transaction's timeout.
    c = coordinator
    pid, epoch = begin(c, "late-adder", ("t", 0))
    started = c.clock.millis()
    c.clock.advance(40_000)
    assert c.add("late-adder", pid, epoch, ("t", 1)) == E.NONE
    c.clock.advance(10_000)
    assert c.add("late-adder", pid, epoch, ("t", 2)) == E.NONE  # and once more
    md = c.metadata("late-adder")
    assert md is not None and md.txn_start_timestamp == started and len(md.topic_partitions) == 3
    c.clock.advance(10_000)  # exactly the 60 s timeout since the first partition: not yet (strictly after)
    assert c.coordinator.abort_timed_out_transactions(c.clock.millis()) == []
    c.clock.advance(1)  # 20 s after the last partition was added, but 60 s + 1 ms after the first
    assert c.coordinator.abort_timed_out_transactions(c.clock.millis()) == ["late-adder"]
    md = c.metadata("late-adder")
    assert md is not None and (md.state, md.producer_epoch) == (S.COMPLETE_ABORT, epoch + 1)
