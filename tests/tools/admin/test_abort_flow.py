"""abort's write path and its refusals word for word (admin/abort.py), over the in-memory cluster: a
leadership move in the middle of an abort, the wait for the LSO, and the message and fix of every refusal
(what the CLI prints; errors name the problem and the fix). Time is a fake: no test sleeps."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest

from kafka_txn_tools.admin import abort as abort_module
from kafka_txn_tools.admin import abort_batch, offset_evidence
from kafka_txn_tools.admin.abort import AbortTarget, execute, validate
from kafka_txn_tools.errors import BrokerError, ConnectionFailed, MissingApi, NothingToDo, Refused
from kafka_txn_tools.models import TopicPartition
from tests.tools.admin.fakes import MIN, FakeCluster, cluster, producer

TP = TopicPartition("orders", 1)  # replicas 1, 2, 0: leader 1


class FakeTime:
    """Stands in for the `time` module inside admin/abort.py: sleeping moves the clock."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeTime:
    fake = FakeTime()
    monkeypatch.setattr(abort_module, "time", fake)
    return fake


def hanging(coordinator_epoch: int = 0) -> FakeCluster:
    c = cluster()
    c.open_txn(TP, producer(10, 100, 30 * MIN, epoch=4, coordinator_epoch=coordinator_epoch))
    c.offsets = {TP: (100, 180)}
    return c


def move_leader(c: FakeCluster, leader: int) -> None:
    c.partitions = [p._replace(leader=leader) if p.partition == TP else p for p in c.partitions]


def fail_first_marker(c: FakeCluster, error: str | Exception, then: Callable[[], None] | None = None) -> None:
    real = c.write_abort_marker
    calls = []

    def write(*args):  # type: ignore[no-untyped-def]
        calls.append(args)
        if len(calls) == 1:
            if then is not None:
                then()
            if isinstance(error, Exception):
                raise error
            c.markers.append(args)
            return error
        return real(*args)

    c.write_abort_marker = write  # type: ignore[method-assign]


# ---- a leadership move during the abort -------------------------------------------------------------------------
@pytest.mark.parametrize("failure", ["NOT_LEADER_OR_FOLLOWER", "FENCED_LEADER_EPOCH", ConnectionFailed("gone")])
def test_the_marker_follows_the_new_leader(clock: FakeTime, failure: str | Exception) -> None:
    c = hanging()
    check = validate(c, AbortTarget(TP, start_offset=100))
    fail_first_marker(c, failure, then=lambda: move_leader(c, 2))
    outcome = execute(c, check, sleep=clock.sleep)
    assert c.markers[-1] == (2, TP, 10, 4, 0, 100)  # written once more, to broker 2
    assert check.leader == 2 and not outcome.still_open
    assert check.notes == ["leadership of orders-1 moved from broker 1 to 2 during the abort; re-validated on the "
                           "new leader"]


def test_no_new_leader_within_the_wait_is_an_error_and_writes_nothing_more(clock: FakeTime) -> None:
    c = hanging()
    check = validate(c, AbortTarget(TP, start_offset=100))
    fail_first_marker(c, "NOT_LEADER_OR_FOLLOWER", then=lambda: move_leader(c, -1))
    with pytest.raises(BrokerError) as exc:
        execute(c, check, sleep=clock.sleep)
    assert exc.value.message == ("the leader of orders-1 (broker 1) stopped answering and no new leader was elected "
                                 "within 15 s; nothing was written")
    assert (exc.value.error, exc.value.fix) == ("LEADER_NOT_AVAILABLE",
                                                "retry the same abort command once the partition has a leader")
    assert clock.sleeps and set(clock.sleeps) == {0.2} and 14.8 <= sum(clock.sleeps) <= 15.2
    assert len(c.markers) == 1


def test_the_same_leader_coming_back_is_not_a_new_leader(clock: FakeTime) -> None:
    c = hanging()
    check = validate(c, AbortTarget(TP, start_offset=100))
    fail_first_marker(c, "NOT_LEADER_OR_FOLLOWER")  # leader stays broker 1 in the metadata
    with pytest.raises(BrokerError, match="no new leader was elected within 15 s"):
        execute(c, check, sleep=clock.sleep)


