"""The classic group state machine, driven directly with a manual clock (no sockets, no sleeping)."""

from __future__ import annotations

from kafka_txn_broker.clock import ManualClock
from kafka_txn_broker.formats.errors import NotEnoughReplicasError
from kafka_txn_broker.group.classic_group import GroupState
from tests.broker.group.fakes import FakeLog, join, join_new_member, join_req, make_shard, sync

MEMBER_ID_REQUIRED = 79
UNKNOWN_MEMBER_ID = 25
ILLEGAL_GENERATION = 22
REBALANCE_IN_PROGRESS = 27
INVALID_SESSION_TIMEOUT = 26
INCONSISTENT_GROUP_PROTOCOL = 23
INVALID_GROUP_ID = 24
FENCED_INSTANCE_ID = 82
COORDINATOR_NOT_AVAILABLE = 15
NOT_COORDINATOR = 16


def _stable_group_of_one(shard, group="g"):
    member, answers = join_new_member(shard, group)
    gen = answers.last_join.generation
    assert sync(shard, member, gen, {member: b"all"}, group).last_sync.error == 0
    return member, gen


def test_new_member_gets_member_id_required_then_joins_as_leader() -> None:
    shard = make_shard()
    first = join(shard, join_req(client_id="app"))
    assert first.last_join.error == MEMBER_ID_REQUIRED
    assert first.last_join.member_id.startswith("app-")
    assert shard.groups["g"].pending_members
    second = join(shard, join_req(member_id=first.last_join.member_id))
    r = second.last_join
    assert (r.error, r.generation, r.leader, r.member_id) == (0, 1, r.member_id, first.last_join.member_id)
    assert r.protocol_name == "range" and r.protocol_type == "consumer"
    assert [m.metadata for m in r.members] == [b"range-meta"]
    assert shard.groups["g"].state is GroupState.COMPLETING_REBALANCE


def test_join_v3_and_older_get_a_member_id_at_once() -> None:
    shard = make_shard()
    a = join(shard, join_req(require_known=False))
    assert a.last_join.error == 0 and a.last_join.generation == 1


def test_join_validation_errors() -> None:
    shard = make_shard()
    assert join(shard, join_req(group="")).last_join.error == INVALID_GROUP_ID
    assert join(shard, join_req(session=10)).last_join.error == INVALID_SESSION_TIMEOUT
    assert join(shard, join_req(session=1_800_001)).last_join.error == INVALID_SESSION_TIMEOUT
    assert join(shard, join_req(member_id="ghost")).last_join.error == UNKNOWN_MEMBER_ID
    assert join(shard, join_req(protocols=[])).last_join.error == INCONSISTENT_GROUP_PROTOCOL
    _stable_group_of_one(shard)
    other = join(shard, join_req(protocol_type="connect"))
    assert other.last_join.error == INCONSISTENT_GROUP_PROTOCOL
    disjoint = join(shard, join_req(protocols=[("sticky", b"")]))
    assert disjoint.last_join.error == INCONSISTENT_GROUP_PROTOCOL


def test_second_member_triggers_rebalance_and_both_get_assignments() -> None:
    shard = make_shard()
    a, gen1 = _stable_group_of_one(shard)
    b, b_join = join_new_member(shard)
    group = shard.groups["g"]
    assert group.state is GroupState.PREPARING_REBALANCE and not b_join.joins
    assert shard.membership.heartbeat("g", a, None, gen1) == REBALANCE_IN_PROGRESS
    assert sync(shard, a, gen1).last_sync.error == REBALANCE_IN_PROGRESS
    a_join = join(shard, join_req(member_id=a))
    gen2 = a_join.last_join.generation
    assert gen2 == gen1 + 1 and b_join.last_join.generation == gen2
    assert {m.member_id for m in a_join.last_join.members} == {a, b}
    assert b_join.last_join.members == () and b_join.last_join.leader == a
    follower = sync(shard, b, gen2)
    assert not follower.syncs  # parked until the leader's assignment arrives
    leader = sync(shard, a, gen2, {a: b"p0", b: b"p1"})
    assert leader.last_sync.assignment == b"p0" and follower.last_sync.assignment == b"p1"
    assert group.state is GroupState.STABLE
    assert shard.membership.heartbeat("g", b, None, gen2) == 0


