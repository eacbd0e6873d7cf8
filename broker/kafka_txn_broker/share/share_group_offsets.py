"""A share group's offsets as an admin sees and changes them (Kafka's GroupCoordinatorService
describeShareGroupOffsets / alterShareGroupOffsets / deleteShareGroupOffsets, over the persister):

- describe: per share-partition the start offset (SPSO), the leader epoch of its last writer and the
  lag (KIP-1226: the high watermark minus the SPSO minus the records already acknowledged or archived above it;
  Apache Kafka 4.4.0 counts to the high watermark under read_committed too, so a group held at a transaction's
  LSO has the records from the LSO on as its lag);
- alter: a new start offset with a new state epoch, which fences whatever the old state's share-partition
  leader still writes; only for an Empty group (NON_EMPTY_GROUP otherwise);
- delete: the persisted state of whole topics (again only for an Empty group).
Each reset is announced to the share-partition leaders, which load the new state on next use.
Event-loop owned.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from kafka_txn_broker.formats import errors as E
from kafka_txn_broker.formats.errors import BrokerResponseError, NonEmptyGroupError
from kafka_txn_broker.metadata.topics import TopicMetadata
from kafka_txn_broker.share.persister import ShareStatePersister
from kafka_txn_broker.share.share_partition import SharePartitionKey


class ShareGroup(Protocol):
    """The share group an admin changes (the group coordinator's ShareGroup): its id, and whether it is Empty."""

    @property
    def group_id(self) -> str: ...

    @property
    def is_empty(self) -> bool: ...


class Topics(Protocol):
    def topic_by_name(self, name: str) -> TopicMetadata | None: ...

    def topic_by_id(self, topic_id: uuid.UUID) -> TopicMetadata | None: ...


class PartitionEnds(Protocol):
    def end_offset(self, topic: str, partition: int, read_committed: bool) -> int | None: ...


class GroupKeys(Protocol):
    def keys_of_group(self, group_id: str) -> list[tuple[str, uuid.UUID, int]]: ...


class StateResetListener(Protocol):
    def on_state_reset(self, group_id: str, keys: list[SharePartitionKey]) -> None: ...


@dataclass(slots=True)
class PartitionOffset:
    partition: int
    start_offset: int = -1
    leader_epoch: int = -1
    lag: int = -1
    error: int = E.NONE
    message: str | None = None


@dataclass(slots=True)
class TopicOffsets:
    name: str
    topic_id: uuid.UUID
    partitions: list[PartitionOffset] = field(default_factory=list)


class ShareGroupOffsets:
    def __init__(self, persister: ShareStatePersister, keys: GroupKeys, topics: Topics, ends: PartitionEnds,
                 listener: StateResetListener, read_committed: Callable[[str], bool]) -> None:
        self.persister = persister
        self.keys = keys
        self.topics = topics
        self.ends = ends
        self.listener = listener
        self.read_committed = read_committed

    # ---- describe ------------------------------------------------------------------------------------
    def describe(self, group_id: str, wanted: Mapping[str, list[int]] | None) -> list[TopicOffsets]:
        """`wanted` None: every share-partition the group has a state for."""
        if wanted is None:
            found: dict[str, list[int]] = {}
            for _g, topic_id, partition in sorted(self.keys.keys_of_group(group_id), key=lambda k: (str(k[1]), k[2])):
                t = self.topics.topic_by_id(topic_id)
                if t is not None:
                    found.setdefault(t.name, []).append(partition)
            wanted = found
        out = []
        for name, partitions in wanted.items():
            t = self.topics.topic_by_name(name)
            topic = TopicOffsets(name, t.topic_id if t is not None else uuid.UUID(int=0))
            for p in partitions:
                topic.partitions.append(self._describe_one(group_id, t, p))
            out.append(topic)
        return out

    def _describe_one(self, group_id: str, t: TopicMetadata | None, partition: int) -> PartitionOffset:
        if t is None or not 0 <= partition < t.partitions:
            return PartitionOffset(partition, error=E.UNKNOWN_TOPIC_OR_PARTITION,
                                   message="This server does not host this topic-partition.")
        try:
            state = self.persister.read_summary(SharePartitionKey(group_id, t.topic_id, partition))
        except BrokerResponseError as exc:
            return PartitionOffset(partition, error=int(exc.errno), message=str(exc.args[0]) if exc.args else None)
        if state is None or state.start_offset < 0:
            return PartitionOffset(partition)
        end = self.ends.end_offset(t.name, partition, False)  # the high watermark, whatever the isolation
        lag = -1 if end is None else max(0, end - state.start_offset - state.delivery_complete_count())
        return PartitionOffset(partition, state.start_offset, state.leader_epoch, lag)

    # ---- alter / delete ------------------------------------------------------------------------------
    def alter(self, group: ShareGroup, offsets: Mapping[str, Mapping[int, int]]) -> dict[str, dict[int, int]]:
        """New start offsets (raises NON_EMPTY_GROUP); an error code per topic-partition."""
        _require_empty(group)
        result: dict[str, dict[int, int]] = {}
        reset: list[SharePartitionKey] = []
        for name, partitions in offsets.items():
            t = self.topics.topic_by_name(name)
            codes = result.setdefault(name, {})
            for p, start in partitions.items():
                if t is None or not 0 <= p < t.partitions:
                    codes[p] = E.UNKNOWN_TOPIC_OR_PARTITION
                    continue
                key = SharePartitionKey(group.group_id, t.topic_id, p)
                try:
                    old = self.persister.read_summary(key)
                    self.persister.initialize_state(key, (old.state_epoch + 1) if old is not None else 0, start)
                    codes[p] = E.NONE
                    reset.append(key)
                except BrokerResponseError as exc:
                    codes[p] = int(exc.errno)
        if reset:
            self.listener.on_state_reset(group.group_id, reset)
        return result

    def delete(self, group: ShareGroup, topic_names: list[str]) -> dict[str, int]:
        """Delete the state of whole topics (raises NON_EMPTY_GROUP); an error code per topic."""
        _require_empty(group)
        by_topic: dict[uuid.UUID, list[SharePartitionKey]] = {}
        for key in self.keys.keys_of_group(group.group_id):
            by_topic.setdefault(key[1], []).append(SharePartitionKey(*key))
        result: dict[str, int] = {}
        for name in topic_names:
            t = self.topics.topic_by_name(name)
            if t is None:
                result[name] = E.UNKNOWN_TOPIC_OR_PARTITION
                continue
            result[name] = self._delete_keys(group.group_id, by_topic.get(t.topic_id, []))
        return result

    def delete_group_state(self, group_id: str) -> int:
        """Everything the group has in `__share_group_state` (DeleteGroups of a share group)."""
        return self._delete_keys(group_id, [SharePartitionKey(*k) for k in self.keys.keys_of_group(group_id)])

    def _delete_keys(self, group_id: str, keys: list[SharePartitionKey]) -> int:
        try:
            for key in keys:
                self.persister.delete_state(key)
        except BrokerResponseError as exc:
            return int(exc.errno)
        finally:
            if keys:
                self.listener.on_state_reset(group_id, keys)
        return E.NONE


def _require_empty(group: ShareGroup) -> None:
    if not group.is_empty:
        raise NonEmptyGroupError(f"share group {group.group_id} has members; offsets change only in an Empty group")
