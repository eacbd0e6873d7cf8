"""The Metadata request written and its answer read as plain values, without kafka-python's classes (see plain.py):
a client's read of the whole cluster, thousands of partitions, where kafka-python's generated decoder spent
32 ms building an object per partition of a 10,000-partition answer and reading them back took 17 ms more
(measured 2026-12-07). kafka_txn_tools/connection/plain_request.py sends it through kafka-python's connections.
The bytes equal kafka-python's for the same content at every version (tests/broker/formats/test_plain_metadata.py).

## MetadataRequest (v1-v13; from Kafka's published field list)

    Topics[] (null: all topics): TopicId uuid (v10+), Name string (nullable v10+)
    AllowAutoTopicCreation bool (v4+)
    IncludeClusterAuthorizedOperations bool (v8-v10)
    IncludeTopicAuthorizedOperations bool (v8+)

## MetadataResponse (v1-v13)

    ThrottleTimeMs int32 (v3+)
    Brokers[]: NodeId int32, Host string, Port int32, Rack nullable string
    ClusterId nullable string (v2+)
    ControllerId int32
    Topics[]:
      ErrorCode int16, Name string (nullable v12+), TopicId uuid (v10+), IsInternal bool
      Partitions[]: ErrorCode int16, PartitionIndex int32, LeaderId int32, LeaderEpoch int32 (v7+),
                    ReplicaNodes int32[], IsrNodes int32[], OfflineReplicas int32[] (v5+)
      TopicAuthorizedOperations int32 (v8+)
    ClusterAuthorizedOperations int32 (v8-v10)
    ErrorCode int16 (v13+)

Flexible from v9 (compact arrays and strings, a tagged-field section after each struct and at the end).

Not thread-safe by design: a request is written, and its answer read, by one thread.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from kafka_txn_broker.formats.bytes import decode_uvarint
from kafka_txn_broker.formats.messages.plain import _length, _read_length, _skip_tags, _string

METADATA_KEY = 3
FLEXIBLE_FROM = 9
_INT32 = struct.Struct(">i")
_INT16 = struct.Struct(">h")
_PARTITION = struct.Struct(">hii")  # error code, partition index, leader id
_PARTITION_EPOCH = struct.Struct(">hiii")  # ... and the leader epoch (v7+)
_NO_TOPIC_ID = bytes(16)
_NODES = [struct.Struct(f">{n}i") for n in range(16)]  # arrays of node ids, by length

# One broker: (node id, host, port, rack).
Broker = tuple[int, str, int, str | None]
# One partition: (error code, partition index, leader id, leader epoch or -1 before v7, replicas, in-sync replicas).
Partition = tuple[int, int, int, int, tuple[int, ...], tuple[int, ...]]


@dataclass
class MetadataAnswer:
    """A MetadataResponse: its brokers, cluster id and controller, and per topic (error code, name, is internal,
    partitions)."""

    brokers: list[Broker] = field(default_factory=list)
    cluster_id: str | None = None
    controller_id: int = -1
    topics: list[tuple[int, str | None, bool, list[Partition]]] = field(default_factory=list)
    error_code: int = 0


def _partitions(view: memoryview, pos: int, count: int, version: int) -> tuple[list[Partition], int]:
    """`count` partitions from `pos`: the hot loop (one pass per partition of the cluster), written flat."""
    flexible = version >= FLEXIBLE_FROM
    with_epoch = version >= 7
    head = _PARTITION_EPOCH if with_epoch else _PARTITION
    unpack_head, head_size = head.unpack_from, head.size
    arrays = 3 if version >= 5 else 2  # replicas, in-sync replicas (, offline replicas)
    rows: list[Partition] = []
    for _ in range(count):
        fields = unpack_head(view, pos)
        pos += head_size
        nodes: list[tuple[int, ...]] = []
        for _array in range(arrays):
            if flexible and view[pos] < 0x80:  # a compact length of one byte: every array of node ids in practice
                n = view[pos] - 1
                pos += 1
            else:
                n, pos = _read_length(view, pos, flexible)
            if n < 0:
                raise ValueError("a null array of node ids")
            unpack = _NODES[n] if n < len(_NODES) else struct.Struct(f">{n}i")
            nodes.append(unpack.unpack_from(view, pos))
            pos += 4 * n
        if flexible:
            pos = pos + 1 if view[pos] == 0 else _skip_tags(view, pos)
        if with_epoch:
            error, index, leader, epoch = fields
        else:
            (error, index, leader), epoch = fields, -1
        rows.append((error, index, leader, epoch, nodes[0], nodes[1]))
    return rows, pos


def metadata_request_body(version: int, topics: list[str] | None) -> bytes:
    """A MetadataRequest's body at `version` (1-13): `topics` by name, or None for every topic; no topic is
    created and no authorized operations are asked for."""
    flexible = version >= FLEXIBLE_FROM
    out = bytearray()
    if topics is None:
        out += b"\x00" if flexible else _INT32.pack(-1)
    else:
        _length(out, len(topics), flexible)
        for name in topics:
            if version >= 10:
                out += _NO_TOPIC_ID
            _string(out, name, flexible)
            if flexible:
                out.append(0)
    if version >= 4:
        out.append(0)  # allow auto topic creation: false
    if 8 <= version <= 10:
        out.append(0)  # include cluster authorized operations: false
    if version >= 8:
        out.append(0)  # include topic authorized operations: false
    if flexible:
        out.append(0)
    return bytes(out)


def read_metadata_response(data: bytes, version: int) -> MetadataAnswer:
    """A MetadataResponse's body (after its header) at `version` (1-13). ValueError (or struct.error) on bytes
    that do not read as one."""
    try:
        return _Reader(data, version).answer()
    except IndexError:
        raise ValueError("Metadata response ends too soon") from None


class _Reader:
    def __init__(self, data: bytes, version: int) -> None:
        self.view = memoryview(data)
        self.pos = 0
        self.version = version
        self.flexible = version >= FLEXIBLE_FROM

    def answer(self) -> MetadataAnswer:
        out = MetadataAnswer()
        if self.version >= 3:
            self.int32()  # throttle time
        for _ in range(self.length()):
            node_id, host, port = self.int32(), self.string(), self.int32()
            rack = self.nullable_string()
            self.tags()
            out.brokers.append((node_id, host, port, rack))
        if self.version >= 2:
            out.cluster_id = self.nullable_string()
        out.controller_id = self.int32()
        for _ in range(self.length()):
            out.topics.append(self.topic())
        if 8 <= self.version <= 10:
            self.int32()  # cluster authorized operations
        if self.version >= 13:
            (out.error_code,) = _INT16.unpack_from(self.view, self.pos)
            self.pos += 2
        self.tags()
        if self.pos != len(self.view):
            raise ValueError("Metadata response has bytes after its end")
        return out

    def topic(self) -> tuple[int, str | None, bool, list[Partition]]:
        (error,) = _INT16.unpack_from(self.view, self.pos)
        self.pos += 2
        name = self.nullable_string() if self.version >= 12 else self.string()
        if self.version >= 10:
            self.pos += 16  # topic id
        internal = self.view[self.pos] != 0
        self.pos += 1
        count = self.length()
        partitions, self.pos = _partitions(self.view, self.pos, count, self.version)
        if self.version >= 8:
            self.int32()  # topic authorized operations
        self.tags()
        return error, name, internal, partitions

    def int32(self) -> int:
        (value,) = _INT32.unpack_from(self.view, self.pos)
        self.pos += 4
        return value

    def length(self) -> int:
        n, self.pos = _read_length(self.view, self.pos, self.flexible)
        return n

    def string(self) -> str:
        found = self.nullable_string()
        if found is None:
            raise ValueError("a null string where the schema allows none")
        return found

    def nullable_string(self) -> str | None:
        if self.flexible:
            n, self.pos = decode_uvarint(self.view, self.pos)
            n -= 1
        else:
            (n,) = _INT16.unpack_from(self.view, self.pos)
            self.pos += 2
        if n < 0:
            return None
        if self.pos + n > len(self.view):
            raise ValueError("a string past the end")
        text = str(self.view[self.pos:self.pos + n], "utf-8")
        self.pos += n
        return text

    def tags(self) -> None:
        if self.flexible:
            self.pos = _skip_tags(self.view, self.pos)
