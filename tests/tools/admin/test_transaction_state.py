"""What a read of `__transaction_state` keeps (admin/transaction_state.py): only what its questions need.

A hanging transaction is old, so the read for its coordinator's decision starts far back; when its id shares a
partition with busy transactional producers, each of their transactions adds four records (Ongoing, Prepare,
Complete, and more with each partition added) to what is read. Kept whole, a monitor holding such a hang
re-read and kept hundreds of megabytes each scan (tests/benchmarks/monitor_soak.py's 3-hour run).
"""

from __future__ import annotations

import pytest

from kafka_txn_tools.admin import transaction_state
from kafka_txn_tools.dumps.transaction_log import TxnLogRecord, TxnMetadata
from kafka_txn_tools.models import TopicPartition
from tests.tools.admin.fakes import MIN, NOW, cluster, producer

TP = TopicPartition("orders", 1)


def record(offset: int, txn_id: str, pid: int, epoch: int, state: str, ts: int, prev_pid: int = -1) -> TxnLogRecord:
    parts = () if state == "Empty" else (("orders", 1),)
    meta = TxnMetadata(txn_id, pid, epoch, 60_000, state, parts, ts, ts - MIN, prev_producer_id=prev_pid)
    return TxnLogRecord(offset, ts, txn_id, meta)


def busy_partition(transactions: int) -> list[TxnLogRecord]:
    """'app' (producer 7) decided to commit 20 minutes ago; 'busy' (producer 9) has committed `transactions`
    transactions since, in the same `__transaction_state` partition."""
    log = [record(0, "app", 7, 3, "Ongoing", NOW - 26 * MIN), record(1, "app", 7, 3, "PrepareCommit", NOW - 20 * MIN)]
    for i in range(transactions):
        ts = NOW - 19 * MIN + i
        for state in ("Ongoing", "PrepareCommit", "CompleteCommit"):
            log.append(record(len(log), "busy", 9, 0, state, ts))
    log.append(record(len(log), "app", 8, 0, "Empty", NOW - MIN, prev_pid=7))  # 'app' moved on to producer 8
    return log


def test_a_read_for_one_id_keeps_that_ids_states_and_decisions_only() -> None:
    c = cluster(internal=["__transaction_state"])
    c.txn_log[0] = busy_partition(200)
    read = transaction_state.read(c, {0}, NOW - 30 * MIN, ids={"app"})
    assert [(d.transactional_id, d.commit, d.offset) for d in read.decisions] == [("app", True, 1)]
    assert set(read.latest) == {"app"} and read.latest["app"].state == "Empty"
    assert read.owned == {}  # not asked for


def test_ownership_keeps_the_newest_record_per_id_and_producer_id() -> None:
    c = cluster(internal=["__transaction_state"])
    c.txn_log[0] = busy_partition(200)
    read = transaction_state.read(c, {0}, NOW - 30 * MIN, ids=(), owners=True)
    assert read.owned == {("app", 7): NOW - MIN, ("app", 8): NOW - MIN, ("busy", 9): NOW - 19 * MIN + 199}
    assert read.decisions == [] and read.latest == {}


def test_without_ids_every_id_is_kept() -> None:
    c = cluster(internal=["__transaction_state"])
    c.txn_log[0] = busy_partition(3)
    read = transaction_state.read(c, {0}, NOW - 30 * MIN)
    assert set(read.latest) == {"app", "busy"} and len(read.decisions) == 1 + 3


def test_the_decision_on_a_hang_is_found_among_a_busy_partitions_records() -> None:
    c = cluster(internal=["__transaction_state"])
    home = transaction_state.partition_for("app", 3)
    c.txn_log[home] = busy_partition(50)
    found = transaction_state.decision_on(c, "app", TP, producer(7, 40, 25 * MIN, epoch=3))
    assert found.home == home and found.decision is not None and found.decision.commit


