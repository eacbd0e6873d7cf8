"""move-coordinator's flow (admin/coordinator_move.py) over the in-memory cluster: which replica takes over and
how (ElectLeaders, after reordering the replicas when the preferred one is the coordinator), and every refusal
before anything is written."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import pytest

from kafka_txn_broker.formats.partitioning import TXN_TOPIC, partition_for
from kafka_txn_tools.admin.coordinator_move import execute, plan_move
from kafka_txn_tools.errors import MissingApi, Refused
from kafka_txn_tools.models import PartitionInfo, TopicPartition
from tests.tools.admin.fakes import FakeCluster, cluster, txn

ID = "app-1"
COUNT = 5
HOME = TopicPartition(TXN_TOPIC, partition_for(ID, COUNT))


@dataclass
class Leadership(FakeCluster):
    """The fake cluster with a controller: reorders replicas and elects the first one (the preferred) leader;
    the new coordinator loads the transactions of the partition and completes the Prepare ones."""

    writes: list[tuple[str, TopicPartition, tuple[int, ...]]] = field(default_factory=list)

    def reorder_replicas(self, tp: TopicPartition, replicas: tuple[int, ...] | list[int]) -> tuple[None, None]:
        self.writes.append(("reorder", tp, tuple(replicas)))
        self._set(tp, replicas=tuple(replicas))
        return None, None

    def elect_preferred_leader(self, tp: TopicPartition) -> tuple[str | None, str | None]:
        info = self.info(tp)
        if info.leader == info.replicas[0]:
            return "ELECTION_NOT_NEEDED", "Leader election not needed for topic partition."
        self.writes.append(("elect", tp, (info.replicas[0],)))
        self._set(tp, leader=info.replicas[0])
        for txn_id, d in self.transactions.items():
            if partition_for(txn_id, COUNT) == tp.partition:
                state = {"PrepareCommit": "CompleteCommit", "PrepareAbort": "CompleteAbort"}.get(d.state, d.state)
                self.transactions[txn_id] = replace(d, coordinator_id=info.replicas[0], state=state)
        return None, None

    def _set(self, tp: TopicPartition, **changes: object) -> None:
        self.partitions = [p._replace(**changes) if p.partition == tp else p for p in self.partitions]


def world(leader: int = 1, replicas: tuple[int, ...] = (1, 2, 0), isr: tuple[int, ...] = (1, 2, 0)) -> Leadership:
    base = cluster()
    txn_partitions = [PartitionInfo(TopicPartition(TXN_TOPIC, i), 0, (0, 1, 2), (0, 1, 2), True)
                      for i in range(COUNT)]
    w = Leadership([*base.partitions, *txn_partitions], brokers=base.brokers)
    w._set(HOME, leader=leader, replicas=replicas, isr=isr)
    w.transactions[ID] = txn(ID, 7, "PrepareCommit", coordinator=leader)
    return w


def test_the_preferred_coordinator_is_moved_by_reordering_then_electing() -> None:
    w = world()
    plan = plan_move(w, ID)
    assert (plan.leader, plan.target, plan.reorder) == (1, 2, (2, 1, 0))
    assert plan.steps()[0].startswith(f"reorder the replicas of {HOME} from [1, 2, 0] to [2, 1, 0]")
    assert w.writes == []  # planning writes nothing
    outcome = execute(w, plan, sleep=lambda s: None)
    assert w.writes == [("reorder", HOME, (2, 1, 0)), ("elect", HOME, (2,))]
    assert (outcome.leader_after, outcome.state_after) == (2, "CompleteCommit")


def test_a_coordinator_off_its_preferred_replica_goes_back_to_it_by_election_alone() -> None:
    w = world(leader=2, replicas=(1, 2, 0))
    plan = plan_move(w, ID)
    assert (plan.target, plan.reorder) == (1, None)
    execute(w, plan, sleep=lambda s: None)
    assert w.writes == [("elect", HOME, (1,))]


def test_to_broker_names_an_in_sync_replica() -> None:
    w = world(isr=(1, 2))
    assert plan_move(w, ID, to_broker=2).target == 2
    for broker, message in ((1, "broker 1 already leads"), (7, "broker 7 holds no replica"),
                            (0, "broker 0's replica of __transaction_state-")):
        with pytest.raises(Refused, match=message):
            plan_move(w, ID, to_broker=broker)
    assert w.writes == []


@pytest.mark.parametrize("leader, isr, message", [
    (1, (1,), "has no other in-sync replica to move the coordinator to"),
    (-1, (), "has no leader: there is no coordinator to move"),
])
def test_nowhere_to_move_is_refused(leader: int, isr: tuple[int, ...], message: str) -> None:
    w = world(leader=leader, isr=isr)
    with pytest.raises(Refused, match=message) as refused:
        plan_move(w, ID)
    assert w.writes == []
    if leader >= 0:
        assert refused.value.fix == "restart broker 1: it loads the transactions again when it comes back"


def test_an_id_its_coordinator_does_not_know_is_refused() -> None:
    w = world()
    with pytest.raises(Refused, match="is not known to its coordinator"):
        plan_move(w, "nobody")
    assert w.writes == []


def test_a_cluster_without_the_apis_is_told_before_anything_is_written() -> None:
    w = world()
    w.unsupported = {"ElectLeaders"}
    with pytest.raises(MissingApi, match="ElectLeaders"):
        plan_move(w, ID)
    w.unsupported = {"AlterPartitionReassignments"}
    with pytest.raises(MissingApi, match="AlterPartitionReassignments"):
        plan_move(w, ID)  # its preferred replica is the coordinator: the reordering is needed
    assert w.writes == []
    off_preferred = world(leader=2, replicas=(1, 2, 0))
    off_preferred.unsupported = {"AlterPartitionReassignments"}
    assert plan_move(off_preferred, ID).reorder is None  # an election alone needs no more
