"""The controller's metadata store: topics, replica assignment, leaders, ISR, leader epochs, dynamic configs
and producer id blocks, and the controller's decisions that change them.

All nodes of an embedded cluster share one ClusterMetadata, as KRaft brokers share the metadata log.
Changes are appended to `DIR/cluster-metadata.jsonl` (one event per line) so a restart, even after
kill -9, sees every topic and leadership decision; the file is compacted on load.

It belongs to `server`, where the controller runs: the subsystems below read it only through the
metadata layer's protocols (MetadataView, MetadataCache), and a partition leader's ISR changes reach it
through the replica layer's AlterPartition protocol.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from kafka_txn_broker.configs.config_def import ResourceType
from kafka_txn_broker.formats.errors import (
    InvalidPartitionsError,
    InvalidReplicationFactorError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
)
from kafka_txn_broker.metadata.topics import PartitionState, TopicState, validate_topic_name
from kafka_txn_broker.server import partition_change

LeadershipListener = Callable[[list[PartitionState]], None]
ConfigListener = Callable[[int, str], None]  # (ResourceType, resource name) whose dynamic configs changed


class ClusterMetadata:
    def __init__(self, data_dir: Path, node_ids: Iterable[int]) -> None:
        self.node_ids = sorted(node_ids)
        self.live_nodes: set[int] = set()
        self.topics: dict[str, TopicState] = {}
        self.topics_by_id: dict[uuid.UUID, TopicState] = {}
        self.next_producer_id_block = 0
        # Dynamic BROKER ("" = cluster default, "<id>") and GROUP configs; a topic's live on its TopicState.
        self.configs: dict[tuple[int, str], dict[str, str]] = {}
        self._listeners: list[LeadershipListener] = []
        self._config_listeners: list[ConfigListener] = []
        self._path = data_dir / "cluster-metadata.jsonl"
        data_dir.mkdir(parents=True, exist_ok=True)
        self._load()
        self._file = open(self._path, "a", encoding="utf-8")  # noqa: SIM115 - kept open for appends

    # ---- persistence -------------------------------------------------------------------------
    def _load(self) -> None:
        if not self._path.exists():
            return
        for line in self._path.read_text(encoding="utf-8").splitlines():
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                break  # torn last line after a crash: everything before it was durable
            self._apply(event)
        self._compact()

    def _compact(self) -> None:
        tmp = self._path.with_suffix(".tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(json.dumps({"type": "producer_ids", "next": self.next_producer_id_block}) + "\n")
            for topic in self.topics.values():
                f.write(json.dumps(self._topic_event(topic)) + "\n")
            for (resource_type, name), configs in self.configs.items():
                f.write(json.dumps(self._config_event(resource_type, name, configs)) + "\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self._path)

    @staticmethod
    def _topic_event(t: TopicState) -> dict[str, Any]:
        return {
            "type": "topic", "name": t.name, "id": str(t.topic_id), "configs": t.configs,
            "partitions": [_partition_row(p) for p in t.partitions],
        }

    def _record(self, event: dict[str, Any]) -> None:
        self._file.write(json.dumps(event, separators=(",", ":")) + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())

    def _apply(self, e: dict[str, Any]) -> None:
        kind = e["type"]
        if kind == "topic":
            parts = [_partition_of(e["name"], i, row) for i, row in enumerate(e["partitions"])]
            self._put(TopicState(e["name"], uuid.UUID(e["id"]), parts, e.get("configs", {})))
        elif kind == "partitions":  # CreatePartitions: more partitions at the end of a topic
            grown = self.topics[e["topic"]]
            grown.partitions.extend(_partition_of(grown.name, len(grown.partitions) + i, row)
                                    for i, row in enumerate(e["partitions"]))
        elif kind == "delete":
            t = self.topics.pop(e["name"], None)
            if t is not None:
                self.topics_by_id.pop(t.topic_id, None)
        elif kind == "partition":
            p = self.topics[e["topic"]].partitions[e["partition"]]
            p.leader, p.leader_epoch, p.isr = e["leader"], e["epoch"], e["isr"]
            if "replicas" in e:  # a reassignment's change (older events carry none)
                p.replicas, p.adding_replicas, p.removing_replicas = e["replicas"], e["adding"], e["removing"]
        elif kind == "producer_ids":
            self.next_producer_id_block = max(self.next_producer_id_block, e["next"])
        elif kind == "config":
            self._put_configs(e["resource"], e["name"], e["configs"])

    def _put(self, t: TopicState) -> None:
        self.topics[t.name] = t
        self.topics_by_id[t.topic_id] = t

    def close(self) -> None:
        self._file.close()

    # ---- topics ------------------------------------------------------------------------------
    def create_topic(self, name: str, num_partitions: int, replication_factor: int,
                     configs: dict[str, str] | None = None, *, validate_only: bool = False,
                     assignments: list[list[int]] | None = None) -> TopicState:
        """A new topic, placed round-robin, or as `assignments` say (checked by the caller, replication_control)."""
        validate_topic_name(name)
        if name in self.topics:
            raise TopicAlreadyExistsError(f"topic {name!r} already exists")
        if num_partitions < 1:
            raise InvalidPartitionsError(f"number of partitions must be at least 1, got {num_partitions}")
        if not 1 <= replication_factor <= len(self.node_ids):
            raise InvalidReplicationFactorError(
                f"replication factor {replication_factor} is outside 1..{len(self.node_ids)} (nodes in the cluster)")
        placed = self.place(name, 0, num_partitions, replication_factor) if assignments is None else assignments
        topic = TopicState(name, uuid.uuid4(), self._partitions(name, placed), dict(configs or {}))
        if not validate_only:
            self._put(topic)
            self._record(self._topic_event(topic))
            self._notify(topic.partitions)
        return topic

    def _partitions(self, name: str, placed: list[list[int]]) -> list[PartitionState]:
        out = []
        for i, replicas in enumerate(placed):
            live = [r for r in replicas if r in self.live_nodes]
            out.append(PartitionState(name, i, list(replicas), live[0] if live else -1, 0, live))
        return out

    def place(self, name: str, first: int, count: int, rf: int) -> list[list[int]]:
        """Replicas of partitions first..first+count-1: round-robin from a per-topic start, like Kafka's
        rack-unaware assignment, so leaders spread (and partitions added later continue the pattern)."""
        nodes = self.node_ids
        start = hash_topic(name) % len(nodes)
        return [[nodes[(start + i + j) % len(nodes)] for j in range(rf)] for i in range(first, first + count)]

    def delete_topic(self, name: str) -> TopicState:
        topic = self.topics.get(name)
        if topic is None:
            raise UnknownTopicOrPartitionError(f"topic {name!r} does not exist")
        self._record({"type": "delete", "name": name})
        self._apply({"type": "delete", "name": name})
        return topic

    def partition(self, topic: str, partition: int) -> PartitionState:
        t = self.topics.get(topic)
        if t is None or not 0 <= partition < len(t.partitions):
            raise UnknownTopicOrPartitionError(f"{topic}-{partition} does not exist")
        return t.partitions[partition]

    def partition_count(self, topic: str) -> int | None:
        t = self.topics.get(topic)
        return len(t.partitions) if t is not None else None

    def leader(self, topic: str, partition: int) -> int | None:
        t = self.topics.get(topic)
        if t is None or not 0 <= partition < len(t.partitions):
            return None
        return t.partitions[partition].leader

    def all_partitions(self) -> Iterable[PartitionState]:
        for t in self.topics.values():
            yield from t.partitions

    # ---- dynamic configs (kafka_txn_broker.configs validates them; this is their durable store) ----------
    def resource_configs(self, resource_type: int, name: str) -> dict[str, str]:
        """The dynamic configs of a resource (ResourceType TOPIC, BROKER or GROUP) as stored: strings."""
        if resource_type == ResourceType.TOPIC:
            topic = self.topics.get(name)
            return dict(topic.configs) if topic is not None else {}
        return dict(self.configs.get((resource_type, name), {}))

    def alter_configs(self, resource_type: int, name: str, configs: dict[str, str]) -> None:
        """Replace a resource's dynamic configs, durably, then tell the listeners (a topic must exist)."""
        self._record(self._config_event(resource_type, name, configs))
        self._put_configs(resource_type, name, configs)
        for listener in list(self._config_listeners):
            listener(resource_type, name)

    def add_config_listener(self, listener: ConfigListener) -> None:
        self._config_listeners.append(listener)

    @staticmethod
    def _config_event(resource_type: int, name: str, configs: dict[str, str]) -> dict[str, Any]:
        return {"type": "config", "resource": resource_type, "name": name, "configs": configs}

    def _put_configs(self, resource_type: int, name: str, configs: dict[str, str]) -> None:
        if resource_type == ResourceType.TOPIC:
            topic = self.topics.get(name)
            if topic is not None:  # a topic deleted since is replayed without its configs
                topic.configs = dict(configs)
        elif configs:
            self.configs[(resource_type, name)] = dict(configs)
        else:
            self.configs.pop((resource_type, name), None)

    # ---- producer id blocks ------------------------------------------------------------------
    def allocate_producer_id_block(self, size: int) -> int:
        """Reserve [start, start+size) durably before anyone uses it, so ids are never reissued."""
        start = self.next_producer_id_block
        self.next_producer_id_block = start + size
        self._record({"type": "producer_ids", "next": self.next_producer_id_block})
        return start

    # ---- leadership --------------------------------------------------------------------------
    def add_listener(self, listener: LeadershipListener) -> None:
        self._listeners.append(listener)

    def _notify(self, changed: list[PartitionState]) -> None:
        if changed:
            for listener in list(self._listeners):
                listener(changed)

    def _set(self, p: PartitionState, leader: int, isr: list[int], bump: bool) -> None:
        p.leader, p.isr = leader, isr
        if bump:
            p.leader_epoch += 1
        self._record({"type": "partition", "topic": p.topic, "partition": p.partition,
                      "leader": p.leader, "epoch": p.leader_epoch, "isr": p.isr})

    def change_partition(self, p: PartitionState, *, leader: int, isr: list[int], replicas: list[int],
                         adding: list[int], removing: list[int], bump: bool) -> None:
        """The controller's PartitionChangeRecord: a new leader, ISR and replica assignment (a reassignment's
        steps, an election), durably, then every node is told."""
        p.leader, p.isr = leader, isr
        p.replicas, p.adding_replicas, p.removing_replicas = replicas, adding, removing
        if bump:
            p.leader_epoch += 1
        self._record({"type": "partition", "topic": p.topic, "partition": p.partition, "leader": p.leader,
                      "epoch": p.leader_epoch, "isr": p.isr, "replicas": p.replicas, "adding": p.adding_replicas,
                      "removing": p.removing_replicas})
        self._notify([p])

    def add_partitions(self, topic: TopicState, assignments: list[list[int]]) -> list[PartitionState]:
        """CreatePartitions: new partitions after the topic's last, led by their first live replica."""
        rows = []
        for replicas in assignments:
            live = [r for r in replicas if r in self.live_nodes]
            rows.append([replicas, live[0] if live else -1, 0, live])
        self._record({"type": "partitions", "topic": topic.name, "partitions": rows})
        added = [_partition_of(topic.name, len(topic.partitions) + i, row) for i, row in enumerate(rows)]
        topic.partitions.extend(added)
        self._notify(added)
        return added

    def node_stopped(self, node_id: int) -> list[PartitionState]:
        """Move leadership off a stopped node to an in-sync replica (leader epoch bump), shrink ISRs."""
        self.live_nodes.discard(node_id)
        changed = []
        for p in self.all_partitions():
            if node_id not in p.replicas:
                continue
            isr = [r for r in p.isr if r != node_id]
            if p.leader == node_id:
                alive = [r for r in isr if r in self.live_nodes]
                # No unclean election: with no live ISR member the partition stays offline (leader -1)
                # but keeps the stopped leader in the ISR so it can come back as leader with its data.
                self._set(p, alive[0] if alive else -1, isr if alive else p.isr, bump=True)
                changed.append(p)
            elif isr != p.isr:
                self._set(p, p.leader, isr, bump=False)
        self._notify(changed)
        return changed

    def node_started(self, node_id: int) -> None:
        self.live_nodes.add(node_id)

    def elect(self, p: PartitionState, leader: int) -> None:
        self._set(p, leader, p.isr if leader in p.isr else [*p.isr, leader], bump=True)
        self._notify([p])

    def join_isr(self, p: PartitionState, node_id: int) -> None:
        if node_id not in p.isr:
            self._set(p, p.leader, [*p.isr, node_id], bump=False)

    def maybe_complete_reassignment(self, p: PartitionState) -> bool:
        """The ISR grew (Kafka's AlterPartition): a reassignment whose target replicas are all in sync
        completes, its removed replicas leave (leader epoch bump; a new leader if the old one left).
        The leader calls this after a replication pass, not inside it, since the change reaches every
        node at once. True if it completed."""
        if not p.reassigning:
            return False
        current = partition_change.Assignment.of(p.replicas, p.isr, p.leader, p.adding_replicas,
                                                 p.removing_replicas)
        change = partition_change.build(current, self.live_nodes.__contains__)
        if change is None or change.assignment.reassigning:
            return False
        a = change.assignment
        self.change_partition(p, leader=a.leader, isr=list(a.isr), replicas=list(a.replicas), adding=[],
                              removing=[], bump=change.bump_epoch)
        return True

    def leader_log_failed(self, p: PartitionState, node_id: int) -> bool:
        """The leader's log went offline (Kafka: its log dir failed): an in-sync replica on a live node
        takes over (leader epoch bump) and the failed one leaves the ISR. With no such replica the
        partition keeps its leader and serves KAFKA_STORAGE_ERROR (no unclean election). True if moved."""
        if p.leader != node_id:
            return False
        isr = [r for r in p.isr if r != node_id]
        alive = [r for r in isr if r in self.live_nodes]
        if not alive:
            return False
        self._set(p, alive[0], isr, bump=True)
        self._notify([p])
        return True

    def leave_isr(self, p: PartitionState, node_id: int) -> None:
        """A follower that cannot keep up (a storage error) stops counting for the high watermark."""
        if node_id in p.isr and node_id != p.leader:
            self._set(p, p.leader, [r for r in p.isr if r != node_id], bump=False)


def _partition_row(p: PartitionState) -> list[Any]:
    row: list[Any] = [p.replicas, p.leader, p.leader_epoch, p.isr]
    return [*row, p.adding_replicas, p.removing_replicas] if p.reassigning else row


def _partition_of(topic: str, index: int, row: list[Any]) -> PartitionState:
    """A partition from its durable row: [replicas, leader, epoch, isr] (+ [adding, removing] mid-reassignment)."""
    replicas, leader, epoch, isr, *moving = row
    adding, removing = moving if moving else ([], [])
    return PartitionState(topic, index, replicas, leader, epoch, isr, adding, removing)


def hash_topic(name: str) -> int:
    """A stable (process-independent) small hash, unlike Python's salted str hash."""
    h = 0
    for ch in name.encode():
        h = (h * 31 + ch) & 0x7FFFFFFF
    return h
