"""The share view: per share-partition of a share group, its start offset and its records in flight by
state, and whether a hanging transaction holds it (a read_committed share group stops at the LSO).

Everything comes from what any Kafka 4.1+ cluster serves, nothing embedded-broker specific:
- ShareGroupDescribe (state, members) and DescribeShareGroupOffsets (start offset, lag) from the group
  coordinator; DescribeConfigs on the GROUP resource for share.isolation.level;
- ListOffsets for the partitions' LSO and high watermark;
- `__share_group_state` itself, read with Fetch and replayed as the share coordinator does
  (kafka_txn_broker.formats.share_state): the ACKNOWLEDGED, ARCHIVED and AVAILABLE ranges above the start
  offset, with their delivery counts. No Kafka API lists records by state; the share coordinator's own
  topic is the durable truth. ACQUIRED is never written (acquisitions are not persisted), so records a
  member holds right now count among "not yet acknowledged" with the ones no member fetched yet.
Reading `__share_group_state` needs READ on it (DESCRIBE on the group and its topics for the rest).
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import kafka.errors as kerrors

from kafka_txn_broker.formats.partitioning import SHARE_STATE_TOPIC
from kafka_txn_tools.connection import wire
from kafka_txn_tools.errors import BrokerError, error_name
from kafka_txn_tools.models import TopicPartition

if TYPE_CHECKING:
    from kafka_txn_tools.connection.client import AdminClient

FETCH_BYTES = 8 * 1024 * 1024
AVAILABLE, ACKNOWLEDGED, ARCHIVED = 0, 2, 4


@dataclass(frozen=True)
class SharePartitionView:
    topic: str
    partition: int
    start_offset: int            # SPSO; -1: the group has no state for it yet
    lag: int | None              # DescribeShareGroupOffsets v1 (KIP-1226); None when not served
    last_stable_offset: int | None
    high_watermark: int | None
    acknowledged: int = 0
    archived: int = 0
    available: int = 0           # released (or lock expired): waiting to be delivered again
    max_delivery_count: int = 0  # highest delivery count among the persisted in-flight records
    state_read: bool = False     # `__share_group_state` could be read for it
    error: str | None = None

    @property
    def unacknowledged(self) -> int | None:
        """Records between the start offset and the end a member may read that are neither completed nor
        released: acquired by a member right now, or not fetched yet."""
        end = self.last_stable_offset if self.last_stable_offset is not None else self.high_watermark
        if end is None or self.start_offset < 0 or not self.state_read:
            return None
        return max(0, end - self.start_offset - self.acknowledged - self.archived - self.available)

    @property
    def held_at_lso(self) -> bool:
        """It has delivered everything below an LSO that is below the high watermark: a read_committed group
        waits here for a transaction to end (find-hanging names such a transaction). Either its start offset sits
        at the LSO, or every record from it to the LSO is acknowledged or archived in `__share_group_state`:
        Kafka persists the start offset one state write behind, so a group held at the LSO can show an older one."""
        lso, hw = self.last_stable_offset, self.high_watermark
        if lso is None or hw is None or lso >= hw:
            return False
        delivered = self.state_read and 0 <= self.start_offset < lso and self.available == 0
        return self.start_offset == lso or (delivered and self.unacknowledged == 0)


@dataclass
class ShareGroupView:
    group: str
    state: str = ""
    members: int = 0
    isolation_level: str | None = None
    partitions: list[SharePartitionView] = field(default_factory=list)

    @property
    def stalled_partitions(self) -> list[SharePartitionView]:
        """Held at a transaction's LSO (read_committed only)."""
        if self.isolation_level != "read_committed":
            return []
        return [p for p in self.partitions if p.held_at_lso]


