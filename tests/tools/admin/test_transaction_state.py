"""What a read of `__transaction_state` keeps (admin/transaction_state.py): only what its questions need.

A hanging transaction is old, so the read for its coordinator's decision starts far back; when its id shares a
partition with busy transactional producers, each of their transactions adds four records (Ongoing, Prepare,
Complete, and more with each partition added) to what is read. Kept whole, a monitor holding such a hang
re-read and kept hundreds of megabytes each scan (tests/benchmarks/monitor_soak.py's 3-hour run).
"""

from __future__ import annotations

import dataclasses

import pytest

from kafka_txn_tools.admin import transaction_state
from kafka_txn_tools.admin.hanging import Ownership
from kafka_txn_tools.dumps.transaction_log import TxnLogRecord, TxnMetadata
from kafka_txn_tools.models import ClusterInfo, ScanError, TopicPartition
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
    owners = sorted(read.owners, key=lambda o: (o.transactional_id, o.producer_id))
    assert owners == [Ownership("app", 7, NOW - MIN), Ownership("app", 8, NOW - MIN),
                      Ownership("busy", 9, NOW - 19 * MIN + 199)]
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
    assert read.latest["busy"] == transaction_state.StateRecord("busy", "CompleteCommit", 9, 0, NOW - 19 * MIN + 1, 3,
                                                                7)
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


# ---- what a read skips, and what it says it skipped ----------------------------------------------------------
STATE = TopicPartition("__transaction_state", 0)


def meta_batch(offset: int, txn_id: str, key: bytes | None = None, value: bytes | None = b"") -> bytes:
    """One record of `txn_id` as the coordinator writes it; `key` or `value` given: those bytes instead."""
    from kafka_txn_broker.formats.record_batch import build_batch
    from kafka_txn_broker.formats.transaction_log import encode_key
    from kafka_txn_tools.dumps.transaction_log import encode_value

    if value == b"":
        value = encode_value(TxnMetadata(txn_id, 7, 3, 60_000, "PrepareCommit", (("orders", 1),), NOW, NOW - MIN), 1)
    return build_batch([(encode_key(txn_id) if key is None else key, value)], timestamp_ms=NOW, base_offset=offset,
                       partition_leader_epoch=5)


def undecodable_batch(offset: int) -> bytes:
    """A whole batch, its CRC right, whose records are compressed with a codec Kafka does not have."""
    from kafka_txn_broker.formats.record_batch import _assemble

    return _assemble(b"\x00\x01", attributes=7, last_offset_delta=0, base_timestamp=NOW, max_timestamp=NOW,
                     producer_id=-1, producer_epoch=-1, base_sequence=-1, record_count=1, base_offset=offset,
                     partition_leader_epoch=5)


def batches(raw: bytes) -> list:  # type: ignore[type-arg]
    from kafka_txn_tools.batches import iter_batches

    return list(iter_batches(raw))


def test_markers_group_records_newer_versions_and_other_ids_are_passed_over_not_stopped_at() -> None:
    from kafka_txn_broker.formats.record_batch import build_batch, build_control_batch
    from kafka_txn_broker.formats.transaction_log import encode_key
    from kafka_txn_tools.dumps.transaction_log import encode_value

    value = encode_value(TxnMetadata("app", 7, 3, 60_000, "PrepareCommit", (("orders", 1),), NOW, NOW - MIN), 1)
    status_99 = b"\x00\x01" + b"\x00" * 8 + b"\x00\x03" + b"\x00\x00\xea\x60" + b"\x63"  # a state Kafka never had
    raw = b"".join([
        build_control_batch(7, 3, True, 5, NOW, base_offset=0),  # a marker (the topic is transactional-free, still)
        build_batch([(None, b"x")], timestamp_ms=NOW, base_offset=1),  # no key: not a transaction's record
        meta_batch(2, "app", key=b"\x00\x01\x00\x03app"),  # key version 1: a newer broker's record type
        meta_batch(3, "app", value=status_99),
        meta_batch(4, "other"),
        undecodable_batch(5),
        build_batch([(None, b"x"), (b"\x00\x01\x00\x03app", b""), (encode_key("app"), status_99),
                     (encode_key("other"), value), (encode_key("app"), value)], timestamp_ms=NOW, base_offset=6,
                    partition_leader_epoch=5),  # several records in one batch: each is passed over alone
    ])
    notes: list[str] = []
    found = list(transaction_state.decode(STATE, batches(raw), {"app"}.__contains__, notes))
    assert [(offset, epoch, txn_id) for offset, epoch, txn_id, _, _ in found] == [(10, 5, "app")]
    meta = found[0][3]
    assert meta is not None and (meta.transactional_id, meta.state, found[0][4]) == ("app", "PrepareCommit", NOW)
    assert notes == ["__transaction_state-0: unknown compression codec 7; that batch was skipped"]
    assert [f[:3] for f in transaction_state.decode(STATE, batches(raw))] == [(4, 5, "other"), (9, 5, "other"),
                                                                             (10, 5, "app")]


