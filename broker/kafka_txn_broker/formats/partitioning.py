"""The internal topics' names, and where a group, transactional id or share-partition lives in them:
partitionFor(key) of its internal topic (Java hashCode). The names are defined here, once, for the broker
(kafka_txn_broker.metadata reuses them) and the tools alike."""

from __future__ import annotations

from functools import lru_cache

GROUP_TOPIC = "__consumer_offsets"
TXN_TOPIC = "__transaction_state"
SHARE_STATE_TOPIC = "__share_group_state"


# Every coordinator request hashes its id again, and a busy id's requests follow each other; a miss costs
# ~3 us. Bounded small: each entry keeps its id (~170 bytes), and ids of expired producers are never asked
# for again.
@lru_cache(maxsize=1024)
def java_string_hash(text: str) -> int:
    """Java's String.hashCode over UTF-16 code units, as a signed 32-bit int."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def java_abs(value: int) -> int:
    # Kafka's Utils.abs maps Integer.MIN_VALUE to 0 rather than overflowing.
    return 0 if value == -(1 << 31) else abs(value)


def partition_for(key: str, partitions: int) -> int:
    return java_abs(java_string_hash(key)) % partitions


def topic_partition_hash(topic: str, partition: int) -> int:
    """Java's TopicPartition.hashCode (31 * (31 + partition) + topic.hashCode()), as an unsigned 32-bit int."""
    return (31 * (31 + partition) + java_string_hash(topic)) & 0xFFFFFFFF


def hash_map_order(hashes: list[int]) -> list[int]:
    """The order in which a java.util.HashMap filled with keys of these hashes (unsigned 32-bit, inserted in
    this order, distinct keys) iterates them, as indexes into `hashes`: by bucket (the spread hash masked to
    the table size, which doubles from 16 whenever it is more than 3/4 full), ties in insertion order.

    Kafka answers some requests in such a map's order rather than the request's: ListOffsets groups its
    partitions by TopicPartition, so clients see the partitions (and the topics, by their first partition) in
    this order (checked against real brokers by tests/external/fidelity)."""
    mask = hash_map_mask(len(hashes))
    buckets = [(h ^ (h >> 16)) & mask for h in hashes]
    return sorted(range(len(hashes)), key=buckets.__getitem__)  # a stable sort: ties stay in insertion order


def hash_map_mask(entries: int) -> int:
    """The bucket mask of a java.util.HashMap holding `entries` keys (its table doubles from 16 past 3/4)."""
    size = 16
    while entries > size * 3 // 4:
        size *= 2
    return size - 1