def describe_share_group(client: AdminClient, group: str) -> ShareGroupView:
    """The share view of one group (BrokerError when the group is unknown or not a share group)."""
    coordinator = _coordinator(client, group)
    view = _describe(client, coordinator, group)
    offsets = _offsets(client, coordinator, group)
    view.isolation_level = _isolation_level(client, coordinator, group)
    meta = client.metadata(sorted({t for t, _ in offsets} | {SHARE_STATE_TOPIC}))
    leaders = {p.partition: p.leader for p in meta.partitions}
    ends = client.partition_offsets({TopicPartition(t, p): leaders.get(TopicPartition(t, p), -1)
                                     for t, p in offsets})
    states = _persisted_states(client, group, offsets, leaders)
    for (topic, partition), (topic_id, start, lag, code) in sorted(offsets.items()):
        end = ends.get(TopicPartition(topic, partition))
        state = states.get((topic_id, partition))
        counts = _counts(state, start) if state is not None else {}
        view.partitions.append(SharePartitionView(
            topic, partition, start, lag, end.last_stable_offset if end else None,
            end.high_watermark if end else None, state_read=state is not None or start < 0,
            error=error_name(code) if code else None, **counts))
    return view


# ---- requests -----------------------------------------------------------------------------------------
def _call(client: AdminClient, request: Any, node: int | None, what: str) -> Any:
    try:
        return client.send(request, node)
    except kerrors.KafkaError as exc:
        raise BrokerError(f"{what} failed: {exc}", type(exc).__name__) from None


def _coordinator(client: AdminClient, group: str) -> int:
    from kafka.protocol.metadata import FindCoordinatorRequest

    r = _call(client, FindCoordinatorRequest(key_type=0, coordinator_keys=[group], key=group, min_version=1),
              None, f"FindCoordinator for group {group!r}")
    entry = r.coordinators[0] if getattr(r, "coordinators", None) else r
    if entry.error_code:
        raise BrokerError(f"no coordinator for group {group!r}", error_name(entry.error_code))
    return int(entry.node_id)


def _describe(client: AdminClient, node: int, group: str) -> ShareGroupView:
    from kafka_txn_broker.formats.messages import ShareGroupDescribeRequest

    r = _call(client, ShareGroupDescribeRequest(group_ids=[group], include_authorized_operations=False), node,
              f"ShareGroupDescribe of {group!r}")
    (g,) = r.groups
    if g.error_code:
        raise BrokerError(g.error_message or f"cannot describe share group {group!r}", error_name(g.error_code),
                          "check the group id: kafka-share-groups.sh --list shows the share groups")
    return ShareGroupView(group, g.group_state, len(g.members))


def _offsets(client: AdminClient, node: int, group: str) -> dict[tuple[str, int], tuple[uuid.UUID, int, int | None,
                                                                                      int]]:
    from kafka_txn_broker.formats.messages import DescribeShareGroupOffsetsRequest as R

    request = R(groups=[R.DescribeShareGroupOffsetsRequestGroup(group_id=group, topics=None)])
    r = _call(client, request, node, f"DescribeShareGroupOffsets of {group!r}")
    (g,) = r.groups
    if g.error_code:
        raise BrokerError(g.error_message or f"cannot describe the offsets of {group!r}", error_name(g.error_code))
    lag_served = r.API_VERSION >= 1
    return {(t.topic_name, p.partition_index): (t.topic_id, p.start_offset, p.lag if lag_served else None,
                                                p.error_code)
            for t in g.topics for p in t.partitions}


def _isolation_level(client: AdminClient, node: int, group: str) -> str | None:
    from kafka.protocol.admin import DescribeConfigsRequest

    GROUP_RESOURCE = 32
    res = DescribeConfigsRequest.DescribeConfigsResource(resource_type=GROUP_RESOURCE, resource_name=group,
                                                         configuration_keys=["share.isolation.level"])
    try:
        r = _call(client, DescribeConfigsRequest(resources=[res], include_synonyms=False,
                                                 include_documentation=False, min_version=1), node,
                  "DescribeConfigs of the group")
    except BrokerError:
        return None
    for result in r.results:
        if result.error_code == 0:
            for c in result.configs:
                if c.name == "share.isolation.level":
                    return str(c.value)
    return None