def test_a_corrupt_batch_ends_the_partitions_read_with_a_note_and_keeps_what_came_before(
        monkeypatch: pytest.MonkeyPatch) -> None:
    c = cluster(internal=["__transaction_state"])
    c.txn_log[0] = busy_partition(100)
    monkeypatch.setattr(transaction_state, "CHUNK_BYTES", 2048)
    fetch = c.read_log
    def corrupt_third(reads: dict[TopicPartition, tuple[int, int]], max_bytes: int
                      ) -> tuple[dict[TopicPartition, bytes], list]:  # type: ignore[type-arg]
        data, errors = fetch(reads, max_bytes)
        if len(c.log_reads) == 3:  # the third chunk: one byte of its first batch's records flipped
            raw = bytearray(data[STATE])
            raw[70] ^= 0xFF
            data[STATE] = bytes(raw)
        return data, errors
    c.read_log = corrupt_third  # type: ignore[method-assign]
    read = transaction_state.read(c, {0}, NOW - 30 * MIN, owners=True)
    assert len(c.log_reads) == 3 and read.partitions == 1 and read.truncated == []
    first = read.notes[0]
    assert first.startswith("__transaction_state-0: CRC mismatch in the batch at offset ") and first.endswith(
        "; __transaction_state partition 0 was read no further")
    kept = max(t for (txn_id, _), t in read.owned.items() if txn_id == "busy")
    assert NOW - 19 * MIN < kept < NOW - 19 * MIN + 99  # the first chunks' records, none from the rest


def test_a_read_of_many_partitions_names_them_as_a_range() -> None:
    c = cluster(internal=["__transaction_state"], partitions=14)
    c.down = {1, 2}  # partition p's leader is broker p % 3
    read = transaction_state.read(c, None, NOW - 30 * MIN)
    assert read.notes == ["__transaction_state partitions 1..13 (9) could not be read (no leader, or no answer)"]
    c = cluster(internal=["__transaction_state"], partitions=12)
    c.down = {1, 2}
    read = transaction_state.read(c, None, NOW - 30 * MIN)
    assert read.notes == ["__transaction_state partitions 1,2,4,5,7,8,10,11 could not be read (no leader, or no "
                          "answer)"]


def test_ownership_keeps_the_newest_time_even_when_the_log_order_disagrees() -> None:
    """A coordinator that moved to a broker whose clock is behind writes later records with earlier times."""
    c = cluster(internal=["__transaction_state"])
    c.txn_log[0] = [record(0, "app", 7, 3, "Ongoing", NOW - 5 * MIN),
                    record(1, "app", 7, 3, "PrepareAbort", NOW - 9 * MIN)]
    read = transaction_state.read(c, {0}, NOW - 30 * MIN, ids=(), owners=True)
    assert read.owned == {("app", 7): NOW - 5 * MIN}


def test_the_decision_read_asks_only_the_ids_partition_and_allows_for_the_two_clocks() -> None:
    """The coordinator's clock 30 s behind the producer's: its PrepareCommit is stamped before the last write."""
    c = cluster(internal=["__transaction_state"], partitions=5)
    home = transaction_state.partition_for("app", 5)
    last_write = NOW - 10 * MIN
    c.txn_log[home] = [record(0, "app", 7, 3, "Ongoing", last_write - 2 * MIN),
                       record(1, "app", 7, 3, "PrepareCommit", last_write - 30_000)]
    for other in set(range(5)) - {home}:
        c.txn_log[other] = busy_partition(1)  # other ids' partitions: not the question's
    found = transaction_state.decision_on(c, "app", TP, producer(7, 40, 10 * MIN, epoch=3))
    assert found.decision is not None and (found.decision.commit, found.decision.offset) == (True, 1)
    assert [list(r) for r in c.log_reads] == [[TopicPartition("__transaction_state", home)]]