def test_a_transaction_completed_on_the_new_leader_is_left_alone(clock: FakeTime) -> None:
    c = hanging()
    check = validate(c, AbortTarget(TP, start_offset=100))

    def moved_and_completed() -> None:
        move_leader(c, 2)
        c.complete(TP, 10)

    fail_first_marker(c, "NOT_LEADER_OR_FOLLOWER", then=moved_and_completed)
    with pytest.raises(NothingToDo) as exc:
        execute(c, check, sleep=clock.sleep)
    assert exc.value.message == ("leadership of orders-1 moved to broker 2, where the transaction at offset 100 is "
                                 "no longer open: it was completed")
    assert len(c.markers) == 1


def test_a_leader_that_cannot_be_asked_before_the_write_is_found_out_by_the_write(clock: FakeTime) -> None:
    c = hanging()
    check = validate(c, AbortTarget(TP, start_offset=100))
    c.down = {1}  # the re-check cannot reach the leader: the write is tried and follows the move

    def moved() -> None:
        move_leader(c, 2)
        c.down = set()

    fail_first_marker(c, ConnectionFailed("refused"), then=moved)
    execute(c, check, sleep=clock.sleep)
    assert c.markers[-1][0] == 2


def test_a_marker_refused_while_the_transaction_is_still_open_is_an_error() -> None:
    c = hanging()
    c.marker_error = "INVALID_TXN_STATE"
    with pytest.raises(BrokerError) as exc:
        execute(c, validate(c, AbortTarget(TP, start_offset=100)), sleep=lambda s: None)
    assert exc.value.message == ("Failed to abort transaction on orders-1 (producer 10, epoch 4, coordinator epoch 0): "
                                 "INVALID_TXN_STATE")


# ---- waiting for the LSO --------------------------------------------------------------------------------------
def test_the_outcome_waits_for_the_lso_to_move(clock: FakeTime) -> None:
    c = hanging()
    check = validate(c, AbortTarget(TP, start_offset=100))
    real = c.partition_offsets
    polls = []

    def slow_lso(leaders):  # type: ignore[no-untyped-def]
        polls.append(clock.now)
        if len(polls) < 3:  # the marker is written, but not yet replicated: the LSO has not moved
            return {tp: replace(o, last_stable_offset=100) for tp, o in real(leaders).items()}
        return real(leaders)

    c.partition_offsets = slow_lso  # type: ignore[method-assign]
    outcome = execute(c, check, sleep=clock.sleep)
    assert (outcome.after.last_stable_offset, outcome.still_open, outcome.check) == (180, False, check)
    assert clock.sleeps == [0.1, 0.1]


def test_the_wait_ends_at_the_settle_time_and_reports_what_it_saw(clock: FakeTime) -> None:
    c = hanging()
    check = validate(c, AbortTarget(TP, start_offset=100))
    c.marker_error = None
    real_write = c.write_abort_marker

    def written_but_still_open(*args):  # type: ignore[no-untyped-def]
        c.markers.append(args)
        return None  # accepted, but the fake's state does not change: still open, LSO unmoved

    c.write_abort_marker = written_but_still_open  # type: ignore[method-assign]
    outcome = execute(c, check, sleep=clock.sleep, settle_s=1.0)
    assert outcome.still_open and outcome.after.last_stable_offset == 100
    assert set(clock.sleeps) == {0.1} and 0.9 <= sum(clock.sleeps) <= 1.1
    assert real_write is not None


def test_an_lso_held_by_another_transaction_does_not_wait() -> None:
    c = hanging()
    c.offsets = {TP: (50, 180)}  # an older open transaction holds the LSO at 50
    calls: list[float] = []
    outcome = execute(c, validate(c, AbortTarget(TP, start_offset=100)), sleep=calls.append)
    assert calls == [] and outcome.after.last_stable_offset == 180


def test_without_describe_producers_the_wait_is_for_the_lso_only(clock: FakeTime) -> None:
    c = hanging()
    c.unsupported = {"DescribeProducers", "ListTransactions", "DescribeTransactions"}
    check = validate(c, AbortTarget(TP, producer_id=10, producer_epoch=4, coordinator_epoch=0))
    outcome = execute(c, check, sleep=clock.sleep)
    assert not outcome.still_open and clock.sleeps == []


