"""Requests and responses of the admin APIs, built from and parsed into our plain models.

Every message is one of kafka-python's schema-generated classes; the only change on the wire is
KIP-664's `TxnStartOffset` on WriteTxnMarkers, described below. Nothing here does I/O, so each
function is tested by encoding and decoding real message bytes.

## WriteTxnMarkers and KIP-664's TxnStartOffset

KIP-664 lets an admin abort name the offset where the transaction to abort begins, so the leader
writes the marker only if an open transaction of that producer starts exactly there (else
INVALID_TXN_STATE), and never aborts a newer transaction by accident. Apache Kafka never shipped the
field, and the WriteTxnMarkers JSON inside kafka-python 3.0.12 (v1-2) does not have it: the KIP placed it
per partition in a `Partitions` struct array that would replace `PartitionIndexes`, a layout change no
broker understands.

We therefore add it as a *tagged* field, which is the least invasive option: tagged fields are
skipped by any broker that does not know them (the Kafka protocol requires it), so the request stays
byte-compatible with every Kafka 3.x/4.x broker.

    WritableTxnMarkerTopic (inside Markers[].Topics[], WriteTxnMarkers v1+, flexible)
      TxnStartOffset  int64  tag 0  taggedVersions 1+  default -1 (absent)

WriteTxnMarkers v0 (brokers before Kafka 2.8) is not flexible and cannot carry it; the admin
client then sends v0 without the tag, exactly as upstream's tool does.

Meaning: every partition listed in that topic entry must have an open transaction of the marker's
producer starting at TxnStartOffset. The admin client always sends one partition per topic entry
when it sets the tag.

KIP-664 also proposed CoordinatorEpoch -1 for admin markers. We send the producer's coordinator epoch
from DescribeProducers instead (clamped to >= 0, as upstream's tool does): a broker that does not know
the tag fences markers whose coordinator epoch is below the one it stored, so -1 would fail on every
real Kafka cluster. `ADMIN_COORDINATOR_EPOCH` names the KIP's value for brokers that want to test it.

A broker decoding with kafka-python's stock class finds the value in
`topic.unknown_tags["_0"]` (8 bytes, big-endian signed); `WriteTxnMarkersRequest` below decodes it
as `topic.txn_start_offset`.
"""

from __future__ import annotations

import struct
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from kafka.protocol.admin import ListGroupsRequest
from kafka.protocol.admin.transactions import (
    DescribeProducersRequest,
    DescribeTransactionsRequest,
    ListTransactionsRequest,
)
from kafka.protocol.api_message import ApiMessage
from kafka.protocol.consumer import FetchRequest, OffsetFetchRequest
from kafka.protocol.consumer.offsets import ListOffsetsRequest
from kafka.protocol.metadata import FindCoordinatorRequest
from kafka.protocol.producer.transaction import InitProducerIdRequest

from kafka_txn_broker.formats.messages import kafka_python
from kafka_txn_broker.formats.messages.plain import ListOffsetsAnswer
from kafka_txn_broker.formats.messages.plain_metadata import MetadataAnswer
from kafka_txn_tools.connection import plain_request
from kafka_txn_tools.errors import error_name
from kafka_txn_tools.models import (
    BrokerInfo,
    ClusterInfo,
    OffsetRead,
    PartitionInfo,
    PartitionProducers,
    ProducerState,
    ScanError,
    TopicPartition,
    TransactionDescription,
    TransactionListing,
)

TXN_START_OFFSET_TAG = 0
ADMIN_COORDINATOR_EPOCH = -1  # KIP-664: marks a marker as written by an admin, not a coordinator


# kafka-python builds the class from its JSON schema, read with an API Python 3.11/3.12 flag as deprecated.
with kafka_python.schema_loading():

    class WriteTxnMarkersRequest(ApiMessage):
        """kafka-python's WriteTxnMarkersRequest plus the KIP-664 tagged field (see the module docstring).

        The class name must stay `WriteTxnMarkersRequest`: kafka-python loads the message JSON by class
        name, then calls `json_patch`, its documented hook for adjusting a schema.
        """

        @classmethod
        def json_patch(cls, json: dict[str, Any]) -> dict[str, Any]:
            markers = next(f for f in json["fields"] if f["name"] == "Markers")
            topics = next(f for f in markers["fields"] if f["name"] == "Topics")
            if not any(f["name"] == "TxnStartOffset" for f in topics["fields"]):
                topics["fields"].append({
                    "name": "TxnStartOffset", "type": "int64", "versions": "1+",
                    "taggedVersions": "1+", "tag": TXN_START_OFFSET_TAG, "default": "-1",
                    "about": "KIP-664: the start offset of the open transaction the marker must complete.",
                })
            return json