def test_a_decision_after_an_epoch_overflow_names_the_producer_id_the_partition_holds() -> None:
    """Transaction version 2: the coordinator prepared under a new producer id, naming the old one as previous."""
    c = cluster(internal=["__transaction_state"])
    home = transaction_state.partition_for("app", 3)
    meta = TxnMetadata("app", 8, 0, 60_000, "PrepareAbort", (("orders", 1),), NOW - 4 * MIN, NOW - 6 * MIN,
                       prev_producer_id=7, client_transaction_version=2)
    c.txn_log[home] = [TxnLogRecord(0, NOW - 4 * MIN, "app", meta)]
    found = transaction_state.decision_on(c, "app", TP, producer(7, 40, 5 * MIN, epoch=32766))
    assert found.decision is not None and (found.decision.commit, found.decision.producer_id) == (False, 8)
    assert found.decision.prev_producer_id == 7


def test_a_topic_the_principal_may_not_describe_is_named_with_kafkas_error() -> None:
    c = cluster(internal=["__transaction_state"])
    described = c.metadata
    def denied(topics: list[str] | None = None) -> ClusterInfo:
        info = described(topics)
        return dataclasses.replace(info, partitions=tuple(p for p in info.partitions
                                                          if p.partition.topic != "__transaction_state"),
                                   topic_errors=(("__transaction_state", "TOPIC_AUTHORIZATION_FAILED"),))
    c.metadata = denied  # type: ignore[method-assign]
    read = transaction_state.read(c, None, NOW)
    assert read.notes == ["__transaction_state cannot be read (TOPIC_AUTHORIZATION_FAILED): times in state are lower "
                          "bounds and last known transactional ids are unknown"]