def test_heartbeat_errors() -> None:
    shard = make_shard()
    assert shard.membership.heartbeat("nope", "m", None, 1) == UNKNOWN_MEMBER_ID
    a, gen = _stable_group_of_one(shard)
    assert shard.membership.heartbeat("g", "stranger", None, gen) == UNKNOWN_MEMBER_ID
    assert shard.membership.heartbeat("g", a, None, gen + 5) == ILLEGAL_GENERATION
    assert shard.membership.heartbeat("g", a, None, gen) == 0


def test_sync_errors() -> None:
    shard = make_shard()
    assert sync(shard, "m", 1).last_sync.error == UNKNOWN_MEMBER_ID
    a, gen = _stable_group_of_one(shard)
    assert sync(shard, a, gen + 1).last_sync.error == ILLEGAL_GENERATION
    assert sync(shard, "stranger", gen).last_sync.error == UNKNOWN_MEMBER_ID
    again = sync(shard, a, gen)
    assert again.last_sync.error == 0 and again.last_sync.assignment == b"all"


def test_session_timeout_removes_member_and_rebalances() -> None:
    clock = ManualClock()
    shard = make_shard(clock)
    a, gen1 = _stable_group_of_one(shard)
    b, b_join = join_new_member(shard, session=6000)
    a_join = join(shard, join_req(member_id=a))
    gen2 = a_join.last_join.generation
    sync(shard, b, gen2)
    sync(shard, a, gen2, {a: b"x", b: b"y"})
    for _ in range(3):  # a keeps heartbeating, b goes silent
        clock.advance(2500)
        assert shard.membership.heartbeat("g", a, None, gen2) == 0
        shard.membership.tick(clock.millis())
    group = shard.groups["g"]
    assert b not in group.members
    assert group.state is GroupState.PREPARING_REBALANCE
    assert shard.membership.heartbeat("g", a, None, gen2) == REBALANCE_IN_PROGRESS
    assert join(shard, join_req(member_id=a)).last_join.generation == gen2 + 1


def test_member_that_does_not_rejoin_is_dropped_at_the_rebalance_timeout() -> None:
    clock = ManualClock()
    shard = make_shard(clock)
    a, gen1 = _stable_group_of_one(shard)
    b, b_join = join_new_member(shard, rebalance=5000)
    # a heartbeats (and learns about the rebalance) but never sends JoinGroup
    clock.advance(4000)
    assert shard.membership.heartbeat("g", a, None, gen1) == REBALANCE_IN_PROGRESS
    shard.membership.tick(clock.millis())
    assert not b_join.joins
    clock.advance(26_001)  # a's rebalance timeout is 30 s
    shard.membership.tick(clock.millis())
    r = b_join.last_join
    assert r.error == 0 and r.leader == b and [m.member_id for m in r.members] == [b]
    assert a not in shard.groups["g"].members


def test_pending_member_id_holds_the_rebalance_until_it_expires() -> None:
    clock = ManualClock()
    shard = make_shard(clock)
    a, gen1 = _stable_group_of_one(shard)
    required = join(shard, join_req(session=6000))  # got an id, never comes back
    assert required.last_join.error == MEMBER_ID_REQUIRED
    a_join = join(shard, join_req(member_id=a))
    assert not a_join.joins  # still waiting: the pending id could join any moment
    clock.advance(6000)
    shard.membership.tick(clock.millis())
    assert a_join.last_join.generation == gen1 + 1


def test_initial_rebalance_delay_collects_members_into_one_generation() -> None:
    clock = ManualClock()
    shard = make_shard(clock, **{"group.initial.rebalance.delay.ms": 3000})
    a, a_join = join_new_member(shard)
    clock.advance(2000)
    shard.membership.tick(clock.millis())
    b, b_join = join_new_member(shard)
    assert not a_join.joins and not b_join.joins
    clock.advance(1000)
    shard.membership.tick(clock.millis())  # delay expired but a member arrived: wait one more delay
    assert not a_join.joins
    clock.advance(3000)
    shard.membership.tick(clock.millis())
    assert a_join.last_join.generation == b_join.last_join.generation == 1
    assert len(a_join.last_join.members) == 2


