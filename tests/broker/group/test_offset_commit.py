"""Offset commits, fetches and transactional offsets against one shard (manual clock, in-memory log)."""

from __future__ import annotations

from kafka_txn_broker.formats.errors import NotLeaderForPartitionError, RecordListTooLargeError
from kafka_txn_broker.formats.group_records import OffsetValue
from kafka_txn_broker.group.classic_group import GroupState
from kafka_txn_broker.group.offset_commit import CommitRequest, commit, fetch
from tests.broker.group.fakes import FakeLog, join_new_member, make_shard, sync

UNKNOWN_MEMBER_ID = 25
ILLEGAL_GENERATION = 22
REBALANCE_IN_PROGRESS = 27
GROUP_ID_NOT_FOUND = 69
OFFSET_METADATA_TOO_LARGE = 12
UNSTABLE_OFFSET_COMMIT = 88
NOT_COORDINATOR = 16
INVALID_COMMIT_OFFSET_SIZE = 28


def _req(group="g", gen=-1, member="", offsets=None, version=8, producer=None, instance=None):
    offsets = offsets if offsets is not None else {("t", 0): OffsetValue(5, 1, "m")}
    return CommitRequest(group, gen, member, instance, offsets, version, producer)


def test_simple_consumer_commit_creates_an_empty_group() -> None:
    shard = make_shard()
    assert commit(shard, _req()) == {("t", 0): 0}
    assert shard.groups["g"].state is GroupState.EMPTY
    got = fetch(shard, "g", [("t", 0), ("t", 1)], False)
    assert (got[("t", 0)].offset, got[("t", 0)].leader_epoch, got[("t", 0)].metadata) == (5, 1, "m")
    assert got[("t", 1)].offset == -1 and got[("t", 1)].error == 0
    assert list(fetch(shard, "g", None, False)) == [("t", 0)]
    assert fetch(shard, "other", None, False) == {}


def test_commit_rules_for_group_members() -> None:
    shard = make_shard()
    a, a_join = join_new_member(shard)
    gen = a_join.last_join.generation
    # CompletingRebalance: the member is valid but must wait for its assignment
    assert commit(shard, _req(gen=gen, member=a)) == {("t", 0): REBALANCE_IN_PROGRESS}
    sync(shard, a, gen, {a: b""})
    assert commit(shard, _req(gen=gen, member=a)) == {("t", 0): 0}
    assert commit(shard, _req(gen=gen + 1, member=a)) == {("t", 0): ILLEGAL_GENERATION}
    assert commit(shard, _req(gen=gen, member="ghost")) == {("t", 0): UNKNOWN_MEMBER_ID}
    # no member id while the group has members
    assert commit(shard, _req()) == {("t", 0): UNKNOWN_MEMBER_ID}


def test_commit_to_a_missing_group_with_a_generation() -> None:
    shard = make_shard()
    assert commit(shard, _req("nope", gen=3, member="m", version=8)) == {("t", 0): ILLEGAL_GENERATION}
    assert commit(shard, _req("nope", gen=3, member="m", version=9)) == {("t", 0): GROUP_ID_NOT_FOUND}


def test_metadata_too_large_is_refused_per_partition() -> None:
    shard = make_shard()
    offsets = {("t", 0): OffsetValue(1, -1, "x" * 5000), ("t", 1): OffsetValue(2)}
    assert commit(shard, _req(offsets=offsets)) == {("t", 0): OFFSET_METADATA_TOO_LARGE, ("t", 1): 0}


def test_write_failures_map_to_group_errors() -> None:
    log = FakeLog()
    shard = make_shard(log=log)
    log.fail_with = NotLeaderForPartitionError("moved")
    assert commit(shard, _req()) == {("t", 0): NOT_COORDINATOR}
    log.fail_with = RecordListTooLargeError("big")
    assert commit(shard, _req()) == {("t", 0): INVALID_COMMIT_OFFSET_SIZE}
    assert fetch(shard, "g", [("t", 0)], False)[("t", 0)].offset == -1


def test_transactional_offsets_become_visible_with_the_commit_marker() -> None:
    shard = make_shard()
    commit(shard, _req(offsets={("t", 0): OffsetValue(3)}))
    assert commit(shard, _req(offsets={("t", 0): OffsetValue(10)}, producer=(7, 0))) == {("t", 0): 0}
    assert fetch(shard, "g", [("t", 0)], True)[("t", 0)].error == UNSTABLE_OFFSET_COMMIT
    assert fetch(shard, "g", None, True)[("t", 0)].error == UNSTABLE_OFFSET_COMMIT
    assert fetch(shard, "g", [("t", 0)], False)[("t", 0)].offset == 3
    shard.on_marker(7, commit=True)
    got = fetch(shard, "g", [("t", 0)], True)[("t", 0)]
    assert (got.offset, got.error) == (10, 0)


def test_aborted_transactional_offsets_are_dropped() -> None:
    shard = make_shard()
    commit(shard, _req(offsets={("t", 0): OffsetValue(10)}, producer=(7, 0)))
    shard.on_marker(7, commit=False)
    got = fetch(shard, "g", [("t", 0)], True)[("t", 0)]
    assert (got.offset, got.error) == (-1, 0)


def test_plain_commit_written_after_a_transactional_one_wins() -> None:
    shard = make_shard()
    commit(shard, _req(offsets={("t", 0): OffsetValue(10)}, producer=(7, 0)))
    commit(shard, _req(offsets={("t", 0): OffsetValue(20)}))
    shard.on_marker(7, commit=True)
    assert fetch(shard, "g", [("t", 0)], False)[("t", 0)].offset == 20


def test_transactional_commit_from_outside_the_group_is_allowed_while_it_has_members() -> None:
    shard = make_shard()
    a, a_join = join_new_member(shard)
    sync(shard, a, a_join.last_join.generation, {a: b""})
    assert commit(shard, _req(producer=(9, 1))) == {("t", 0): 0}
