"""ConsumerGroupHeartbeat semantics (KIP-848) on a GroupShard over the fake log: joins, revocation before
reassignment, epochs, leaving, sessions, records in `__consumer_offsets`, and offset commits.

Expected values follow Kafka's GroupMetadataManager / CurrentAssignmentBuilder: a joining member moves
the group epoch; a partition is given to a new owner only after its old owner reported it revoked;
error codes INVALID_REQUEST 42, UNKNOWN_MEMBER_ID 25, FENCED_MEMBER_EPOCH 110, UNSUPPORTED_ASSIGNOR 112,
STALE_MEMBER_EPOCH 113, GROUP_ID_NOT_FOUND 69, UNSUPPORTED_VERSION 35, NOT_ENOUGH_REPLICAS 19."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

import pytest

from kafka_txn_broker.clock import ManualClock
from kafka_txn_broker.configs.broker_config import BrokerConfig
from kafka_txn_broker.coordinator.loader import replay_chunk
from kafka_txn_broker.formats.errors import GroupIdNotFoundError, NotEnoughReplicasError
from kafka_txn_broker.formats.group_records import OffsetValue
from kafka_txn_broker.group.consumer_group import MemberState
from kafka_txn_broker.group.consumer_membership import ConsumerGroupContext, ConsumerHeartbeat
from kafka_txn_broker.group.modern.assignor import TopicMetadata
from kafka_txn_broker.group.offset_commit import CommitRequest, commit
from kafka_txn_broker.group.shard import GroupShard
from tests.broker.group.fakes import FakeLog

T = uuid.UUID(int=21)
SESSION_MS = 45_000


@dataclass
class Topics:
    by_name: dict[str, TopicMetadata] = field(default_factory=lambda: {"t": TopicMetadata(T, "t", 4)})

    def topic_by_name(self, name: str) -> TopicMetadata | None:
        return self.by_name.get(name)

    def topic_by_id(self, topic_id: uuid.UUID) -> TopicMetadata | None:
        return next((t for t in self.by_name.values() if t.topic_id == topic_id), None)

    def topic_names(self) -> list[str]:
        return list(self.by_name)


@dataclass
class Acls:
    """A fake authorization hook: the (principal, topic) pairs allowed DESCRIBE; records who was asked from where."""
    allowed: set[tuple[str, str]]
    asked_hosts: set[str] = field(default_factory=set)

    def __call__(self, principal: str, host: str, topic: str) -> bool:
        self.asked_hosts.add(host)
        return (principal, topic) in self.allowed


class Configs:
    def consumer_session_timeout_ms(self, group_id: str) -> int:
        return SESSION_MS

    def consumer_heartbeat_interval_ms(self, group_id: str) -> int:
        return 5_000


class Env:
    def __init__(self, log: FakeLog | None = None, **config: object) -> None:
        self.config = config
        self.clock = ManualClock()
        self.log = log or FakeLog()
        self.topics = Topics()
        self.acls: Acls | None = None
        self.shard = self.new_shard()

    def new_shard(self) -> GroupShard:
        context = ConsumerGroupContext(self.topics, Configs(), self.acls)
        shard = GroupShard(0, BrokerConfig(self.config), self.clock, self.log, None, context)
        replay_chunk(shard, self.log.data(), 0)
        shard.finish_load()
        return shard

    def hb(self, member: str, epoch: int, owned: dict[uuid.UUID, set[int]] | None = None, *,
           topics: list[str] | None = None, regex: str | None = None, assignor: str | None = None,
           rebalance_ms: int = -1, group: str = "g", instance: str | None = None, principal: str = "User:ANONYMOUS"):
        membership = self.shard.consumer_membership
        assert membership is not None
        return membership.heartbeat(ConsumerHeartbeat(
            group, member, epoch, instance, None, rebalance_ms, topics, regex, assignor,
            None if owned is None else {t: frozenset(p) for t, p in owned.items()}, "client", "/127.0.0.1",
            principal))

    def join(self, member: str, topics: list[str] | None = None, **kw):
        return self.hb(member, 0, {}, topics=topics or ["t"], rebalance_ms=30_000, **kw)


def parts(result) -> set[int]:
    return set((result.assignment or {}).get(T, frozenset()))


def test_first_member_gets_every_partition_at_epoch_one() -> None:
    env = Env()
    r = env.join("m1")
    assert (r.error, r.member_id, r.member_epoch, r.heartbeat_interval_ms) == (0, "m1", 1, 5_000)
    assert parts(r) == {0, 1, 2, 3}
    group = env.shard.consumer_groups["g"]
    assert (group.group_epoch, group.assignment_epoch, group.state) == (1, 1, "Stable")


def test_partitions_move_only_after_the_old_owner_revoked_them() -> None:
    env = Env()
    env.join("m1")
    r2 = env.join("m2")
    # m2 is at the new epoch, but its target partitions are still m1's: it gets nothing yet.
    assert (r2.error, r2.member_epoch, parts(r2)) == (0, 2, set())
    group = env.shard.consumer_groups["g"]
    assert group.members["m2"].state is MemberState.UNRELEASED_PARTITIONS
    assert group.state == "Reconciling"
    target_m2 = set(group.target["m2"][T])
    assert len(target_m2) == 2 and len(group.target["m1"][T]) == 2

    # m1 still owns everything: it keeps its epoch and is told to give up m2's partitions.
    r1 = env.hb("m1", 1, {T: {0, 1, 2, 3}})
    assert (r1.member_epoch, parts(r1)) == (1, {0, 1, 2, 3} - target_m2)
    assert group.members["m1"].state is MemberState.UNREVOKED_PARTITIONS
    assert env.hb("m2", 2, {}).assignment is None  # still unreleased: nothing new for m2

    # m1 reports the revocation done: it moves to epoch 2, and m2 gets the partitions next time.
    r1 = env.hb("m1", 1, {T: {0, 1, 2, 3} - target_m2})
    assert (r1.member_epoch, parts(r1)) == (2, {0, 1, 2, 3} - target_m2)
    r2 = env.hb("m2", 2, {})
    assert (r2.member_epoch, parts(r2)) == (2, target_m2)
    assert group.state == "Stable"


def test_a_heartbeat_without_owned_partitions_keeps_the_revocation_pending() -> None:
    env = Env()
    env.join("m1")
    env.join("m2")
    env.hb("m1", 1, {T: {0, 1, 2, 3}})
    r = env.hb("m1", 1, None)  # no TopicPartitions: the coordinator cannot know it revoked
    assert r.member_epoch == 1
    assert env.shard.consumer_groups["g"].members["m1"].state is MemberState.UNREVOKED_PARTITIONS


def test_epoch_and_member_errors() -> None:
    env = Env()
    env.join("m1")
    assert env.hb("m1", 5, {}).error == 110                       # greater than the member's epoch
    assert env.hb("nobody", 1, {}).error == 25
    assert env.hb("m1", 0, {}, topics=["t"]).error == 42          # join without RebalanceTimeoutMs
    assert env.hb("m3", 0, {}, rebalance_ms=1).error == 42        # join without a subscription
    assert env.join("m3", assignor="sticky").error == 112
    assert env.hb("m1", 1, {}, group="other").error == 69          # no such group, not joining
    assert env.join("m4", regex="(").error == 128                   # INVALID_REGULAR_EXPRESSION
    assert set(env.shard.consumer_groups["g"].members) == {"m1"}     # refused joins left nothing behind


def test_a_lost_response_is_answered_again_at_the_previous_epoch() -> None:
    env = Env()
    env.join("m1")
    env.join("m2")
    env.hb("m1", 1, {T: {0, 1, 2, 3}})
    kept = set(env.shard.consumer_groups["g"].members["m1"].assigned[T])
    env.hb("m1", 1, {T: kept})                                     # now at epoch 2, response lost
    r = env.hb("m1", 1, {T: kept})                                 # previous epoch, subset of the assignment
    assert (r.error, r.member_epoch) == (0, 2)
    assert env.hb("m1", 1, {T: {0, 1, 2, 3}}).error == 110        # not a subset: fenced


def test_leaving_frees_the_partitions_and_bumps_the_epoch() -> None:
    env = Env()
    env.join("m1")
    env.join("m2")
    env.hb("m1", 1, {T: {0, 1, 2, 3}})
    r = env.hb("m1", -1)
    assert (r.error, r.member_epoch) == (0, -1)
    group = env.shard.consumer_groups["g"]
    assert group.group_epoch == 3 and set(group.members) == {"m2"}
    r2 = env.hb("m2", 2, {})
    assert (r2.member_epoch, parts(r2)) == (3, {0, 1, 2, 3})


def test_a_silent_member_is_fenced_after_the_session_timeout() -> None:
    env = Env()
    env.join("m1")
    env.join("m2")
    membership = env.shard.consumer_membership
    assert membership is not None
    env.clock.advance(SESSION_MS - 1)
    env.hb("m2", 2, {})
    assert membership.tick() == []
    env.clock.advance(1)
    assert membership.tick() == [("g", "m1")]
    assert set(env.shard.consumer_groups["g"].members) == {"m2"}
    assert parts(env.hb("m2", 2, {})) == {0, 1, 2, 3}


def test_a_member_that_does_not_revoke_in_its_rebalance_timeout_is_fenced() -> None:
    env = Env()
    env.join("m1")
    env.join("m2")
    env.hb("m1", 1, {T: {0, 1, 2, 3}})                             # UNREVOKED from now, 30 s to revoke
    membership = env.shard.consumer_membership
    assert membership is not None
    env.clock.advance(29_999)
    env.hb("m1", 1, {T: {0, 1, 2, 3}})
    env.hb("m2", 2, {})
    assert membership.tick() == []
    env.clock.advance(1)
    assert ("g", "m1") in membership.tick()


def test_range_assignor_on_request() -> None:
    env = Env()
    env.join("a", assignor="range")
    env.join("b", assignor="range")
    env.hb("a", 1, {T: {0, 1, 2, 3}})
    group = env.shard.consumer_groups["g"]
    # Range: members sorted by id get contiguous ranges.
    assert {m: set(a[T]) for m, a in group.target.items()} == {"a": {0, 1}, "b": {2, 3}}


def test_regex_subscription_follows_the_topics() -> None:
    env = Env()
    r = env.hb("m1", 0, {}, regex="t.*", rebalance_ms=30_000)
    assert parts(r) == {0, 1, 2, 3}
    other = uuid.UUID(int=22)
    env.topics.by_name["tx"] = TopicMetadata(other, "tx", 1)
    env.topics.by_name["other"] = TopicMetadata(uuid.UUID(int=23), "other", 1)
    r = env.hb("m1", 1, {T: {0, 1, 2, 3}})
    assert r.member_epoch == 2 and r.assignment is not None and set(r.assignment) == {T, other}


def abc_env() -> Env:
    """Topics a, b, c (two partitions each) and an authorizer: alice may describe a and c, bob only b."""
    env = Env()
    env.topics.by_name = {n: TopicMetadata(uuid.UUID(int=100 + i), n, 2) for i, n in enumerate("abc")}
    env.acls = Acls({("User:alice", "a"), ("User:alice", "c"), ("User:bob", "b")})
    env.shard = env.new_shard()
    return env


def topic_names(env: Env, assignment: dict[uuid.UUID, frozenset[int]] | None) -> set[str]:
    assert assignment is not None
    return {t.name for t in env.topics.by_name.values() if t.topic_id in assignment}


def test_regex_resolves_only_to_the_topics_the_principal_may_describe() -> None:
    # Kafka's TopicRegexResolver: the matched topics the requester may not DESCRIBE are left out.
    env = abc_env()
    r = env.hb("m1", 0, {}, regex="[abc]", rebalance_ms=30_000, principal="User:alice")
    assert topic_names(env, r.assignment) == {"a", "c"}
    assert env.shard.consumer_groups["g"].regex_matches == {"[abc]": frozenset({"a", "c"})}
    assert env.acls is not None and env.acls.asked_hosts == {"127.0.0.1"}   # the peer, as ACL hosts name it
    # Granted later: the next resolution adds it (Kafka: at its next refresh), with a new epoch.
    env.acls.allowed.add(("User:alice", "b"))
    r = env.hb("m1", r.member_epoch, {t: frozenset(p) for t, p in (r.assignment or {}).items()})
    assert r.member_epoch == 2 and topic_names(env, r.assignment) == {"a", "b", "c"}


def test_a_denied_topic_is_assigned_to_no_member() -> None:
    env = abc_env()
    env.hb("m1", 0, {}, regex="[abc]", rebalance_ms=30_000, principal="User:alice")
    env.hb("m2", 0, {}, regex="[abc]", rebalance_ms=30_000, principal="User:alice")
    group = env.shard.consumer_groups["g"]
    b = env.topics.by_name["b"].topic_id
    assert group.target and all(b not in a for a in group.target.values())


def test_a_regex_already_in_the_group_keeps_the_context_that_resolved_it() -> None:
    # Kafka refreshes when a member brings a regex new to the group, in that member's context; a member
    # joining with the same regex triggers no refresh, so bob's rights change nothing.
    env = abc_env()
    env.hb("m1", 0, {}, regex="[abc]", rebalance_ms=30_000, principal="User:alice")
    r = env.hb("m2", 0, {}, regex="[abc]", rebalance_ms=30_000, principal="User:bob")
    assert env.shard.consumer_groups["g"].regex_matches == {"[abc]": frozenset({"a", "c"})}
    assert r.assignment is not None and "b" not in topic_names(env, r.assignment)


def test_a_new_regex_resolves_every_regex_of_the_group_in_its_members_context() -> None:
    # Kafka resolves all the group's regexes at once with the triggering request's context.
    env = abc_env()
    env.hb("m1", 0, {}, regex="[abc]", rebalance_ms=30_000, principal="User:alice")
    env.hb("m2", 0, {}, regex="b|c", rebalance_ms=30_000, principal="User:bob")
    assert env.shard.consumer_groups["g"].regex_matches == {"[abc]": frozenset({"b"}), "b|c": frozenset({"b"})}


def test_after_a_load_the_first_heartbeat_resolves_in_its_members_context() -> None:
    env = abc_env()
    r = env.hb("m1", 0, {}, regex="[abc]", rebalance_ms=30_000, principal="User:alice")
    env.shard = env.new_shard()
    group = env.shard.consumer_groups["g"]
    assert group.regex_matches == {"[abc]": frozenset()}   # nobody to authorize yet: nothing
    r = env.hb("m1", r.member_epoch, {t: frozenset(p) for t, p in (r.assignment or {}).items()},
               principal="User:alice")
    assert group.regex_matches == {"[abc]": frozenset({"a", "c"})}
    assert r.member_epoch == 1   # the same topics as before the load: no rebalance


def test_records_rebuild_the_group_on_a_new_coordinator() -> None:
    env = Env()
    env.join("m1")
    env.join("m2")
    env.hb("m1", 1, {T: {0, 1, 2, 3}})
    before = env.shard.consumer_groups["g"]
    reloaded = env.new_shard().consumer_groups["g"]
    assert (reloaded.group_epoch, reloaded.assignment_epoch) == (before.group_epoch, before.assignment_epoch) == (2, 2)
    assert reloaded.target == before.target
    for member_id in ("m1", "m2"):
        a, b = reloaded.members[member_id], before.members[member_id]
        assert (a.member_epoch, a.state, a.assigned, a.pending_revocation, a.subscribed_topic_names,
                a.rebalance_timeout_ms) == (b.member_epoch, b.state, b.assigned, b.pending_revocation,
                                            b.subscribed_topic_names, b.rebalance_timeout_ms)
    # The new coordinator sees the same topics the epoch was computed for: no new epoch, no rebalance.
    env.shard = env.new_shard()
    assert env.hb("m2", 2, {}).member_epoch == 2
    env.hb("m1", -1)
    env.hb("m2", -1)
    assert env.new_shard().consumer_groups["g"].members == {}


def test_topics_changed_while_unloaded_move_the_epoch_on_the_new_coordinator() -> None:
    env = Env()
    env.join("m1")
    env.topics.by_name["t"] = TopicMetadata(T, "t", 6)
    env.shard = env.new_shard()
    r = env.hb("m1", 1, {T: {0, 1, 2, 3}})
    assert (r.member_epoch, parts(r)) == (2, set(range(6)))


def test_a_failed_write_changes_nothing() -> None:
    env = Env()
    env.join("m1")
    env.log.fail_with = NotEnoughReplicasError("no")
    end = env.log.end
    r = env.join("m2")
    assert r.error == 19
    group = env.shard.consumer_groups["g"]
    assert (set(group.members), group.group_epoch, env.log.end) == ({"m1"}, 1, end)
    assert env.join("m1", group="new").error == 19
    assert "new" not in env.shard.consumer_groups


def test_an_empty_classic_group_becomes_a_consumer_group_and_a_busy_one_does_not() -> None:
    env = Env()
    env.shard.get_or_create("classic")
    assert env.join("m1", group="classic").error == 0
    assert "classic" not in env.shard.groups and "classic" in env.shard.consumer_groups
    # A classic JoinGroup on a consumer group with members is refused.
    assert env.join("m1", group="classic2").error == 0
    with pytest.raises(GroupIdNotFoundError):
        env.shard.get_or_create("classic2")
    # Once empty, a classic JoinGroup may take the id: the consumer group's records are tombstoned.
    env.hb("m1", -1, group="classic2")
    env.shard.get_or_create("classic2")
    assert "classic2" not in env.shard.consumer_groups and "classic2" not in env.new_shard().consumer_groups


def _commit(env: Env, member: str, epoch: int, version: int = 9, offset: int = 5) -> int:
    req = CommitRequest("g", epoch, member, None, {("t", 0): OffsetValue(offset, -1, "")}, version)
    return commit(env.shard, req)[("t", 0)]


def test_offset_commits_check_the_member_epoch() -> None:
    env = Env()
    env.join("m1")
    env.join("m2")
    assert _commit(env, "m1", 1) == 0
    assert _commit(env, "m2", 1) == 113                            # older than m2's epoch 2
    assert _commit(env, "m2", 3) == 110                            # newer than it
    assert _commit(env, "ghost", 2) == 25
    assert _commit(env, "m2", 2, version=8) == 35                  # members of the new protocol use v9+
    assert _commit(env, "", -1) == 25                              # the group has members
    env.hb("m1", -1)
    env.hb("m2", -1)
    assert _commit(env, "", -1, offset=7) == 0                     # empty group: admin commits are fine
    assert env.shard.offsets.get("g", ("t", 0)).offset == 7


def test_deleting_a_consumer_group_needs_it_empty_and_takes_its_offsets() -> None:
    from kafka_txn_broker.group.deletion import delete_consumer_group, delete_offsets

    env = Env()
    env.join("m1")
    assert _commit(env, "m1", 1) == 0
    assert delete_consumer_group(env.shard, "g") == 68                      # NON_EMPTY_GROUP
    assert delete_offsets(env.shard, "g", [("t", 0)]) == (0, {("t", 0): 86})  # GROUP_SUBSCRIBED_TO_TOPIC
    env.hb("m1", -1)
    assert delete_consumer_group(env.shard, "g") == 0
    assert "g" not in env.shard.consumer_groups and env.shard.offsets.get("g", ("t", 0)) is None
    reloaded = env.new_shard()
    assert "g" not in reloaded.consumer_groups and reloaded.offsets.get("g", ("t", 0)) is None


# ---- static members (group.instance.id) ----------------------------------------------------------------
# Kafka's GroupMetadataManager: a static member leaving with epoch -2 stays in the group at epoch -2 with its
# assignment (consumerGroupStaticMemberGroupLeave writes only its current assignment record); a join with the
# same instance id and a new member id replaces it and takes its assignment (replaceMember); its session
# timer is not touched by the leave, so without a replacement it expires session.timeout.ms after the last
# heartbeat and fences the member. Error codes: UNRELEASED_INSTANCE_ID 111, FENCED_INSTANCE_ID 82,
# GROUP_MAX_SIZE_REACHED 81, NOT_ENOUGH_REPLICAS 19.


def _stable_pair(env: Env) -> set[int]:
    """Static member "a" (instance "i-a") and dynamic "b", reconciled at group epoch 2; returns a's partitions."""
    env.join("a", instance="i-a")
    env.join("b")
    env.hb("a", 1, {T: {0, 1, 2, 3}}, instance="i-a")
    kept = set(env.shard.consumer_groups["g"].members["a"].assigned[T])
    assert env.hb("a", 1, {T: kept}, instance="i-a").member_epoch == 2
    r = env.hb("b", 2, {})
    assert (r.member_epoch, parts(r)) == (2, {0, 1, 2, 3} - kept)
    return kept