def test_the_budget_is_bytes_whole_chunks_and_each_partition_read_to_its_end(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Every batch of producer 'busy' has one size B: chunks of 10 B are answered exactly, so the budget's
    edges are exact. Partition 0 holds 45 batches, partition 1 holds 12."""
    c = cluster(internal=["__transaction_state"])
    c.txn_log[0] = busy_partition(15)[2:-1]
    c.txn_log[1] = busy_partition(4)[2:-1]
    probe = c.read_log({STATE: (0, 0)}, 1)[0][STATE]
    size = len(probe)
    c.log_reads.clear()
    monkeypatch.setattr(transaction_state, "MIN_PARTITION_BYTES", 1)
    monkeypatch.setattr(transaction_state, "CHUNK_BYTES", 10 * size)

    def rounds(max_bytes: int) -> tuple[list[list[int]], list[int]]:
        c.log_reads.clear()
        read = transaction_state.read(c, {0, 1}, NOW - 30 * MIN, max_bytes=max_bytes)
        return [sorted(tp.partition for tp in r) for r in c.log_reads], read.truncated

    # 30 B each: partition 1 ends in the second round (12 batches), partition 0 is cut at 30 B.
    assert rounds(2 * 30 * size) == ([[0, 1], [0, 1], [0]], [0])
    # 30 B less one: a third chunk still fits under the budget's end; it is read whole, as Kafka answers.
    assert rounds(2 * (30 * size - 1))[0] == [[0, 1], [0, 1], [0]]
    # 20 B and one: the third chunk starts below the budget.
    assert rounds(2 * (20 * size + 1)) == ([[0, 1], [0, 1], [0]], [0])
    # Exactly 20 B: two chunks are the budget.
    assert rounds(2 * 20 * size) == ([[0, 1], [0, 1]], [0])
    leaders = {leader for r in c.log_reads for leader, _ in r.values()}
    assert leaders == {0, 1}  # each partition's own leader, every chunk


def test_fetch_errors_are_noted_beside_what_could_not_be_read_at_all() -> None:
    c = cluster(internal=["__transaction_state"])
    c.txn_log[0] = busy_partition(2)
    c.down = {2}  # partition 2's leader
    fetch = c.read_log
    def failing(reads: dict[TopicPartition, tuple[int, int]], max_bytes: int
                ) -> tuple[dict[TopicPartition, bytes], list[ScanError]]:
        data, errors = fetch(reads, max_bytes)
        one = TopicPartition("__transaction_state", 1)
        data.pop(one, None)
        return data, [*errors, ScanError("NOT_LEADER_OR_FOLLOWER", f"{one}: broker 1 is not its leader",
                                         broker_id=1, partition=one, api="Fetch")]
    c.read_log = failing  # type: ignore[method-assign]
    read = transaction_state.read(c, None, NOW - 30 * MIN, max_bytes=3 << 20)
    assert read.notes == ["__transaction_state partitions 2 could not be read (no leader, or no answer)",
                          "__transaction_state: __transaction_state-1: broker 1 is not its leader"]
    assert read.partitions == 1 and len(read.latest) == 2


def same_size(count: int, txn_id: str) -> list[TxnLogRecord]:
    return [record(i, txn_id, 9, 0, "CompleteCommit", NOW - MIN) for i in range(count)]


@pytest.mark.parametrize(("long_ids", "short_ids", "max_bytes", "rounds", "truncated"), [
    (12, 40, 2 * 30 * 121, [[0, 1], [0, 1], [1]], [1]),  # partition 0 ends in round 2, partition 1 goes on
    (25, 40, 2 * (20 * 121 + 1), [[0, 1], [0, 1], [1]], [0, 1]),  # 0 is over its budget first, 1 goes on
    (0, 20, 30 * 121, [[1], [1], [1]], []),  # 1 ends exactly at a chunk's end: the next read is empty
], ids=["ended", "cut short", "ends at a chunk's end"])
def test_one_partition_ending_or_cut_short_does_not_stop_the_others(
        monkeypatch: pytest.MonkeyPatch, long_ids: int, short_ids: int, max_bytes: int, rounds: list[list[int]],
        truncated: list[int]) -> None:
    """Partition 0's batches are 146 bytes (a long id), partition 1's 121; chunks are 1,210 bytes, answered
    in whole batches as Kafka does (9 batches, 1,314 bytes, from partition 0)."""
    c = cluster(internal=["__transaction_state"])
    c.txn_log[0] = same_size(long_ids, "a-longer-transactional-id")
    c.txn_log[1] = same_size(short_ids, "b")
    monkeypatch.setattr(transaction_state, "MIN_PARTITION_BYTES", 1)
    monkeypatch.setattr(transaction_state, "CHUNK_BYTES", 10 * 121)
    read = transaction_state.read(c, {0, 1}, NOW - 30 * MIN, max_bytes=max_bytes)
    assert [sorted(tp.partition for tp in r) for r in c.log_reads] == rounds
    assert read.truncated == truncated


def test_an_undecodable_batch_is_skipped_and_named() -> None:
    c = cluster(internal=["__transaction_state"])
    c.txn_log[0] = busy_partition(2)
    fetch = c.read_log
    def with_a_new_codec(reads: dict[TopicPartition, tuple[int, int]], max_bytes: int
                         ) -> tuple[dict[TopicPartition, bytes], list[ScanError]]:
        data, errors = fetch(reads, max_bytes)
        data[STATE] += undecodable_batch(len(c.txn_log[0]))  # after the partition's last record
        return data, errors
    c.read_log = with_a_new_codec  # type: ignore[method-assign]
    read = transaction_state.read(c, {0}, NOW - 30 * MIN)
    assert read.notes == ["__transaction_state-0: unknown compression codec 7; that batch was skipped"]
    assert set(read.latest) == {"app", "busy"}  # what came before it is kept


def test_a_round_of_many_partitions_holds_a_bounded_amount_and_big_partitions_go_on_in_bigger_chunks(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Twelve partitions: eleven small (4 batches of 121 bytes) and one big (40). A round may hold 12 x 1,210
    bytes: 1,210 a partition in the first, then the big one alone with chunks of up to 4,840 (CHUNK_BYTES)."""
    c = cluster(internal=["__transaction_state"], partitions=12)
    for p in range(11):
        c.txn_log[p] = same_size(4, "b")
    c.txn_log[11] = same_size(40, "b")
    monkeypatch.setattr(transaction_state, "HELD_BYTES", 12 * 1210)
    monkeypatch.setattr(transaction_state, "MIN_CHUNK_BYTES", 1)
    monkeypatch.setattr(transaction_state, "CHUNK_BYTES", 4 * 1210)
    asked: list[tuple[int, int]] = []
    fetch = c.read_log
    def sizing(reads: dict[TopicPartition, tuple[int, int]], max_bytes: int
               ) -> tuple[dict[TopicPartition, bytes], list[ScanError]]:
        asked.append((len(reads), max_bytes))
        return fetch(reads, max_bytes)
    c.read_log = sizing  # type: ignore[method-assign]
    read = transaction_state.read(c, None, NOW - 30 * MIN, max_bytes=1 << 30)
    assert asked == [(12, 1210), (1, 4840)] and all(type(size) is int for _, size in asked)  # Fetch's max bytes
    assert read.partitions == 12 and read.truncated == [] and read.bytes == (11 * 4 + 40) * 121
    # A partition's own budget below that: its chunk is the budget.
    monkeypatch.setattr(transaction_state, "MIN_PARTITION_BYTES", 1)
    asked.clear()
    read = transaction_state.read(c, {0, 11}, NOW - 30 * MIN, max_bytes=2 * 242)
    assert asked == [(2, 242)] and read.truncated == [0, 11]
