"""Server-side partition assignment (Kafka's coordinator.group.api.assignor): what an assignor is given
and what it returns. Assignments are by topic id, as in every KIP-848-generation protocol.

    assignor.assign({"m1": MemberSpec(frozenset({tid}), None, {})}, {tid: TopicMetadata(tid, "t", 3)})
    # -> {"m1": {tid: frozenset({0, 1, 2})}}

Pure: assignors see plain data only.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from kafka_txn_broker.metadata.topics import TopicMetadata

TopicId = uuid.UUID
Assignment = dict[TopicId, frozenset[int]]


@dataclass(frozen=True, slots=True)
class MemberSpec:
    """A member as an assignor sees it: what it subscribes to, where it runs, what it has now, and its
    static identity (group.instance.id), which the range assignor orders by."""

    subscribed_topic_ids: frozenset[TopicId]
    rack_id: str | None = None
    current: Mapping[TopicId, frozenset[int]] = field(default_factory=dict)
    instance_id: str | None = None


class PartitionAssignor(Protocol):
    @property
    def name(self) -> str: ...

    def assign(self, members: Mapping[str, MemberSpec],
               topics: Mapping[TopicId, TopicMetadata]) -> dict[str, Assignment]:
        """The target assignment of every member (members without partitions map to {})."""
        ...


class TopicsView(Protocol):
    """The cluster's topics as a group coordinator needs them."""

    def topic_by_name(self, name: str) -> TopicMetadata | None: ...

    def topic_by_id(self, topic_id: TopicId) -> TopicMetadata | None: ...


class TopicCatalog(TopicsView, Protocol):
    """The topics view with the list of names (regex subscriptions are matched against it)."""

    def topic_names(self) -> list[str]: ...