def test_lso_settled_rules() -> None:
    c = hanging()
    check = validate(c, AbortTarget(TP, start_offset=100))
    settled = abort_module._lso_settled
    offsets = check.before
    assert settled(check, replace(offsets, last_stable_offset=None))  # unknown: nothing to wait for
    assert settled(replace(check, before=replace(offsets, last_stable_offset=None)), offsets)
    assert not settled(check, offsets)  # held at our start offset, unmoved
    assert settled(check, replace(offsets, last_stable_offset=101))
    below = replace(check, before=replace(offsets, last_stable_offset=99))  # held by an older transaction
    assert settled(below, below.before)
    legacy = replace(check, spec=replace(check.spec, start_offset=None))  # no start offset: ours until it moves
    assert not settled(legacy, offsets)


# ---- every refusal, word for word ----------------------------------------------------------------------------
def test_unknown_topic_and_partition_are_refusals_from_live_state() -> None:
    c = hanging()
    with pytest.raises(Refused) as exc:
        validate(c, AbortTarget(TopicPartition("nope", 0), start_offset=1))
    assert str(exc.value) == ("topic 'nope' (UNKNOWN_TOPIC_OR_PARTITION) does not exist or is not visible to this "
                              "principal: check --topic and --partition")
    with pytest.raises(Refused) as exc:
        validate(c, AbortTarget(TopicPartition("orders", 9), start_offset=1))
    assert str(exc.value) == ("partition orders-9 does not exist or is not visible to this principal: check --topic "
                              "and --partition")


def test_a_partition_without_a_leader() -> None:
    c = hanging()
    move_leader(c, -1)
    with pytest.raises(BrokerError) as exc:
        validate(c, AbortTarget(TP, start_offset=100))
    assert (exc.value.message, exc.value.error, exc.value.fix) == (
        "partition orders-1 has no leader right now", "LEADER_NOT_AVAILABLE", "retry once a replica is elected leader")
    move_leader(c, 0)  # broker 0 is a leader like any other
    assert validate(c, AbortTarget(TP, start_offset=100)).leader == 0


def test_producer_state_that_cannot_be_read() -> None:
    c = hanging()
    c.partition_errors[(1, TP)] = "TOPIC_AUTHORIZATION_FAILED"
    with pytest.raises(BrokerError) as exc:
        validate(c, AbortTarget(TP, start_offset=100))
    assert exc.value.message == ("Failed to validate producer state for partition orders-1: orders-1: "
                                 "TOPIC_AUTHORIZATION_FAILED")
    assert exc.value.error == "TOPIC_AUTHORIZATION_FAILED"


MISSING = "Could not find any open transactions starting at offset {} on partition orders-1: "
OPEN_AT = ("open transactions on orders-1 start at 100, 150: take --start-offset from `kafka-txn find-hanging` or "
           "`describe-producers`")


def logged() -> FakeCluster:
    """orders-1's log from offset 10 (retention deleted 0-9): plain records 10-19, producer 7's transaction
    20-24 committed at 25, producer 8's 26-27 aborted at 28, producer 12's 29 with no marker, producer 10's
    open transaction from 100 (after plain records 30-99) and producer 11's from 150; the end is 180."""
    c = hanging()
    c.open_txn(TP, producer(11, 150, 30 * MIN))
    c.log_start[TP] = 10
    c.append(TP, records=10)
    c.append(TP, 7, 0, records=5, transactional=True)
    c.append(TP, 7, 0, marker=True)
    c.append(TP, 8, 3, records=2, transactional=True)
    c.append(TP, 8, 3, marker=False)
    c.append(TP, 12, 0, transactional=True)
    c.append(TP, records=70)
    c.append(TP, 10, 4, records=50, transactional=True)
    c.append(TP, 11, 0, records=30, transactional=True)
    return c


@pytest.mark.parametrize(("offset", "why"), [
    (180, "the partition ends before it (high watermark 180)"),
    (5, "offset 5 is no longer in the log (before its log start offset: deleted by retention)"),
    (12, "the record at offset 12 is not transactional (written by a producer without a producer id)"),
    (25, "the record at offset 25 is a COMMIT marker of producer 7, not the start of a transaction"),
    (28, "the record at offset 28 is an ABORT marker of producer 8, not the start of a transaction"),
    (22, "offset 22 is inside a batch of producer 7 that starts at offset 20 (transactions start at a batch's "
         "first offset)"),
    (29, "the transactional record of producer 12 there is in no open transaction, and no marker of it was found "
         "in the {} bytes read after it"),
])
def test_no_transaction_starting_at_the_offset_is_a_refusal_that_says_what_is_there(offset: int, why: str) -> None:
    c = logged()
    with pytest.raises(Refused) as exc:
        validate(c, AbortTarget(TP, start_offset=offset))
    read = sum(len(b) for b in c.logs[TP][5:])  # what a Fetch from producer 12's batch (the 6th) returns
    assert str(exc.value) == MISSING.format(offset) + why.format(read) + ": " + OPEN_AT
    assert c.markers == []