def decode_txn_start_offset(unknown_tags: dict[str, bytes] | None) -> int:
    """TxnStartOffset from a topic entry decoded by kafka-python's stock class (-1 when absent)."""
    raw = (unknown_tags or {}).get(f"_{TXN_START_OFFSET_TAG}")
    return struct.unpack(">q", raw)[0] if raw is not None and len(raw) == 8 else -1


def _by_topic(partitions: Iterable[TopicPartition]) -> dict[str, list[int]]:
    grouped: dict[str, list[int]] = defaultdict(list)
    for tp in partitions:
        grouped[tp.topic].append(tp.partition)
    return grouped


# --- Metadata --------------------------------------------------------------------------------

def metadata_request(topics: Sequence[str] | None) -> Any:
    """Metadata of `topics`, or of every topic (None), as plain values (connection/plain_request.py): a cluster of
    thousands of partitions answers with thousands of rows."""
    return plain_request.MetadataRequest(None if topics is None else list(topics))


def parse_metadata(response: MetadataAnswer) -> ClusterInfo:
    brokers = tuple(sorted((BrokerInfo(node, host, port, rack) for node, host, port, rack in response.brokers),
                           key=lambda b: b.node_id))
    partitions: list[PartitionInfo] = []
    errors: list[tuple[str, str]] = []
    for code, name, internal, rows in response.topics:
        if code:
            errors.append((name or "(unnamed)", error_name(code)))
            continue
        topic = name or ""
        partitions.extend(PartitionInfo(TopicPartition(topic, index), leader, replicas, isr, internal, epoch)
                          for _error, index, leader, epoch, replicas, isr in rows)
    partitions.sort()  # by topic and partition: a partition is in one answer once
    return ClusterInfo(brokers, tuple(partitions), response.controller_id, tuple(errors), response.cluster_id or None)


# --- DescribeProducers -----------------------------------------------------------------------

def describe_producers_request(partitions: Iterable[TopicPartition]) -> Any:
    Topic = DescribeProducersRequest.TopicRequest
    return DescribeProducersRequest(
        topics=[Topic(name=t, partition_indexes=ps) for t, ps in _by_topic(partitions).items()])


def parse_describe_producers(
    response: Any, broker_id: int, open_only: bool = False,
) -> tuple[list[PartitionProducers], list[ScanError]]:
    """Producer state per partition; `open_only` keeps only producers with an open transaction and
    skips partitions without one (a cluster-wide scan builds objects for the few that matter)."""
    results: list[PartitionProducers] = []
    errors: list[ScanError] = []
    for topic in response.topics:
        name = topic.name
        for p in topic.partitions:
            if p.error_code:
                tp = TopicPartition(name, p.partition_index)
                err = error_name(p.error_code)
                errors.append(ScanError(err, p.error_message or f"{tp} on broker {broker_id}: {err}",
                                        broker_id=broker_id, partition=tp, api="DescribeProducers",
                                        code=p.error_code, partitions=1))
                continue
            active = p.active_producers
            if open_only:
                active = [a for a in active if a.current_txn_start_offset >= 0]
                if not active:
                    continue
            producers = tuple(
                ProducerState(a.producer_id, a.producer_epoch, a.last_sequence, a.last_timestamp,
                              a.coordinator_epoch, a.current_txn_start_offset)
                for a in active)
            results.append(PartitionProducers(TopicPartition(name, p.partition_index), broker_id, producers))
    return results, errors


# --- ListTransactions ------------------------------------------------------------------------

def list_transactions_request(
    states: Sequence[str] = (),
    producer_ids: Sequence[int] = (),
    duration_ms: int | None = None,
    pattern: str | None = None,
) -> Any:
    """A request whose minimum version carries every filter given (v1: duration, v2: pattern)."""
    kwargs: dict[str, Any] = {"state_filters": list(states), "producer_id_filters": list(producer_ids)}
    min_version = 0
    if duration_ms is not None:
        kwargs["duration_filter"] = int(duration_ms)
        min_version = 1
    if pattern is not None:
        kwargs["transactional_id_pattern"] = pattern
        min_version = 2
    return ListTransactionsRequest(min_version=min_version, **kwargs)


