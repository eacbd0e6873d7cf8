"""The controller's partition change rules (server/partition_change.py) on plain data, each expected value
taken from Kafka's PartitionChangeBuilder and PartitionReassignmentReplicas behaviour."""

from __future__ import annotations

from collections.abc import Callable

from kafka_txn_broker.server.partition_change import NO_LEADER, Assignment, Election, build, reassignment_target


def alive(*nodes: int) -> Callable[[int], bool]:
    return set(nodes).__contains__


def test_no_change_is_none() -> None:
    part = Assignment.of([1, 2, 3], [1, 2, 3], 1)
    assert build(part, alive(1, 2, 3)) is None
    assert build(part, alive(1, 2, 3), election=Election.PREFERRED) is None


def test_preferred_election() -> None:
    part = Assignment.of([1, 2, 3], [1, 2, 3], 2)
    change = build(part, alive(1, 2, 3), election=Election.PREFERRED)
    assert change is not None and (change.assignment.leader, change.bump_epoch) == (1, True)
    # The preferred replica down or out of sync: the leader stays (no change).
    assert build(part, alive(2, 3), election=Election.PREFERRED) is None
    assert build(Assignment.of([1, 2, 3], [2, 3], 2), alive(1, 2, 3), election=Election.PREFERRED) is None
    # No leader at all: the next live in-sync replica, in replica order.
    change = build(Assignment.of([1, 2, 3], [1, 3], NO_LEADER), alive(2, 3), election=Election.PREFERRED)
    assert change is not None and change.assignment.leader == 3


def test_unclean_election() -> None:
    offline = Assignment.of([1, 2], [1], NO_LEADER)
    assert build(offline, alive(2)) is None  # ONLINE: nobody in sync is up
    change = build(offline, alive(2), election=Election.UNCLEAN)
    assert change is not None and change.unclean
    assert (change.assignment.leader, change.assignment.isr) == (2, (2,))
    assert build(offline, alive(), election=Election.UNCLEAN) is None
    # An in-sync replica up is preferred over an out-of-sync one: a clean election.
    change = build(Assignment.of([2, 1], [1], NO_LEADER), alive(1, 2), election=Election.UNCLEAN)
    assert change is not None and (change.assignment.leader, change.unclean) == (1, False)


def test_reassignment_lists() -> None:
    t = reassignment_target([1, 2, 3], [4, 2, 5])
    assert (t.replicas, t.adding, t.removing) == ((4, 2, 5, 1, 3), (4, 5), (1, 3))
    assert reassignment_target([1, 2], [2, 1]).reassigning is False


def test_reassignment_adds_then_completes_when_in_sync() -> None:
    part = Assignment.of([1, 2], [1, 2], 1)
    t = reassignment_target(part.replicas, [3, 2])
    started = build(part, alive(1, 2, 3), replicas=t.replicas, adding=t.adding, removing=t.removing)
    assert started is not None and not started.bump_epoch  # nobody left yet
    assert (started.assignment.replicas, started.assignment.isr, started.assignment.leader) == ((3, 2, 1), (1, 2), 1)
    # Node 3 joins the ISR: the reassignment completes, node 1 (the leader) leaves, node 3 leads.
    done = build(started.assignment, alive(1, 2, 3), isr=(1, 2, 3))
    assert done is not None and done.bump_epoch
    assert done.assignment == Assignment.of([3, 2], [2, 3], 3)


def test_reordering_completes_at_once_and_keeps_the_leader() -> None:
    part = Assignment.of([1, 2, 3], [1, 2, 3], 1)
    t = reassignment_target(part.replicas, [3, 2, 1])
    change = build(part, alive(1, 2, 3), replicas=t.replicas, adding=t.adding, removing=t.removing)
    assert change is not None and not change.bump_epoch
    assert change.assignment == Assignment.of([3, 2, 1], [1, 2, 3], 1)


def test_removing_only_completes_at_once_with_an_epoch_bump() -> None:
    part = Assignment.of([1, 2, 3], [1, 2, 3], 2)
    t = reassignment_target(part.replicas, [2, 3])
    change = build(part, alive(1, 2, 3), replicas=t.replicas, adding=t.adding, removing=t.removing)
    assert change is not None and change.bump_epoch and change.assignment == Assignment.of([2, 3], [2, 3], 2)