def test_a_static_member_leaving_with_minus_two_keeps_its_assignment_and_the_group_epoch() -> None:
    env = Env()
    kept = _stable_pair(env)
    group = env.shard.consumer_groups["g"]
    target_a = dict(group.target["a"])
    r = env.hb("a", -2, instance="i-a")
    assert (r.error, r.member_id, r.member_epoch) == (0, "a", -2)
    assert (group.group_epoch, group.assignment_epoch, set(group.members)) == (2, 2, {"a", "b"})
    a = group.members["a"]
    assert (a.member_epoch, set(a.assigned[T]), a.pending_revocation) == (-2, kept, {})
    assert group.target["a"] == target_a
    r = env.hb("b", 2, {T: {0, 1, 2, 3} - kept})                  # nothing moves for the other member
    assert (r.error, r.member_epoch, r.assignment) == (0, 2, None)
    # The leave was written: a new coordinator has "a" at epoch -2, still holding its partitions.
    reloaded = env.new_shard().consumer_groups["g"]
    left = reloaded.members["a"]
    assert (reloaded.group_epoch, left.member_epoch, left.instance_id, set(left.assigned[T])) == (2, -2, "i-a", kept)


def test_a_member_with_the_same_instance_id_takes_the_assignment_over_without_a_new_epoch() -> None:
    env = Env()
    kept = _stable_pair(env)
    group = env.shard.consumer_groups["g"]
    target_a = dict(group.target["a"])
    env.hb("a", -2, instance="i-a")
    r = env.join("a2", instance="i-a")
    assert (r.error, r.member_id, r.member_epoch, parts(r)) == (0, "a2", 2, kept)
    assert (group.group_epoch, group.assignment_epoch, set(group.members)) == (2, 2, {"a2", "b"})
    assert group.target == {"a2": target_a, "b": group.target["b"]} and group.state == "Stable"
    assert env.hb("b", 2, {T: {0, 1, 2, 3} - kept}).assignment is None  # b is not rebalanced
    assert env.hb("a", 2, {T: kept}, instance="i-a").error == 82    # the old id is fenced by the new one
    # Written: the old member's records are tombstoned, the new one's replace them, no new group epoch.
    reloaded = env.new_shard().consumer_groups["g"]
    assert (reloaded.group_epoch, set(reloaded.members)) == (2, {"a2", "b"})
    a2 = reloaded.members["a2"]
    assert (a2.member_epoch, a2.instance_id, set(a2.assigned[T]), reloaded.target["a2"]) == (2, "i-a", kept, target_a)
    # The replaced member's session timer is gone with it: only the live members can time out.
    membership = env.shard.consumer_membership
    assert membership is not None
    env.clock.advance(SESSION_MS)
    assert sorted(membership.tick()) == [("g", "a2"), ("g", "b")]