def parse_list_transactions(response: Any, broker_id: int) -> tuple[list[TransactionListing], str | None]:
    """Listings and the error name (None on success)."""
    if response.error_code:
        return [], error_name(response.error_code)
    return [TransactionListing(t.transactional_id, t.producer_id, t.transaction_state, broker_id)
            for t in response.transaction_states], None


# --- FindCoordinator -------------------------------------------------------------------------

TRANSACTION_KEY_TYPE = 1


def find_coordinators_request(transactional_ids: Sequence[str]) -> Any:
    """Batched lookup (FindCoordinator v4+, Kafka 3.0+)."""
    return FindCoordinatorRequest(key_type=TRANSACTION_KEY_TYPE, coordinator_keys=list(transactional_ids),
                                  min_version=4)


def find_coordinator_request_single(transactional_id: str) -> Any:
    return FindCoordinatorRequest(key=transactional_id, key_type=TRANSACTION_KEY_TYPE, max_version=3)


def parse_find_coordinators(response: Any) -> tuple[dict[str, int], dict[str, str]]:
    """key -> coordinator node id, and key -> error name."""
    found: dict[str, int] = {}
    failed: dict[str, str] = {}
    for c in response.coordinators:
        if c.error_code:
            failed[c.key] = error_name(c.error_code)
        else:
            found[c.key] = c.node_id
    return found, failed


def parse_find_coordinator_single(response: Any, key: str) -> tuple[dict[str, int], dict[str, str]]:
    if response.error_code:
        return {}, {key: error_name(response.error_code)}
    return {key: response.node_id}, {}


# --- DescribeTransactions --------------------------------------------------------------------

def describe_transactions_request(transactional_ids: Sequence[str]) -> Any:
    return DescribeTransactionsRequest(transactional_ids=list(transactional_ids))


def parse_describe_transactions(
    response: Any, coordinator_id: int
) -> tuple[dict[str, TransactionDescription], dict[str, str]]:
    """Descriptions by id, and id -> error name (TRANSACTIONAL_ID_NOT_FOUND means unknown or Dead)."""
    found: dict[str, TransactionDescription] = {}
    failed: dict[str, str] = {}
    for t in response.transaction_states:
        if t.error_code:
            failed[t.transactional_id] = error_name(t.error_code)
            continue
        partitions = frozenset(TopicPartition(td.topic, p) for td in t.topics for p in td.partitions)
        found[t.transactional_id] = TransactionDescription(
            t.transactional_id, coordinator_id, t.transaction_state, t.producer_id, t.producer_epoch,
            t.transaction_timeout_ms, t.transaction_start_time_ms, partitions)
    return found, failed


# --- WriteTxnMarkers -------------------------------------------------------------------------

def abort_marker_request(
    partition: TopicPartition, producer_id: int, producer_epoch: int, coordinator_epoch: int,
    start_offset: int | None, commit: bool = False,
) -> Any:
    """WriteTxnMarkers(ABORT, or COMMIT when `commit`) for one partition; TxnStartOffset set when start_offset
    is given."""
    Marker = WriteTxnMarkersRequest.WritableTxnMarker
    topic_kwargs: dict[str, Any] = {"name": partition.topic, "partition_indexes": [partition.partition]}
    if start_offset is not None:
        topic_kwargs["txn_start_offset"] = start_offset
    marker = Marker(
        producer_id=producer_id, producer_epoch=producer_epoch, transaction_result=commit,
        topics=[Marker.WritableTxnMarkerTopic(**topic_kwargs)], coordinator_epoch=coordinator_epoch)
    # No minimum version: brokers before 2.8 take only v0, which simply cannot carry the tag.
    return WriteTxnMarkersRequest(markers=[marker])


def parse_write_txn_markers(response: Any, partition: TopicPartition) -> str | None:
    """The partition's error name, or None when the marker was written."""
    for marker in response.markers:
        for topic in marker.topics:
            for p in topic.partitions:
                if topic.name == partition.topic and p.partition_index == partition.partition:
                    return error_name(p.error_code) if p.error_code else None
    return "UNKNOWN_SERVER_ERROR"  # the broker did not answer for the partition we asked about


# --- InitProducerId (KIP-939 force-terminate) --------------------------------------------------