# ---- __share_group_state --------------------------------------------------------------------------------
def _persisted_states(client: AdminClient, group: str, offsets: dict[tuple[str, int], Any],
                      leaders: dict[TopicPartition, int]) -> dict[tuple[uuid.UUID, int], Any]:
    """The replayed state of each of the group's share-partitions, read from the `__share_group_state`
    partitions that hold them (partitionFor("group:topicId:partition"), as the share coordinator picks)."""
    from kafka_txn_broker.formats.partitioning import partition_for
    from kafka_txn_broker.formats.share_coordinator_records import coordinator_key

    count = sum(1 for tp in leaders if tp.topic == SHARE_STATE_TOPIC)
    if count == 0:
        return {}
    wanted = {(topic_id, p) for (_t, p), (topic_id, start, _lag, _code) in offsets.items() if start >= 0}
    needed = {partition_for(coordinator_key(group, tid, p), count) for tid, p in wanted}
    states: dict[Any, Any] = {}
    for index in sorted(needed):
        leader = leaders.get(TopicPartition(SHARE_STATE_TOPIC, index), -1)
        if leader >= 0:
            _replay_partition(client, leader, index, states)
    return {(tid, p): states[(g, tid, p)] for (g, tid, p) in states if g == group and (tid, p) in wanted}


def _replay_partition(client: AdminClient, leader: int, index: int, states: dict[Any, Any]) -> None:
    """Fetch one `__share_group_state` partition from its start to its high watermark into `states`."""
    from kafka.protocol.consumer import FetchRequest

    from kafka_txn_broker.formats.record_batch import iter_batches
    from kafka_txn_broker.formats.share_state import StagedUpdates, replay_batch

    T = FetchRequest.FetchTopic
    # From the log start: the share coordinator prunes the records replay no longer needs (DeleteRecords),
    # and a Fetch below the log start is OFFSET_OUT_OF_RANGE.
    tp = TopicPartition(SHARE_STATE_TOPIC, index)
    offset = max(client.offsets_for_time({tp: leader}, wire.EARLIEST).get(tp, 0), 0)
    staged = StagedUpdates()  # acknowledgements staged by open transactions (KIP-1289): not applied yet
    while True:
        request = FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=FETCH_BYTES, isolation_level=0,
                               session_id=0, session_epoch=-1, topics=[T(topic=SHARE_STATE_TOPIC, partitions=[
                                   T.FetchPartition(partition=index, current_leader_epoch=-1, fetch_offset=offset,
                                                    log_start_offset=-1, partition_max_bytes=FETCH_BYTES)])],
                               forgotten_topics_data=[], rack_id="", min_version=4, max_version=12)
        r = _call(client, request, leader, f"Fetch of {SHARE_STATE_TOPIC}-{index}")
        part = r.responses[0].partitions[0]
        if part.error_code:
            raise BrokerError(f"cannot read {SHARE_STATE_TOPIC}-{index}", error_name(part.error_code),
                              f"the share view reads {SHARE_STATE_TOPIC}: grant READ on it")
        data = bytes(part.records or b"")
        if not data:
            return
        for pos, header in iter_batches(data):
            # Records this reader does not know are skipped, as the share coordinator skips them.
            replay_batch(states, staged, data[pos:pos + header.size], header)
            offset = header.next_offset
        if offset >= part.high_watermark:
            return


def _counts(state: Any, start: int) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)
    for b in state.batches:
        first = max(b.first_offset, start)
        if first > b.last_offset:
            continue
        n = b.last_offset - first + 1
        name = {ACKNOWLEDGED: "acknowledged", ARCHIVED: "archived", AVAILABLE: "available"}.get(b.delivery_state)
        if name is not None:
            counts[name] += n
        counts["max_delivery_count"] = max(counts["max_delivery_count"], b.delivery_count)
    return dict(counts)
