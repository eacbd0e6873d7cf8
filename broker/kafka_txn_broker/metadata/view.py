"""What a subsystem reads of the cluster metadata: protocols the controller's store (server's
ClusterMetadata) provides, so nothing below `server` depends on the store itself; unit tests fake them.

- MetadataView: a coordinator's question, who leads partition p of topic t and how many partitions it has;
- MetadataCache: a broker's view (Kafka's MetadataCache): topics by name and id, every partition, the live
  nodes, the dynamic configs of a resource;
- MetadataTopics: topics by name or id and partition leaders over a MetadataCache, for the share and
  consumer group code.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Set
from typing import Protocol

from kafka_txn_broker.metadata.topics import PartitionState, TopicMetadata, TopicState


class MetadataView(Protocol):
    """What a coordinator reads of the cluster metadata (ClusterMetadata provides it; unit tests fake it)."""

    def partition_count(self, topic: str) -> int | None:
        """The topic's number of partitions; None when the topic does not exist."""
        ...

    def leader(self, topic: str, partition: int) -> int | None:
        """The partition's leader, -1 when it has none; None when the partition does not exist."""
        ...


class MetadataCache(MetadataView, Protocol):
    """A broker's read-only view of the cluster metadata (Kafka's MetadataCache)."""

    @property
    def topics(self) -> Mapping[str, TopicState]: ...

    @property
    def topics_by_id(self) -> Mapping[uuid.UUID, TopicState]: ...

    @property
    def live_nodes(self) -> Set[int]: ...

    def all_partitions(self) -> Iterable[PartitionState]: ...

    def resource_configs(self, resource_type: int, name: str) -> dict[str, str]:
        """The dynamic configs of a resource (ResourceType TOPIC, BROKER or GROUP) as stored: strings."""
        ...


class MetadataTopics:
    """Topics by name and by id, and partition leaders, from the cluster metadata."""

    def __init__(self, metadata: MetadataCache) -> None:
        self.metadata = metadata

    def topic_by_name(self, name: str) -> TopicMetadata | None:
        t = self.metadata.topics.get(name)
        return TopicMetadata(t.topic_id, t.name, len(t.partitions)) if t is not None else None

    def topic_by_id(self, topic_id: uuid.UUID) -> TopicMetadata | None:
        t = self.metadata.topics_by_id.get(topic_id)
        return TopicMetadata(t.topic_id, t.name, len(t.partitions)) if t is not None else None

    def topic_names(self) -> list[str]:
        return list(self.metadata.topics)

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        t = self.metadata.topics_by_id.get(topic_id)
        return t.name if t is not None else None

    def leader_of(self, topic: str, partition: int) -> tuple[int, int]:
        """(leader, leader epoch) of a partition; (-1, -1) when it does not exist."""
        t = self.metadata.topics.get(topic)
        if t is None or not 0 <= partition < len(t.partitions):
            return -1, -1
        state = t.partitions[partition]
        return state.leader, state.leader_epoch