def fence_request(transactional_id: str, timeout_ms: int) -> Any:
    """InitProducerId with producer id/epoch -1: bumps the epoch, fencing the producer and aborting."""
    return InitProducerIdRequest(transactional_id=transactional_id, transaction_timeout_ms=timeout_ms,
                                 producer_id=-1, producer_epoch=-1)


def parse_fence(response: Any) -> tuple[int, int, str | None]:
    if response.error_code:
        return -1, -1, error_name(response.error_code)
    return response.producer_id, response.producer_epoch, None


# --- ElectLeaders, AlterPartitionReassignments (move-coordinator) ------------------------------------

def elect_preferred_request(tp: TopicPartition, timeout_ms: int) -> Any:
    from kafka.protocol.admin import ElectLeadersRequest

    return ElectLeadersRequest(election_type=0, timeout_ms=timeout_ms, topic_partitions=[
        ElectLeadersRequest.TopicPartitions(topic=tp.topic, partitions=[tp.partition])])


def parse_elect(response: Any, tp: TopicPartition) -> tuple[str | None, str | None]:
    """(error name, message) for the partition; (None, None) when elected."""
    top = getattr(response, "error_code", 0)
    if top:
        return error_name(top), None
    for t in response.replica_election_results:
        for p in t.partition_result:
            if (t.topic, p.partition_id) == (tp.topic, tp.partition) and p.error_code:
                return error_name(p.error_code), p.error_message
    return None, None


def reassign_request(tp: TopicPartition, replicas: Sequence[int], timeout_ms: int) -> Any:
    from kafka.protocol.admin import AlterPartitionReassignmentsRequest as A

    return A(timeout_ms=timeout_ms, topics=[A.ReassignableTopic(name=tp.topic, partitions=[
        A.ReassignableTopic.ReassignablePartition(partition_index=tp.partition, replicas=list(replicas))])])


def parse_reassign(response: Any, tp: TopicPartition) -> tuple[str | None, str | None]:
    if response.error_code:
        return error_name(response.error_code), response.error_message
    for t in response.responses:
        for p in t.partitions:
            if (t.name, p.partition_index) == (tp.topic, tp.partition) and p.error_code:
                return error_name(p.error_code), p.error_message
    return None, None


# --- ListOffsets -----------------------------------------------------------------------------

LATEST = -1
EARLIEST = -2  # the log start offset
READ_UNCOMMITTED, READ_COMMITTED = 0, 1


def list_offsets_request(partitions: Iterable[TopicPartition], isolation_level: int, timestamp: int = LATEST) -> Any:
    """Latest offset per partition: the high watermark (READ_UNCOMMITTED) or the LSO (READ_COMMITTED); with
    a `timestamp` (ms), the first offset whose record is at least that recent (-1: none)."""
    Topic = ListOffsetsRequest.ListOffsetsTopic
    Partition = Topic.ListOffsetsPartition
    topics = [Topic(name=t, partitions=[Partition(partition_index=p, timestamp=timestamp) for p in ps])
              for t, ps in _by_topic(partitions).items()]
    # v2 is the first version with an isolation level.
    return ListOffsetsRequest(replica_id=-1, isolation_level=isolation_level, topics=topics, min_version=2)


def parse_list_offsets(response: Any) -> tuple[dict[TopicPartition, int], dict[TopicPartition, str]]:
    offsets: dict[TopicPartition, int] = {}
    failed: dict[TopicPartition, str] = {}
    for topic in response.topics:
        for p in topic.partitions:
            tp = TopicPartition(topic.name, p.partition_index)
            if p.error_code:
                failed[tp] = error_name(p.error_code)
            else:
                offsets[tp] = p.offset
    return offsets, failed


def latest_offsets_request(epochs: Mapping[str, Sequence[tuple[int, int]]], isolation_level: int) -> Any:
    """find-hanging's first pass on one leader: ListOffsets latest under `isolation_level` (read_uncommitted:
    the high watermark; read_committed: the LSO). `epochs`: topic -> [(partition, its leader epoch, or -1)],
    named as CurrentLeaderEpoch (v4+): a leader at another epoch answers FENCED_LEADER_EPOCH or
    UNKNOWN_LEADER_EPOCH instead of its offset. Written and read as plain values (connection/plain_request.py):
    a leader may lead thousands of partitions."""
    topics = [(t, [(p, e, LATEST) for p, e in ps]) for t, ps in epochs.items()]
    return plain_request.ListOffsetsRequest(topics, isolation_level)