def test_an_offset_inside_an_open_transaction_names_its_start() -> None:
    with pytest.raises(Refused) as exc:
        validate(logged(), AbortTarget(TP, start_offset=120))
    assert str(exc.value) == (MISSING.format(120) + "offset 120 is inside the open transaction of producer 10, "
                              "which starts at offset 100: abort it with --start-offset 100")


@pytest.mark.parametrize(("offset", "done"), [
    (20, "was already committed: its COMMIT marker is at offset 25"),
    (26, "was already aborted: its ABORT marker is at offset 28"),
])
def test_already_done_only_with_the_producers_marker_after_the_start_as_evidence(offset: int, done: str) -> None:
    c = logged()
    with pytest.raises(NothingToDo) as exc:
        validate(c, AbortTarget(TP, start_offset=offset))
    producer_id = 7 if offset == 20 else 8
    assert str(exc.value) == (f"the transaction of producer {producer_id} that started at offset {offset} on "
                              f"partition orders-1 {done}")
    assert c.markers == []


def test_a_marker_beyond_what_is_read_is_no_evidence() -> None:
    c = logged()
    read = offset_evidence.read(c, TP, 1, 20, max_bytes=len(c.logs[TP][1]))  # producer 7's batch alone
    assert read.batch is not None and read.batch.producer_id == 7 and read.marker is None


def test_a_partition_that_never_had_a_transaction_is_a_refusal_not_already_done() -> None:
    c = cluster()
    c.append(TP, records=40)
    c.offsets = {TP: (40, 40)}  # the LSO is past offset 3: once that alone read as "already done"
    with pytest.raises(Refused) as exc:
        validate(c, AbortTarget(TP, start_offset=3))
    assert str(exc.value) == (MISSING.format(3) + "the record at offset 3 is not transactional (written by a "
                              "producer without a producer id): orders-1 has no open transactions: nothing to abort")
    empty = cluster()
    empty.offsets = {TP: (0, 0)}
    with pytest.raises(Refused, match="the partition ends before it"):
        validate(empty, AbortTarget(TP, start_offset=0))


def test_the_legacy_form_refusals() -> None:
    c = hanging()
    with pytest.raises(Refused) as exc:
        validate(c, AbortTarget(TP, producer_id=99, producer_epoch=4, coordinator_epoch=0))
    assert str(exc.value) == ("partition orders-1 has no state for producer id 99 (a wrong id, or an expired "
                              "producer): take the producer id from `kafka-txn describe-producers --topic orders "
                              "--partition 1`")
    c.open_txn(TP, producer(12, -1, 0, epoch=1, coordinator_epoch=2))
    with pytest.raises(NothingToDo) as done:
        validate(c, AbortTarget(TP, producer_id=12, producer_epoch=1, coordinator_epoch=2))
    assert str(done.value) == ("producer 12 has no open transaction on partition orders-1: its last transaction "
                               "there was already ended by a marker (coordinator epoch 2)")
    c.open_txn(TP, producer(13, -1, 0, epoch=0, coordinator_epoch=-1))  # idempotent: no marker ever
    with pytest.raises(Refused) as exc:
        validate(c, AbortTarget(TP, producer_id=13, producer_epoch=0, coordinator_epoch=0))
    assert str(exc.value) == ("producer 13 has no open transaction on partition orders-1, and no transaction of it "
                              "was ever ended there by a marker: it does not write transactions to this partition: "
                              "check the producer with `kafka-txn describe-producers --topic orders --partition 1`")
    assert c.markers == []


def test_a_mismatch_names_every_wrong_identifier_and_the_fix() -> None:
    c = hanging(coordinator_epoch=0)
    with pytest.raises(Refused) as exc:
        validate(c, AbortTarget(TP, start_offset=100, producer_id=11, producer_epoch=3, coordinator_epoch=-1))
    assert str(exc.value) == (
        "the open transaction of producer 10 at offset 100 on orders-1 is not the one named: producer id 11 (the "
        "partition has 10); producer epoch 3 (the partition has 4); coordinator epoch -1 (the partition has 0): the "
        "transaction changed since it was read (a stale plan?), or the identifiers are wrong: read them again with "
        "`kafka-txn find-hanging` or `describe-producers`")


