"""move-coordinator: move a transactional id's coordinator, i.e. the leadership of its `__transaction_state`
partition, to another in-sync replica - checked first, like every write.

Why it helps: a transaction coordinator that got INVALID_PRODUCER_EPOCH or TRANSACTION_COORDINATOR_FENCED
for a marker gives that marker up for good (Kafka's TransactionMarkerRequestCompletionHandler), and one that
cannot append to its log never completes; the transaction then sits in PrepareCommit / PrepareAbort. The
broker that becomes the partition's leader loads every transaction of the partition from the log and sends
the markers of each Prepare state again (TransactionCoordinator.onElection), which completes it - unless
the leaders still reject the markers (KAFKA-19999 before its fix: then only an upgrade helps).

How: ElectLeaders(PREFERRED) moves leadership to the partition's first replica. When the first replica is
the coordinator itself (the usual case: leaders sit on their preferred replica), the replicas are first
reordered, same set, with AlterPartitionReassignments, so the target comes first; the reordering stays (an
automatic preferred-leader rebalance would otherwise move the coordinator back).

Refused, with nothing written: an id its coordinator does not know (every id of the partition would move
for nothing), a partition without a leader, no other in-sync replica (a replica out of sync lacks records of
the log: `restart` is the way then), a target that is not an in-sync replica or already the leader, and a
cluster without the APIs. The caller confirms (`MovePlan.steps`) before `execute`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from kafka_txn_broker.formats.partitioning import TXN_TOPIC, partition_for
from kafka_txn_tools.admin.api import ClusterApi
from kafka_txn_tools.connection.capabilities import require
from kafka_txn_tools.errors import BrokerError, NothingToDo, Refused, UsageError
from kafka_txn_tools.models import (
    PREPARE_STATES,
    PartitionInfo,
    PartitionOffsets,
    TopicPartition,
    TransactionDescription,
)


class LeadershipApi(ClusterApi, Protocol):
    def elect_preferred_leader(self, tp: TopicPartition) -> tuple[str | None, str | None]: ...

    def reorder_replicas(self, tp: TopicPartition, replicas: Sequence[int]) -> tuple[str | None, str | None]: ...


@dataclass
class MovePlan:
    """What `execute` will write, as checked against live state."""

    transactional_id: str
    partition: TopicPartition  # __transaction_state-N
    leader: int  # the coordinator now
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader_epoch: int
    target: int
    reorder: tuple[int, ...] | None  # the replicas' new order when the target is not the first one yet
    description: TransactionDescription
    before: PartitionOffsets

    def steps(self) -> list[str]:
        """The writes, one line each, for the confirmation and --dry-run."""
        out = []
        if self.reorder is not None:
            out.append(f"reorder the replicas of {self.partition} from {_ids(self.replicas)} to {_ids(self.reorder)} "
                       f"(AlterPartitionReassignments; broker {self.target} becomes its preferred leader)")
        out.append(f"elect broker {self.target} leader of {self.partition} (ElectLeaders PREFERRED): the coordinator "
                   f"of {self.transactional_id!r} and of every transactional id in that partition moves from broker "
                   f"{self.leader} to broker {self.target}")
        return out


@dataclass
class MoveOutcome:
    plan: MovePlan
    leader_after: int
    state_after: str | None  # the transaction's state at its new coordinator (None: it did not answer in time)
    after: PartitionOffsets
    notes: list[str] = field(default_factory=list)


def _ids(replicas: Sequence[int]) -> str:
    return "[" + ", ".join(map(str, replicas)) + "]"


def plan_move(client: LeadershipApi, transactional_id: str, to_broker: int | None = None) -> MovePlan:
    """Check everything against live state and decide the writes; writes nothing."""
    require(client, "move-coordinator", "DescribeTransactions", "ElectLeaders")
    if not transactional_id:
        raise UsageError("--transactional-id is empty", "name the transactional id whose coordinator to move")
    info = _txn_partition(client, transactional_id)
    d = _described(client, transactional_id)
    tp, leader = info.partition, info.leader
    if leader < 0:
        raise Refused(f"{tp} has no leader: there is no coordinator to move",
                      f"bring one of its replicas ({_ids(info.replicas)}) back; the controller elects it")
    target = _target(info, to_broker)
    reorder = None if info.replicas[0] == target else (target, *(r for r in info.replicas if r != target))
    if reorder is not None:
        require(client, "move-coordinator", "AlterPartitionReassignments")
    before = client.partition_offsets({tp: leader})[tp]
    return MovePlan(transactional_id, tp, leader, info.replicas, info.isr, info.leader_epoch, target, reorder, d,
                    before)


def _txn_partition(client: ClusterApi, transactional_id: str) -> PartitionInfo:
    cluster = client.metadata([TXN_TOPIC])
    infos = sorted((i for i in cluster.partitions if i.partition.topic == TXN_TOPIC), key=lambda i: i.partition)
    if not infos:
        error = dict(cluster.topic_errors).get(TXN_TOPIC, "UNKNOWN_TOPIC_OR_PARTITION")
        raise BrokerError(f"{TXN_TOPIC} cannot be read ({error}): its partitions' leaders are the transaction "
                          "coordinators", error, f"grant DESCRIBE on the topic {TXN_TOPIC} to this principal")
    return infos[partition_for(transactional_id, len(infos))]


def _described(client: ClusterApi, transactional_id: str) -> TransactionDescription:
    described = client.describe_transactions([transactional_id])
    d = described.descriptions.get(transactional_id)
    if d is not None:
        return d
    if transactional_id in described.not_found:
        raise Refused(f"transactional id {transactional_id!r} is not known to its coordinator: moving its "
                      "coordinator would move every other id of its partition for nothing",
                      "check the id with `kafka-txn describe` or `kafka-txn list`")
    errors = described.errors
    raise BrokerError(f"cannot describe {transactional_id!r} before moving its coordinator: "
                      f"{errors[0].message if errors else 'no answer from its coordinator'}",
                      errors[0].error if errors else "COORDINATOR_NOT_AVAILABLE")


def _target(info: PartitionInfo, to_broker: int | None) -> int:
    tp, leader = info.partition, info.leader
    others = [r for r in info.replicas if r != leader and r in info.isr]
    if to_broker is not None:
        if to_broker == leader:
            raise Refused(f"broker {to_broker} already leads {tp}: it is the coordinator now",
                          f"name another in-sync replica ({_ids(others)})" if others else None)
        if to_broker not in info.replicas:
            raise Refused(f"broker {to_broker} holds no replica of {tp} (replicas {_ids(info.replicas)})",
                          f"name an in-sync replica ({_ids(others)})" if others else None)
        if to_broker not in info.isr:
            raise Refused(f"broker {to_broker}'s replica of {tp} is not in sync (ISR {_ids(info.isr)}): as leader it "
                          "would lack transaction records", f"name an in-sync replica ({_ids(others)})"
                          if others else "wait until it is back in sync")
        return to_broker
    if not others:
        raise Refused(f"{tp} has no other in-sync replica to move the coordinator to (replicas "
                      f"{_ids(info.replicas)}, ISR {_ids(info.isr)})",
                      f"restart broker {leader}: it loads the transactions again when it comes back")
    return others[0]  # in replica order: the preferred replica first when it is not the leader


def execute(client: LeadershipApi, plan: MovePlan, wait_s: float = 15.0, settle_s: float = 5.0,
            sleep: Callable[[float], None] = time.sleep) -> MoveOutcome:
    """Write the plan, then wait for the new leader, for the new coordinator to answer for the id, and briefly
    for the transaction to leave its Prepare state (the re-sent markers)."""
    tp = plan.partition
    notes: list[str] = []
    if plan.reorder is not None:
        _ok(client.reorder_replicas(tp, plan.reorder), f"reordering the replicas of {tp}")
        _until(lambda: _info(client, tp).replicas[:1] == plan.reorder[:1],  # type: ignore[index]
               wait_s, sleep, f"the replicas of {tp} to be reordered")
        notes.append(f"broker {plan.target} is now the preferred leader of {tp} (replicas {_ids(plan.reorder)})")
    error, message = client.elect_preferred_leader(tp)
    if error is not None and error != "ELECTION_NOT_NEEDED":
        raise BrokerError(f"electing broker {plan.target} leader of {tp} failed: {message or error}", error)
    leader = _until(lambda: _info(client, tp).leader == plan.target, wait_s, sleep,
                    f"broker {plan.target} to lead {tp}")
    state = _state_at(client, plan, wait_s, settle_s, sleep)
    after = client.partition_offsets({tp: plan.target})[tp]
    return MoveOutcome(plan, plan.target if leader else _info(client, tp).leader, state, after, notes)


def _ok(result: tuple[str | None, str | None], what: str) -> None:
    error, message = result
    if error is not None:
        raise BrokerError(f"{what} failed: {message or error}", error)


def _info(client: ClusterApi, tp: TopicPartition) -> PartitionInfo:
    info = client.metadata([tp.topic]).partition(tp)
    if info is None:
        raise NothingToDo(f"{tp} is gone from the metadata")
    return info


def _until(done: Callable[[], bool], wait_s: float, sleep: Callable[[float], None], what: str) -> bool:
    deadline = time.monotonic() + wait_s
    while True:
        if done():
            return True
        if time.monotonic() >= deadline:
            raise BrokerError(f"gave up waiting {wait_s:.0f} s for {what}", "REQUEST_TIMED_OUT",
                              "check the controller and the brokers' logs; `kafka-txn describe` shows where the "
                              "coordinator is now")
        sleep(0.2)


def _state_at(client: ClusterApi, plan: MovePlan, wait_s: float, settle_s: float,
              sleep: Callable[[float], None]) -> str | None:
    """The id's state once its new coordinator answers; given `settle_s` more to leave a Prepare state."""
    deadline = time.monotonic() + wait_s
    settled_by: float | None = None
    state: str | None = None
    while time.monotonic() < deadline:
        d = client.describe_transactions([plan.transactional_id]).descriptions.get(plan.transactional_id)
        if d is not None and d.coordinator_id == plan.target:
            state = d.state
            if state not in PREPARE_STATES:
                return state
            settled_by = settled_by if settled_by is not None else time.monotonic() + settle_s
            if time.monotonic() >= settled_by:
                return state
        sleep(0.2)
    return state
