"""Helpers for the share group tests: librdkafka's ShareConsumer against the embedded cluster."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

from confluent_kafka import Producer, ShareConsumer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

from kafka_txn_broker import EmbeddedCluster

# A short heartbeat interval keeps joins and reassignments fast (the broker bounds allow it).
FAST_GROUPS = {"group.share.heartbeat.interval.ms": 500, "group.share.min.heartbeat.interval.ms": 500}

Record = tuple[int, int, bytes, int]  # (partition, offset, value, delivery count)


def set_group_configs(bootstrap: str, group: str, **configs: str) -> None:
    """IncrementalAlterConfigs SET on a GROUP resource, as kafka-configs.sh --entity-type groups does."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    entries = [ConfigEntry(k.replace("_", "."), v, incremental_operation=AlterConfigOpType.SET)
               for k, v in configs.items()]
    for future in admin.incremental_alter_configs([ConfigResource("GROUP", group, incremental_configs=entries)]
                                                  ).values():
        future.result(30)


def produce(bootstrap: str, topic: str, count: int, partitions: int, prefix: str = "v") -> list[bytes]:
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 2})
    values = [f"{prefix}{i}".encode() for i in range(count)]
    for i, v in enumerate(values):
        p.produce(topic, value=v, partition=i % partitions)
    assert p.flush(30) == 0
    return values


def txn_producer(bootstrap: str, txn_id: str) -> Producer:
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id, "linger.ms": 2, "log_level": 3})
    p.init_transactions(30)
    return p


def share_consumer(bootstrap: str, group: str, topics: Iterable[str], *, explicit: bool = False,
                   **extra: Any) -> ShareConsumer:
    conf = {"bootstrap.servers": bootstrap, "group.id": group, "log_level": 3, **extra}
    if explicit:
        conf["share.acknowledgement.mode"] = "explicit"
    c = ShareConsumer(conf)
    c.subscribe(list(topics))
    return c


def poll_records(consumer: ShareConsumer, timeout_s: float = 0.3) -> list[Any]:
    return [m for m in consumer.poll(timeout_s) if m.error() is None]


def poll_until(consumers: list[ShareConsumer], done: Callable[[list[tuple[int, Any]]], bool],
               timeout_s: float = 20.0, on_batch: Callable[[int, ShareConsumer, list[Any]], None] | None = None,
               ) -> list[tuple[int, Any]]:
    """Poll the consumers in turn until done(records); records are (consumer index, message)."""
    got: list[tuple[int, Any]] = []
    deadline = time.monotonic() + timeout_s
    while not done(got) and time.monotonic() < deadline:
        for i, c in enumerate(consumers):
            batch = poll_records(c, 0.2)
            got.extend((i, m) for m in batch)
            if on_batch is not None and batch:
                on_batch(i, c, batch)
    return got


def assigned_members(cluster: EmbeddedCluster, group: str) -> int:
    """How many members of the share group hold their share of the group's current assignment, as its
    coordinator sees it: at the assignment epoch, with the partitions the assignor gave them. (A member that
    joined first holds every partition until its next heartbeat gives some to the others.)"""
    assert cluster.cluster is not None
    for node in cluster.cluster.nodes.values():
        if not node.online:
            continue
        try:
            found = node.group_coordinator.share_group(group)
        except Exception:  # not this node's group, or not loaded here
            continue
        return sum(1 for member_id, m in found.members.items()
                   if m.assigned and m.member_epoch == found.assignment_epoch
                   and m.assigned == found.target.get(member_id))
    return 0


def join(cluster: EmbeddedCluster, consumers: list[ShareConsumer], group: str, timeout_s: float = 20.0) -> None:
    """Poll (nothing is there yet) until every consumer is a member with its share of the assignment, so that
    records produced next can go to any of them, whatever the machine's load; then once more each, for the
    heartbeat answer that carried the assignment to reach its consumer."""
    deadline = time.monotonic() + timeout_s
    while assigned_members(cluster, group) < len(consumers):
        assert time.monotonic() < deadline, f"{len(consumers)} members did not join share group {group!r}"
        for c in consumers:
            assert not poll_records(c, 0.2), "nothing was produced yet"
    for c in consumers:
        assert not poll_records(c, 0.2), "nothing was produced yet"


def values(records: Iterable[tuple[int, Any]]) -> list[bytes]:
    return [m.value() for _, m in records]


def share_partitions(cluster: EmbeddedCluster, group: str) -> dict[tuple[str, int], dict[str, Any]]:
    """Each share-partition of the group as its leader holds it: start offset and records by state."""
    assert cluster.cluster is not None
    core = cluster.cluster

    def collect() -> dict[tuple[str, int], dict[str, Any]]:
        out = {}
        for node in core.nodes.values():
            if not node.online:
                continue
            for key, sp in node.share_partition_manager.partitions.items():
                name = core.metadata.topics_by_id[key.topic_id].name
                if key.group_id == group:
                    out[(name, key.partition)] = {"start": sp.start_offset, "leader": node.node_id,
                                                  **{s.name: n for s, n in sp.counts_by_state().items()}}
        return out

    return cluster.call_soon(collect)  # type: ignore[no-any-return]