def test_leave_group_batch_and_leader_handover() -> None:
    shard = make_shard()
    a, _ = _stable_group_of_one(shard)
    b, b_join = join_new_member(shard)
    join(shard, join_req(member_id=a))
    gen = b_join.last_join.generation
    sync(shard, b, gen)
    sync(shard, a, gen, {a: b"x", b: b"y"})
    top, codes = shard.membership.leave("g", [(a, None), ("ghost", None)])
    assert (top, codes) == (0, [0, UNKNOWN_MEMBER_ID])
    group = shard.groups["g"]
    assert group.leader_id == b and group.state is GroupState.PREPARING_REBALANCE
    assert join(shard, join_req(member_id=b)).last_join.generation == gen + 1
    top, codes = shard.membership.leave("g", [(b, None)])
    assert codes == [0]
    assert group.state is GroupState.EMPTY and not group.members
    assert shard.membership.leave("missing", [("x", None)]) == (0, [UNKNOWN_MEMBER_ID])


def test_last_member_leaving_empties_the_group_and_stores_it() -> None:
    log = FakeLog()
    shard = make_shard(log=log)
    a, gen = _stable_group_of_one(shard)
    stored = len(log.batches)
    assert shard.membership.leave("g", [(a, None)]) == (0, [0])
    group = shard.groups["g"]
    assert group.state is GroupState.EMPTY and group.generation == gen + 1
    assert len(log.batches) == stored + 1


def test_leader_that_never_syncs_is_removed_after_the_rebalance_timeout() -> None:
    clock = ManualClock()
    shard = make_shard(clock)
    a, _ = _stable_group_of_one(shard)
    b, b_join = join_new_member(shard, rebalance=10_000)
    join(shard, join_req(member_id=a, rebalance=10_000))
    gen = b_join.last_join.generation
    follower = sync(shard, b, gen)
    clock.advance(10_000)
    shard.membership.tick(clock.millis())
    assert a not in shard.groups["g"].members
    assert follower.last_sync.error == REBALANCE_IN_PROGRESS


def test_protocol_chosen_by_votes() -> None:
    shard = make_shard()
    a, _ = _stable_group_of_one(shard)
    rr_first = [("roundrobin", b"rr"), ("range", b"r")]
    b, b_join = join_new_member(shard, protocols=rr_first)
    c, c_join = join_new_member(shard, protocols=rr_first)
    join(shard, join_req(member_id=a))
    assert b_join.last_join.protocol_name == "roundrobin"


def test_static_member_rejoining_fences_its_old_incarnation() -> None:
    shard = make_shard()
    first = join(shard, join_req(instance="pod-1"))
    old = first.last_join.member_id
    assert first.last_join.error == 0 and old.startswith("pod-1-")
    gen = first.last_join.generation
    sync(shard, old, gen, {old: b"a"}, instance="pod-1")
    again = join(shard, join_req(instance="pod-1"))
    new = again.last_join.member_id
    assert new != old and again.last_join.error == 0
    assert shard.membership.heartbeat("g", old, "pod-1", again.last_join.generation) == FENCED_INSTANCE_ID
    assert shard.membership.leave("g", [(old, "pod-1")]) == (0, [FENCED_INSTANCE_ID])
    assert shard.membership.leave("g", [("", "pod-1")]) == (0, [0])


def test_failed_assignment_write_answers_waiters_and_rebalances() -> None:
    log = FakeLog()
    shard = make_shard(log=log)
    a, a_join = join_new_member(shard)
    log.fail_with = NotEnoughReplicasError("isr too small")
    r = sync(shard, a, a_join.last_join.generation, {a: b"x"})
    assert r.last_sync.error == COORDINATOR_NOT_AVAILABLE
    assert shard.groups["g"].state is GroupState.PREPARING_REBALANCE


def test_unload_answers_parked_requests_with_not_coordinator() -> None:
    shard = make_shard()
    a, _ = _stable_group_of_one(shard)
    b, b_join = join_new_member(shard)
    shard.unload()
    assert b_join.last_join.error == NOT_COORDINATOR
    assert not shard.groups
