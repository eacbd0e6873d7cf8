"""The controller's partition operations (Kafka's ReplicationControlManager): CreatePartitions, leader
elections, partition reassignments, and the automatic unclean election a topic may allow.

It decides with server/partition_change.py (pure) and writes through ClusterMetadata, which records each
change durably and tells every node (they open or delete replicas, move leadership, catch followers up).
A reassignment runs as in Kafka: the target replicas join the replica list as `adding`, followers catch
up from the leader and join the ISR, and the change that finds every target replica in the ISR drops
the `removing` ones (ClusterMetadata.maybe_complete_reassignment, called after the ISR grows).

Threading: on the cluster's event loop, like all broker state.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from kafka_txn_broker.formats import errors as E
from kafka_txn_broker.formats.errors import ApiError
from kafka_txn_broker.metadata.topics import PartitionState, TopicState
from kafka_txn_broker.server import partition_change as pc
from kafka_txn_broker.server.cluster_metadata import ClusterMetadata

# Kafka's controller refuses more new partitions than this in one request (KAFKA-17870).
MAX_PARTITIONS_PER_REQUEST = 10000


def _error(code: int, message: str) -> ApiError:
    return ApiError(message, code)


def assignment_of(p: PartitionState) -> pc.Assignment:
    return pc.Assignment.of(p.replicas, p.isr, p.leader, p.adding_replicas, p.removing_replicas)


class ReplicationControlManager:
    def __init__(self, metadata: ClusterMetadata, unclean_allowed: Callable[[str], bool]) -> None:
        """`unclean_allowed(topic)`: the topic's effective unclean.leader.election.enable."""
        self.metadata = metadata
        self._unclean_allowed = unclean_allowed

    def _can_lead(self, node_id: int) -> bool:
        return node_id in self.metadata.live_nodes

    def _topic(self, name: str) -> TopicState:
        topic = self.metadata.topics.get(name)
        if topic is None:
            raise _error(E.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find a topic named {name}.")
        return topic

    def _partition(self, name: str, index: int) -> PartitionState:
        topic = self._topic(name)
        if not 0 <= index < len(topic.partitions):
            raise _error(E.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find partition {name}:{index}.")
        return topic.partitions[index]

    def _apply(self, p: PartitionState, change: pc.Change) -> None:
        a = change.assignment
        self.metadata.change_partition(p, leader=a.leader, isr=list(a.isr), replicas=list(a.replicas),
                                       adding=list(a.adding), removing=list(a.removing), bump=change.bump_epoch)

    # ---- CreatePartitions ----------------------------------------------------------------------
    def create_partitions(self, name: str, count: int, assignments: list[list[int]] | None,
                          validate_only: bool = False) -> list[PartitionState]:
        """Grow topic `name` to `count` partitions (placed like its first ones, or as `assignments` say)."""
        topic = self._topic(name)
        current = len(topic.partitions)
        if count == current:
            raise _error(E.INVALID_PARTITIONS, f"Topic already has {current} partition(s).")
        if count < current:
            raise _error(E.INVALID_PARTITIONS, f"The topic {name} currently has {current} partition(s); "
                                               f"{count} would not be an increase.")
        additional = count - current
        if assignments is not None and len(assignments) != additional:
            raise _error(E.INVALID_REPLICA_ASSIGNMENT, f"Attempted to add {additional} additional partition(s), "
                                                       f"but only {len(assignments)} assignment(s) were specified.")
        if additional > MAX_PARTITIONS_PER_REQUEST:
            raise _error(E.POLICY_VIOLATION, "Excessively large number of partitions per request.")
        rf = len(topic.partitions[0].replicas) - len(topic.partitions[0].removing_replicas)
        if assignments is None:
            placed = self.metadata.place(name, current, additional, rf)
            if not all(any(r in self.metadata.live_nodes for r in replicas) for replicas in placed):
                raise _error(E.INVALID_REPLICATION_FACTOR, f"Unable to replicate the partition {rf} time(s): All "
                                                           "brokers are currently fenced or in controlled shutdown.")
        else:
            placed = [list(r) for r in assignments]
            for i, replicas in enumerate(placed):
                self.validate_manual_assignment(replicas, rf)
                if not any(r in self.metadata.live_nodes for r in replicas):
                    raise _error(E.INVALID_REPLICA_ASSIGNMENT, "All brokers specified in the manual partition "
                                 f"assignment for partition {current + i} are fenced or in controlled shutdown.")
        if validate_only:
            return []
        return self.metadata.add_partitions(topic, placed)

    def topic_assignments(self, assignments: dict[int, list[int]]) -> list[list[int]]:
        """CreateTopics' manual placement (kafka-topics.sh --replica-assignment), checked as Kafka checks it:
        partitions 0..n-1, one replication factor, known brokers, each partition with a live one."""
        factor: int | None = None
        for index, replicas in assignments.items():
            self.validate_manual_assignment(replicas, factor)
            factor = len(replicas)
            if not any(r in self.metadata.live_nodes for r in replicas):
                raise _error(E.INVALID_REPLICA_ASSIGNMENT, "All brokers specified in the manual partition "
                             f"assignment for partition {index} are fenced or in controlled shutdown.")
        if sorted(assignments) != list(range(len(assignments))):
            raise _error(E.INVALID_REPLICA_ASSIGNMENT, "partitions should be a consecutive 0-based integer sequence")
        return [assignments[i] for i in range(len(assignments))]

    def validate_manual_assignment(self, replicas: list[int], replication_factor: int | None) -> None:
        if not replicas:
            raise _error(E.INVALID_REPLICA_ASSIGNMENT,
                         "The manual partition assignment includes an empty replica list.")
        seen: set[int] = set()
        for broker in sorted(replicas):
            if broker not in self.metadata.node_ids:
                raise _error(E.INVALID_REPLICA_ASSIGNMENT, f"The manual partition assignment includes broker {broker}, "
                                                           "but no such broker is registered.")
            if broker in seen:
                raise _error(E.INVALID_REPLICA_ASSIGNMENT, f"The manual partition assignment includes the broker "
                                                           f"{broker} more than once.")
            seen.add(broker)
        if replication_factor is not None and len(replicas) != replication_factor:
            raise _error(E.INVALID_REPLICA_ASSIGNMENT, f"The manual partition assignment includes a partition with "
                         f"{len(replicas)} replica(s), but this is not consistent with previous partitions, which "
                         f"have {replication_factor} replica(s).")

    # ---- ElectLeaders --------------------------------------------------------------------------
    def elect_leader(self, name: str, index: int, election: pc.Election) -> None:
        """ElectLeaders for one partition: raises ELECTION_NOT_NEEDED, PREFERRED_LEADER_NOT_AVAILABLE,
        ELIGIBLE_LEADERS_NOT_AVAILABLE or UNKNOWN_TOPIC_OR_PARTITION as Kafka answers them."""
        topic = self.metadata.topics.get(name)
        if topic is None:
            raise _error(E.UNKNOWN_TOPIC_OR_PARTITION, f"No such topic as {name}")
        if not 0 <= index < len(topic.partitions):
            raise _error(E.UNKNOWN_TOPIC_OR_PARTITION, f"No such partition as {name}-{index}")
        p = topic.partitions[index]
        has_leader = p.leader != pc.NO_LEADER
        if (election is pc.Election.PREFERRED and has_leader and p.leader == p.replicas[0]) or \
                (election is pc.Election.UNCLEAN and has_leader):
            raise _error(E.ELECTION_NOT_NEEDED, "Leader election not needed for topic partition.")
        change = pc.build(assignment_of(p), self._can_lead, election=election)
        if change is None:
            if election is pc.Election.PREFERRED:
                raise _error(E.PREFERRED_LEADER_NOT_AVAILABLE, "The preferred leader was not available.")
            raise _error(E.ELIGIBLE_LEADERS_NOT_AVAILABLE, "Eligible topic partition leaders are not available.")
        self._apply(p, change)

    def elect_unclean_if_allowed(self, states: Iterable[PartitionState]) -> list[PartitionState]:
        """Leaderless partitions of topics with unclean.leader.election.enable=true get any live replica
        as leader (Kafka's controller does this when a broker is fenced or comes back)."""
        elected = []
        for p in states:
            if p.leader != pc.NO_LEADER or not self._unclean_allowed(p.topic):
                continue
            change = pc.build(assignment_of(p), self._can_lead, election=pc.Election.UNCLEAN)
            if change is not None and change.assignment.leader != pc.NO_LEADER:
                self._apply(p, change)
                elected.append(p)
        return elected

    # ---- AlterPartitionReassignments and ListPartitionReassignments ----------------------------
    def alter_reassignment(self, name: str, index: int, replicas: list[int] | None) -> None:
        """Start (or replace) a reassignment of one partition to `replicas`; None cancels the ongoing one."""
        p = self._partition(name, index)
        if replicas is None:
            self._cancel(p)
            return
        self.validate_manual_assignment(replicas, None)
        target = pc.reassignment_target(p.replicas, replicas)
        change = pc.build(assignment_of(p), self._can_lead, replicas=target.replicas, adding=target.adding,
                          removing=target.removing)
        if change is not None:
            self._apply(p, change)

    def _cancel(self, p: PartitionState) -> None:
        """Kafka's PartitionReassignmentRevert: drop the replicas being added, keep the ones being removed."""
        if not p.reassigning:
            raise _error(E.NO_REASSIGNMENT_IN_PROGRESS, "No partition reassignment is in progress for this "
                                                        "topic or partition.")
        replicas = [r for r in p.replicas if r not in p.adding_replicas]
        isr = [r for r in p.isr if r not in p.adding_replicas]
        unclean = self._unclean_allowed(p.topic)
        if not isr:
            if not unclean:
                raise _error(E.INVALID_REPLICA_ASSIGNMENT, f"Unable to revert partition assignment for "
                             f"{p.topic}:{p.partition} because it would require an unclean leader election.")
            isr = replicas[:1]
        election = pc.Election.UNCLEAN if unclean else pc.Election.ONLINE
        change = pc.build(assignment_of(p), self._can_lead, election=election, replicas=replicas, isr=isr,
                          adding=(), removing=())
        if change is not None:
            self._apply(p, change)

    def reassignments(self, topics: dict[str, list[int]] | None) -> list[PartitionState]:
        """The partitions being reassigned: all of them, or those among `topics` ({name: partition indexes})."""
        if topics is None:
            return [p for p in self.metadata.all_partitions() if p.reassigning]
        found: list[PartitionState] = []
        for name, indexes in topics.items():
            topic = self.metadata.topics.get(name)
            if topic is None:
                continue
            found.extend(topic.partitions[i] for i in indexes
                         if 0 <= i < len(topic.partitions) and topic.partitions[i].reassigning)
        return found
