"""DeleteGroups and OffsetDelete on a shard, and that a replay forgets what was deleted."""

from __future__ import annotations

import struct

from kafka_txn_broker.clock import ManualClock
from kafka_txn_broker.configs.broker_config import BrokerConfig
from kafka_txn_broker.coordinator.loader import replay_chunk
from kafka_txn_broker.formats.group_records import OffsetValue
from kafka_txn_broker.group.deletion import delete_group, delete_offsets, subscribed_topics
from kafka_txn_broker.group.offset_commit import CommitRequest, commit, fetch
from kafka_txn_broker.group.shard import GroupShard
from tests.broker.group.fakes import FakeLog, join_new_member, make_shard, sync

NON_EMPTY_GROUP = 68
GROUP_ID_NOT_FOUND = 69
GROUP_SUBSCRIBED_TO_TOPIC = 86


def subscription(*topics: str) -> bytes:
    """ConsumerProtocolSubscription v0: version, topics, null user data."""
    body = struct.pack(">hi", 0, len(topics))
    for t in topics:
        body += struct.pack(">h", len(t)) + t.encode()
    return body + struct.pack(">i", -1)


def _commit(shard: GroupShard, group: str, tp: tuple[str, int], offset: int) -> None:
    assert commit(shard, CommitRequest(group, -1, "", None, {tp: OffsetValue(offset)})) == {tp: 0}


def _replayed(log: FakeLog) -> GroupShard:
    shard = GroupShard(0, BrokerConfig(), ManualClock(), FakeLog())
    replay_chunk(shard, log.data(), 0)
    shard.finish_load()
    return shard


def test_delete_an_empty_group_and_its_offsets() -> None:
    log = FakeLog()
    shard = make_shard(log=log)
    _commit(shard, "g", ("t", 0), 5)
    _commit(shard, "g", ("u", 1), 6)
    _commit(shard, "keep", ("t", 0), 7)
    assert delete_group(shard, "g") == 0
    assert "g" not in shard.groups and fetch(shard, "g", None, False) == {}
    assert delete_group(shard, "g") == GROUP_ID_NOT_FOUND
    again = _replayed(log)
    assert "g" not in again.groups and fetch(again, "g", None, False) == {}
    assert fetch(again, "keep", [("t", 0)], False)[("t", 0)].offset == 7


def test_a_group_with_members_cannot_be_deleted() -> None:
    shard = make_shard()
    join_new_member(shard)
    assert delete_group(shard, "g") == NON_EMPTY_GROUP
    assert delete_group(shard, "nope") == GROUP_ID_NOT_FOUND


def test_offsets_of_subscribed_topics_stay_while_members_consume_them() -> None:
    log = FakeLog()
    shard = make_shard(log=log)
    member, answers = join_new_member(shard, protocols=[("range", subscription("t"))])
    sync(shard, member, answers.last_join.generation, {member: b""})
    assert subscribed_topics(shard.groups["g"]) == {"t"}
    commit(shard, CommitRequest("g", answers.last_join.generation, member, None,
                                {("t", 0): OffsetValue(1), ("old", 0): OffsetValue(2)}))
    top, errors = delete_offsets(shard, "g", [("t", 0), ("old", 0), ("old", 1)])
    assert top == 0
    assert errors == {("t", 0): GROUP_SUBSCRIBED_TO_TOPIC, ("old", 0): 0, ("old", 1): 0}
    assert fetch(shard, "g", None, False).keys() == {("t", 0)}
    assert _replayed(log).offsets.get("g", ("old", 0)) is None
    assert delete_offsets(shard, "missing", [("t", 0)]) == (GROUP_ID_NOT_FOUND, {})


def test_unreadable_subscriptions_protect_every_topic() -> None:
    shard = make_shard()
    member, answers = join_new_member(shard, protocols=[("range", b"\x00")])
    sync(shard, member, answers.last_join.generation, {member: b""})
    assert subscribed_topics(shard.groups["g"]) is None
    assert delete_offsets(shard, "g", [("x", 0)]) == (0, {("x", 0): GROUP_SUBSCRIBED_TO_TOPIC})