def test_a_replacement_with_another_subscription_moves_the_group_epoch() -> None:
    env = Env()
    env.topics.by_name["u"] = TopicMetadata(uuid.UUID(int=22), "u", 2)
    _stable_pair(env)
    env.hb("a", -2, instance="i-a")
    r = env.join("a2", ["t", "u"], instance="i-a")
    assert (r.error, r.member_epoch) == (0, 3)
    assert env.shard.consumer_groups["g"].group_epoch == 3


def test_a_left_static_member_is_removed_when_its_session_times_out() -> None:
    env = Env()
    kept = _stable_pair(env)
    membership = env.shard.consumer_membership
    assert membership is not None
    env.clock.advance(1_000)
    env.hb("a", -2, instance="i-a")                                # 1 s after its last heartbeat
    env.clock.advance(SESSION_MS - 1_001)
    env.hb("b", 2, {T: {0, 1, 2, 3} - kept})
    assert membership.tick() == []
    env.clock.advance(1)
    assert membership.tick() == [("g", "a")]
    group = env.shard.consumer_groups["g"]
    assert (group.group_epoch, set(group.members)) == (3, {"b"})
    r = env.hb("b", 2, {T: {0, 1, 2, 3} - kept})
    assert (r.member_epoch, parts(r)) == (3, {0, 1, 2, 3})
    # Too late: the instance id joins as a new member, and the epoch moves again.
    assert env.join("a2", instance="i-a").member_epoch == 4