def test_a_long_read_goes_chunk_by_chunk_and_loses_nothing_at_their_edges(monkeypatch: pytest.MonkeyPatch) -> None:
    c = cluster(internal=["__transaction_state"])
    c.txn_log[0] = busy_partition(100)
    whole = transaction_state.read(c, {0}, NOW - 30 * MIN, owners=True)
    assert len(c.log_reads) == 1
    monkeypatch.setattr(transaction_state, "CHUNK_BYTES", 2048)
    c.log_reads.clear()
    chunked = transaction_state.read(c, {0}, NOW - 30 * MIN, owners=True)
    starts = [read[TopicPartition("__transaction_state", 0)][1] for read in c.log_reads]
    assert len(starts) > 10 and starts == sorted(set(starts))  # each chunk from where the last one ended
    assert (chunked.latest, chunked.decisions, chunked.owned) == (whole.latest, whole.decisions, whole.owned)
    assert (chunked.bytes, chunked.partitions, chunked.truncated) == (whole.bytes, 1, [])


def test_a_partition_longer_than_its_budget_is_named_truncated(monkeypatch: pytest.MonkeyPatch) -> None:
    c = cluster(internal=["__transaction_state"])
    c.txn_log[0] = busy_partition(20_000)  # about 2.5 MiB of records
    monkeypatch.setattr(transaction_state, "CHUNK_BYTES", 256 << 10)
    read = transaction_state.read(c, {0}, NOW - 30 * MIN, max_bytes=1 << 20, ids={"app"})
    assert read.truncated == [0] and 1 << 20 <= read.bytes < (1 << 20) + (256 << 10)
    assert len(c.log_reads) == 4 and [d.offset for d in read.decisions] == [1]
    assert any("were read only up to 1 MiB each" in note for note in read.notes)


def test_a_tombstone_keeps_the_producer_it_last_named_and_where_it_was_written() -> None:
    c = cluster(internal=["__transaction_state"])
    c.txn_log[0] = [record(0, "gone", 0, 4, "CompleteAbort", NOW - 40 * MIN),
                    TxnLogRecord(1, NOW - 2 * MIN, "gone", None), TxnLogRecord(2, NOW - MIN, "never", None)]
    read = transaction_state.read(c, {0}, NOW - 60 * MIN, owners=True)
    assert read.latest["gone"] == transaction_state.StateRecord("gone", None, 0, 4, NOW - 2 * MIN, 3, 1)
    assert read.latest["never"] == transaction_state.StateRecord("never", None, -1, -1, NOW - MIN, 3, 2)
    assert read.owned == {("gone", 0): NOW - 40 * MIN}  # producer id 0 is a producer id
    assert read.entered("gone", "CompleteAbort", 0, 4) == (None, None)  # the newest record is the tombstone


def test_the_state_an_id_entered_is_its_newest_records() -> None:
    c = cluster(internal=["__transaction_state"])
    c.txn_log[0] = busy_partition(2)
    read = transaction_state.read(c, {0}, NOW - 30 * MIN, ids={"busy"})
    assert read.entered("busy", "CompleteCommit", 9, 0) == (NOW - 19 * MIN + 1, 3)
    assert read.entered("busy", "Ongoing", 9, 0) == (None, None)
    assert read.entered("busy", "CompleteCommit", 9, 1) == (None, None)
    assert read.entered("busy", "CompleteCommit", 8, 0) == (None, None)
    assert read.entered("app", "Empty", 8, 0) == (None, None)  # not asked about


def test_without_the_topic_or_its_leaders_the_read_says_so_and_writes_nothing_down() -> None:
    read = transaction_state.read(cluster(), None, NOW)
    assert read.partitions == 0 and read.notes == [
        "__transaction_state cannot be read (UNKNOWN_TOPIC_OR_PARTITION): times in state are lower bounds and last "
        "known transactional ids are unknown"]
    c = cluster(internal=["__transaction_state"])
    c.txn_log[1] = busy_partition(1)
    c.down = {1}  # partition 1's leader
    read = transaction_state.read(c, {0, 1}, NOW - 30 * MIN)
    assert read.notes == ["__transaction_state partitions 1 could not be read (no leader, or no answer)"]
    none = transaction_state.decision_on(cluster(), "app", TP, producer(7, 40, 25 * MIN, epoch=3))
    assert (none.decision, none.home) == (None, None) and none.notes == (
        "__transaction_state cannot be read (UNKNOWN_TOPIC_OR_PARTITION)",)