def parse_latest_offsets(response: ListOffsetsAnswer) -> dict[TopicPartition, OffsetRead]:
    """Per partition: the offset, the leader epoch it was read at (-1 before v4), or the error."""
    out: dict[TopicPartition, OffsetRead] = {}
    for name, partitions in response.topics:
        for index, code, _timestamp, offset, epoch in partitions:
            out[TopicPartition(name, index)] = OffsetRead(None, epoch, error_name(code)) if code else \
                OffsetRead(offset, epoch)
    return out


# --- Fetch (reading __transaction_state) ---------------------------------------------------------

# v12 is the last version that names topics (v13+ use topic ids); Kafka 4.x serves v4 and up.
FETCH_VERSION = 12


def fetch_request(tp: TopicPartition, offset: int, max_bytes: int) -> Any:
    """One partition from `offset`, as a consumer (replica id -1), read_uncommitted, without waiting."""
    Topic = FetchRequest.FetchTopic
    Partition = Topic.FetchPartition
    return FetchRequest(
        replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=max_bytes, isolation_level=READ_UNCOMMITTED,
        topics=[Topic(topic=tp.topic, partitions=[Partition(partition=tp.partition, fetch_offset=offset,
                                                            partition_max_bytes=max_bytes)])],
        max_version=FETCH_VERSION)


def parse_fetch(response: Any, tp: TopicPartition) -> tuple[bytes, int, str | None]:
    """(record bytes, high watermark, error name or None) of the one partition asked for."""
    if response.error_code:
        return b"", -1, error_name(response.error_code)
    for topic in response.responses:
        for p in topic.partitions:
            if topic.topic == tp.topic and p.partition_index == tp.partition:
                if p.error_code:
                    return b"", -1, error_name(p.error_code)
                return bytes(p.records or b""), p.high_watermark, None
    return b"", -1, "UNKNOWN_SERVER_ERROR"


# --- ListGroups, OffsetFetch (who is held back) -----------------------------------------------------

GROUP_KEY_TYPE = 0
SHARE_GROUP_TYPE = "share"


def list_groups_request() -> Any:
    return ListGroupsRequest()


def parse_list_groups(response: Any) -> tuple[list[tuple[str, str]], str | None]:
    """(group id, type) pairs - the type is KIP-848's GroupType (v5+: classic, consumer, share, streams),
    else the protocol type - and the error name (None on success)."""
    if response.error_code:
        return [], error_name(response.error_code)
    out = []
    for g in response.groups:
        kind = getattr(g, "group_type", None) or g.protocol_type or "classic"
        out.append((g.group_id, kind.lower()))
    return out, None


def find_group_coordinators_request(group_ids: Sequence[str]) -> Any:
    return FindCoordinatorRequest(key_type=GROUP_KEY_TYPE, coordinator_keys=list(group_ids), min_version=4)


def offset_fetch_request(group_ids: Sequence[str], partitions: Iterable[TopicPartition]) -> Any:
    """Committed offsets of several groups on `partitions` (OffsetFetch v8+, Kafka 3.0+; v10 names topics by
    id, so at most v9)."""
    Group = OffsetFetchRequest.OffsetFetchRequestGroup
    Topic = Group.OffsetFetchRequestTopics
    topics = [Topic(name=t, partition_indexes=ps) for t, ps in _by_topic(partitions).items()]
    return OffsetFetchRequest(groups=[Group(group_id=g, topics=topics) for g in group_ids], require_stable=False,
                              min_version=8, max_version=9)


def offset_fetch_request_single(group_id: str, partitions: Iterable[TopicPartition]) -> Any:
    """The same for one group (brokers before 3.0)."""
    Topic = OffsetFetchRequest.OffsetFetchRequestTopic
    topics = [Topic(name=t, partition_indexes=ps) for t, ps in _by_topic(partitions).items()]
    return OffsetFetchRequest(group_id=group_id, topics=topics, max_version=7)


def parse_offset_fetch(response: Any, group_id: str | None = None
                       ) -> tuple[dict[str, dict[TopicPartition, int]], dict[str, str]]:
    """group -> {partition: committed offset} (partitions without one left out), and group -> error name."""
    groups = getattr(response, "groups", None)
    if not groups:  # a single-group answer (v7 and older)
        assert group_id is not None
        groups = [_SingleGroup(group_id, response.error_code, response.topics)]
    return _offsets_by_group(groups, lambda topic: topic.name, lambda _t, p: p.committed_offset)