def test_an_instance_id_still_held_by_a_live_member_is_unreleased() -> None:
    env = Env()
    env.join("a", instance="i-a")
    end = env.log.end
    assert env.join("a2", instance="i-a").error == 111
    assert env.hb("a2", 1, {}, instance="i-a").error == 82           # a heartbeat under another id: fenced
    assert env.hb("a2", -2, instance="i-a").error == 82              # so is a leave
    assert env.hb("a", -2, instance="other").error == 25             # an instance id nobody holds
    assert env.hb("a", -2).error == 42                               # -2 needs the instance id
    group = env.shard.consumer_groups["g"]
    assert (set(group.members), group.group_epoch, env.log.end) == ({"a"}, 1, end)
    # A static member leaving with -1 is removed at once, releasing the id.
    env.hb("a", -1, instance="i-a")
    assert (env.join("a2", instance="i-a").error, group.group_epoch) == (0, 3)


def test_a_failed_write_of_a_static_leave_changes_nothing() -> None:
    env = Env()
    _stable_pair(env)
    env.log.fail_with = NotEnoughReplicasError("no")
    assert env.hb("a", -2, instance="i-a").error == 19
    assert env.shard.consumer_groups["g"].members["a"].member_epoch == 2
    env.log.fail_with = None
    env.hb("a", -2, instance="i-a")
    env.log.fail_with = NotEnoughReplicasError("no")
    assert env.join("a2", instance="i-a").error == 19
    group = env.shard.consumer_groups["g"]
    assert (set(group.members), group.members["a"].member_epoch, set(group.target)) == ({"a", "b"}, -2, {"a", "b"})


