"""Partitions and topics as the cluster metadata records them, and Kafka's rules for topic names.

PartitionState and TopicState are the controller's records, shared by every node of the process (the
controller changes them in place and then tells each node which partitions changed). Event-loop owned.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from kafka_txn_broker.formats.errors import InvalidTopicError
from kafka_txn_broker.formats.partitioning import GROUP_TOPIC, SHARE_STATE_TOPIC, TXN_TOPIC

# Kafka's internal topics: Metadata marks them, clients may not write to, delete or trim them.
INTERNAL_TOPICS = frozenset({GROUP_TOPIC, TXN_TOPIC, SHARE_STATE_TOPIC})
_LEGAL = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


@dataclass(slots=True)
class PartitionState:
    topic: str
    partition: int
    # During a reassignment: the target replicas followed by the ones being removed (Kafka's order).
    replicas: list[int]
    leader: int
    leader_epoch: int
    isr: list[int]
    adding_replicas: list[int] = field(default_factory=list)
    removing_replicas: list[int] = field(default_factory=list)

    @property
    def reassigning(self) -> bool:
        return bool(self.adding_replicas or self.removing_replicas)


@dataclass(slots=True)
class TopicState:
    name: str
    topic_id: uuid.UUID
    partitions: list[PartitionState]
    configs: dict[str, str] = field(default_factory=dict)

    @property
    def internal(self) -> bool:
        return self.name in INTERNAL_TOPICS


@dataclass(frozen=True, slots=True)
class TopicMetadata:
    """A topic as the group coordinators' assignors see it: its id, name and number of partitions."""

    topic_id: uuid.UUID
    name: str
    partitions: int


def validate_topic_name(name: str) -> None:
    """Kafka's topic name rules: 1-249 chars of [a-zA-Z0-9._-], not '.' or '..'."""
    if not name or name in (".", "..") or len(name) > 249 or not set(name) <= _LEGAL:
        raise InvalidTopicError(f"invalid topic name {name!r}: use 1-249 characters from [a-zA-Z0-9._-]")