def _offsets_by_group(groups: Iterable[Any], topic_name: Callable[[Any], str], offset: Callable[[Any, Any], int]
                      ) -> tuple[dict[str, dict[TopicPartition, int]], dict[str, str]]:
    """The per-group answers of OffsetFetch and DescribeShareGroupOffsets, which differ only in field names:
    group -> {partition: offset(topic, partition)} (partitions without an offset, -1, or with an error left out),
    and group -> error name."""
    offsets: dict[str, dict[TopicPartition, int]] = {}
    failed: dict[str, str] = {}
    for g in groups:
        if g.error_code:
            failed[g.group_id] = error_name(g.error_code)
            continue
        found = offsets.setdefault(g.group_id, {})
        for topic in g.topics:
            for p in topic.partitions:
                if not p.error_code and (value := offset(topic, p)) >= 0:
                    found[TopicPartition(topic_name(topic), p.partition_index)] = value
    return offsets, failed


class _SingleGroup:
    def __init__(self, group_id: str, error_code: int, topics: Any) -> None:
        self.group_id, self.error_code, self.topics = group_id, error_code, topics


# --- DescribeShareGroupOffsets, DescribeConfigs of share groups (share groups held back) -------------------

DESCRIBE_SHARE_GROUP_OFFSETS_KEY = 90  # KIP-932, Kafka 4.1+
GROUP_RESOURCE = 32
SHARE_ISOLATION = "share.isolation.level"


def share_offsets_request(group_ids: Sequence[str], partitions: Iterable[TopicPartition]) -> Any:
    """The start offset (SPSO) of each share group on `partitions`."""
    from kafka_txn_broker.formats.messages import DescribeShareGroupOffsetsRequest as R

    Group = R.DescribeShareGroupOffsetsRequestGroup
    Topic = Group.DescribeShareGroupOffsetsRequestTopic
    topics = [Topic(topic_name=t, partitions=ps) for t, ps in _by_topic(partitions).items()]
    return R(groups=[Group(group_id=g, topics=topics) for g in group_ids])


def parse_share_offsets(response: Any, ends: Mapping[TopicPartition, int | None] | None = None,
                        ) -> tuple[dict[str, dict[TopicPartition, int]], dict[str, str]]:
    """group -> {partition: position} (partitions it has no state for left out), group -> error name.

    The position is the start offset (SPSO) moved past the records already delivered above it, where that
    can be told: Kafka persists the SPSO lazily (one state write behind), so a group that has acknowledged
    every record below a partition's LSO can still answer an SPSO below it. DescribeShareGroupOffsets v1
    (KIP-1226) also answers the lag, which Kafka counts to the high watermark: HW - SPSO - records delivered
    above the SPSO. Given the partition's high watermark in `ends` (read before this answer, so never newer
    than the broker's), HW - lag is the SPSO plus those records: a position never ahead of the group's."""
    served = getattr(response, "API_VERSION", 0) >= 1

    def position(topic: Any, p: Any) -> int:
        end = (ends or {}).get(TopicPartition(topic.topic_name, p.partition_index))
        lag = getattr(p, "lag", -1) if served else -1
        if p.start_offset < 0 or end is None or lag is None or lag < 0:
            return int(p.start_offset)
        return max(int(p.start_offset), end - int(lag))

    return _offsets_by_group(response.groups, lambda topic: topic.topic_name, position)


def share_isolation_request(group_ids: Sequence[str]) -> Any:
    from kafka.protocol.admin import DescribeConfigsRequest

    Resource = DescribeConfigsRequest.DescribeConfigsResource
    return DescribeConfigsRequest(resources=[Resource(resource_type=GROUP_RESOURCE, resource_name=g,
                                                      configuration_keys=[SHARE_ISOLATION]) for g in group_ids],
                                  include_synonyms=False, include_documentation=False, min_version=1)


def parse_share_isolation(response: Any) -> dict[str, str]:
    """group -> its share.isolation.level (groups whose config could not be read left out)."""
    return {r.resource_name: str(c.value) for r in response.results if not r.error_code
            for c in r.configs if c.name == SHARE_ISOLATION and c.value is not None}
