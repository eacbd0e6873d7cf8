"""ShareGroupHeartbeat semantics with plain data: a topics view, a manual clock, a recording epoch writer.

Error codes are Kafka's: INVALID_REQUEST 42, UNKNOWN_MEMBER_ID 25, FENCED_MEMBER_EPOCH 110,
GROUP_ID_NOT_FOUND 69, GROUP_MAX_SIZE_REACHED 81, NOT_ENOUGH_REPLICAS 19."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from kafka_txn_broker.clock import ManualClock
from kafka_txn_broker.formats.errors import NotEnoughReplicasError
from kafka_txn_broker.group.modern.assignor import TopicMetadata
from kafka_txn_broker.group.share_group import ShareGroup
from kafka_txn_broker.group.share_membership import ShareGroupContext, ShareHeartbeat, ShareMembership

T = uuid.UUID(int=11)
ONE = uuid.UUID(int=12)


@dataclass
class Topics:
    by_name: dict[str, TopicMetadata] = field(default_factory=lambda: {
        "t": TopicMetadata(T, "t", 3), "one": TopicMetadata(ONE, "one", 1)})

    def topic_by_name(self, name: str) -> TopicMetadata | None:
        return self.by_name.get(name)

    def topic_by_id(self, topic_id: uuid.UUID) -> TopicMetadata | None:
        return next((t for t in self.by_name.values() if t.topic_id == topic_id), None)


class Configs:
    def share_session_timeout_ms(self, group_id: str) -> int:
        return 45_000

    def share_heartbeat_interval_ms(self, group_id: str) -> int:
        return 5_000


class Env:
    def __init__(self, max_size: int = 200) -> None:
        self.clock = ManualClock()
        self.topics = Topics()
        self.groups: dict[str, ShareGroup] = {}
        self.stored: list[tuple[str, int]] = []
        self.removed: list[tuple[str, str]] = []
        self.classic = {"classic-g"}
        self.fail: Exception | None = None
        self.m = ShareMembership(self.groups, ShareGroupContext(self.topics, Configs(), self), self.clock,
                                 max_size=max_size, store_epoch=self._store,
                                 other_group_exists=self.classic.__contains__)

    def _store(self, group: ShareGroup) -> None:
        if self.fail is not None:
            raise self.fail
        self.stored.append((group.group_id, group.group_epoch))

    def on_member_removed(self, group_id: str, member_id: str) -> None:
        self.removed.append((group_id, member_id))

    def hb(self, member: str, epoch: int, topics: list[str] | None = None, group: str = "g"):
        return self.m.heartbeat(ShareHeartbeat(group, member, epoch, None, topics, "client", "/127.0.0.1"))


def parts(result) -> dict[uuid.UUID, set[int]]:
    return {t: set(p) for t, p in (result.assignment or {}).items()}


def test_a_member_joins_with_its_own_id_and_gets_every_partition():
    env = Env()
    r = env.hb("m1", 0, ["t"])
    assert (r.error, r.member_id, r.member_epoch, r.heartbeat_interval_ms) == (0, "m1", 1, 5000)
    assert parts(r) == {T: {0, 1, 2}}
    assert env.stored == [("g", 1)]
    assert env.groups["g"].state == "Stable"
    # The next heartbeat changes nothing: no assignment in the answer, no write.
    r = env.hb("m1", 1)
    assert (r.error, r.member_epoch, r.assignment) == (0, 1, None)
    assert env.stored == [("g", 1)]


def test_a_second_member_takes_a_share_and_the_first_learns_at_its_next_heartbeat():
    env = Env()
    env.hb("m1", 0, ["t"])
    r2 = env.hb("m2", 0, ["t"])
    assert r2.member_epoch == 2
    r1 = env.hb("m1", 1)
    assert r1.member_epoch == 2
    assert parts(r1)[T].isdisjoint(parts(r2)[T])
    assert parts(r1)[T] | parts(r2)[T] == {0, 1, 2}


def test_two_members_share_a_single_partition():
    env = Env()
    assert parts(env.hb("m1", 0, ["one"])) == {ONE: {0}}
    assert parts(env.hb("m2", 0, ["one"])) == {ONE: {0}}


def test_epoch_and_member_errors():
    env = Env()
    env.hb("m1", 0, ["t"])
    assert env.hb("m1", 5).error == 110  # FENCED_MEMBER_EPOCH: ahead of the coordinator
    env.hb("m2", 0, ["t"])
    env.hb("m1", 1)  # now at epoch 2
    assert env.hb("m1", 1).error == 110  # behind
    assert env.hb("nobody", 2).error == 25  # UNKNOWN_MEMBER_ID
    assert env.hb("nobody", -1).error == 25
    assert env.hb("m1", 3, group="never-created").error == 69


def test_invalid_requests():
    env = Env()
    assert env.hb("", 0, ["t"]).error == 42
    assert env.hb("m1", 0, None).error == 42  # SubscribedTopicNames must be set when joining
    assert env.hb("m1", -2, ["t"]).error == 42
    assert env.m.heartbeat(ShareHeartbeat("", "m1", 0, None, ["t"])).error == 42
    assert env.groups == {}


def test_a_classic_group_id_is_not_a_share_group():
    r = Env().hb("m1", 0, ["t"], group="classic-g")
    assert (r.error, r.message) == (69, "Group classic-g is not a share group.")


def test_leaving_fences_the_member_and_reassigns_the_others():
    env = Env()
    env.hb("m1", 0, ["t"])
    env.hb("m2", 0, ["t"])
    assert len(parts(env.hb("m1", 1))[T]) < 3  # m1 now shares the topic with m2
    r = env.hb("m2", -1)
    assert (r.error, r.member_epoch) == (0, -1)
    assert env.removed == [("g", "m2")]
    r1 = env.hb("m1", 2)
    assert (r1.member_epoch, parts(r1)) == (3, {T: {0, 1, 2}})


def test_a_silent_member_is_removed_after_the_session_timeout():
    env = Env()
    env.hb("m1", 0, ["t"])
    env.hb("m2", 0, ["t"])
    env.clock.advance(30_000)
    env.hb("m1", 1)  # m1 keeps its session alive, m2 does not
    env.clock.advance(15_000)
    assert env.m.tick() == [("g", "m2")]
    assert env.removed == [("g", "m2")]
    env.clock.advance(29_999)
    assert env.m.tick() == []
    assert parts(env.hb("m1", 2)) == {T: {0, 1, 2}}
    env.clock.advance(45_000)
    env.m.tick()
    assert env.groups["g"].state == "Empty"


def test_the_group_is_full():
    env = Env(max_size=1)
    env.hb("m1", 0, ["t"])
    assert env.hb("m2", 0, ["t"]).error == 81
    assert env.hb("m1", 0, ["t"]).error == 0  # a member already in the group may rejoin


def test_new_partitions_move_the_epoch():
    env = Env()
    env.hb("m1", 0, ["t"])
    env.topics.by_name["t"] = TopicMetadata(T, "t", 5)
    r = env.hb("m1", 1)
    assert (r.member_epoch, parts(r)) == (2, {T: {0, 1, 2, 3, 4}})


def test_a_failed_epoch_write_changes_nothing():
    env = Env()
    env.hb("m1", 0, ["t"])
    env.fail = NotEnoughReplicasError("no")
    assert env.hb("m2", 0, ["t"]).error == 19
    assert set(env.groups["g"].members) == {"m1"} and env.groups["g"].group_epoch == 1
    env.fail = None
    assert env.hb("m2", 0, ["t"]).member_epoch == 2