@pytest.mark.parametrize(("live", "given", "match"), [
    (-1, -1, True), (-1, 0, True), (-1, 1, False), (-1, -2, False), (0, 0, True), (0, -1, False), (3, 3, True),
])
def test_coordinator_epoch_minus_one_and_zero(live: int, given: int, match: bool) -> None:
    # A producer that never got a marker reports -1; kafka-transactions.sh prints it and clamps it to 0 in the
    # marker, so either names it. A real epoch (0 included) must be given exactly.
    assert abort_module._coordinator_epochs_match(given, live) is match


def test_without_describe_producers_the_legacy_form_must_be_complete() -> None:
    c = hanging()
    c.unsupported = {"DescribeProducers"}
    for partial in ({"producer_id": 10, "producer_epoch": 4}, {"producer_id": 10, "coordinator_epoch": 0},
                    {"producer_epoch": 4, "coordinator_epoch": 0, "start_offset": 100}):
        with pytest.raises(MissingApi) as exc:
            validate(c, AbortTarget(TP, **partial))
        assert "which `kafka-txn abort --start-offset` needs" in exc.value.message
    check = validate(c, AbortTarget(TP, producer_id=10, producer_epoch=4, coordinator_epoch=-1))
    assert check.spec.coordinator_epoch == 0 and len(check.unverifiable) == 1


def test_the_coordinator_view_and_its_failures() -> None:
    c = hanging()
    check = validate(c, AbortTarget(TP, start_offset=100))
    assert check.verdict is not None and check.verdict.candidate.broker_id == 1  # judged on the leader's state
    assert check.coordinator_view.startswith("no-transactional-id: no coordinator lists producer id 10")
    c.down = {0}  # a coordinator that may own the id cannot be asked: "no id" proves nothing
    check = validate(c, AbortTarget(TP, start_offset=100))
    assert check.verdict is None
    assert check.refusal == ("the coordinator's view could not be read, so the transaction may be live "
                             "(broker 0 is unreachable)")
    assert check.coordinator_view == "unknown (the coordinator's view could not be read)"
    c.unsupported = {"ListTransactions"}
    check = validate(c, AbortTarget(TP, start_offset=100))
    assert check.unverifiable == [
        "the coordinator's view cannot be read: the cluster does not support ListTransactions (Apache Kafka 3.0+), so "
        "it cannot be checked that no coordinator still holds this transaction as live"]


def test_no_leader_for_a_partition_led_by_broker_0_is_not_mistaken_for_a_new_leader(clock: FakeTime) -> None:
    tp = TopicPartition("orders", 0)  # replicas 0, 1, 2: leader 0
    c = cluster()
    c.open_txn(tp, producer(10, 100, 30 * MIN, epoch=4))
    c.offsets = {tp: (100, 180)}
    check = validate(c, AbortTarget(tp, start_offset=100))

    def leaderless() -> None:
        c.partitions = [p._replace(leader=-1) if p.partition == tp else p for p in c.partitions]

    fail_first_marker(c, "NOT_LEADER_OR_FOLLOWER", then=leaderless)
    with pytest.raises(BrokerError, match=r"the leader of orders-0 \(broker 0\) stopped answering"):
        execute(c, check, sleep=clock.sleep)
    assert [m[0] for m in c.markers] == [0]  # nothing written anywhere else


def test_a_plan_write_waits_for_the_lso_with_the_callers_sleep_and_settle_time(clock: FakeTime) -> None:
    c = hanging()
    real = c.write_abort_marker

    def lso_stays(*args):  # type: ignore[no-untyped-def]
        code = real(*args)
        c.offsets[TP] = (100, 180)  # the marker is written, but the LSO has not moved yet
        return code

    c.write_abort_marker = lso_stays  # type: ignore[method-assign]
    items = abort_batch.prepare(c, [AbortTarget(TP, start_offset=100)], force=False)
    abort_batch.write(c, items, sleep=clock.sleep, settle_s=0.5)
    assert items[0].result is abort_batch.AbortResult.ABORTED
    assert clock.sleeps and set(clock.sleeps) == {0.1} and 0.4 <= sum(clock.sleeps) <= 0.6