def test_a_full_group_refuses_new_members_but_not_a_static_replacement() -> None:
    env = Env(**{"group.consumer.max.size": 2})
    kept = _stable_pair(env)
    assert env.join("c").error == 81
    assert env.join("c", instance="i-c").error == 81
    assert env.join("a2", instance="i-a").error == 111               # a's instance: not new, but not released
    env.hb("a", -2, instance="i-a")
    assert env.join("c").error == 81                                 # the left static member still counts
    r = env.join("a2", instance="i-a")
    assert (r.error, r.member_epoch, parts(r)) == (0, 2, kept)
    assert env.hb("b", 2, {T: {0, 1, 2, 3} - kept}).error == 0        # members heartbeat as usual
    group = env.shard.consumer_groups["g"]
    assert (set(group.members), group.group_epoch) == ({"a2", "b"}, 2)
    env.hb("b", -1)
    assert env.join("c").error == 0                                  # room again


def test_group_consumer_max_size_is_at_least_one_and_unbounded_by_default() -> None:
    from kafka_txn_broker.configs.broker_config import ConfigError

    assert BrokerConfig({})["group.consumer.max.size"] == 2**31 - 1
    assert BrokerConfig({"group.consumer.max.size": "1"})["group.consumer.max.size"] == 1
    with pytest.raises(ConfigError, match=r"group\.consumer\.max\.size=0 must be at least 1"):
        BrokerConfig({"group.consumer.max.size": 0})
