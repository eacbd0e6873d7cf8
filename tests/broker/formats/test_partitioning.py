"""partitionFor(key) of the internal topics: Java String.hashCode semantics."""

from __future__ import annotations

import pytest

from kafka_txn_broker.formats.partitioning import hash_map_order, java_string_hash, partition_for, topic_partition_hash


def test_java_hash_overflow_and_min_value() -> None:
    assert java_string_hash("") == 0
    assert java_string_hash("polygenelubricants") == -(2**31)  # Integer.MIN_VALUE: Utils.abs -> 0
    assert partition_for("polygenelubricants", 50) == 0


# Values by hand from Java's definition (s[0]*31^(n-1) + ... over UTF-16 units; the emoji is two surrogates).
@pytest.mark.parametrize(("key", "hash_code"), [("a", 97), ("kafka", 101807910), ("é", 233), ("😀", 1772899)])
def test_hash_runs_over_utf16_code_units(key: str, hash_code: int) -> None:
    assert java_string_hash(key) == hash_code


@pytest.mark.parametrize(("tid", "partition"), [("my-unique-static-tid", 33), ("kafka-txn-0", 30)])
def test_transaction_state_partitions_of_formats_md(tid: str, partition: int) -> None:
    assert partition_for(tid, 50) == partition


# ListOffsets answers of Apache Kafka 4.4.0 (one node; partitions 0-4 asked in order): the partitions come back
# in java.util.HashMap order of their TopicPartitions (tests/external/fidelity recorded these).
@pytest.mark.parametrize(("topic", "answered"), [
    ("wm", [4, 3, 2, 1, 0]), ("lo-plain", [4, 2, 3, 0, 1]), ("alpha", [4, 2, 3, 0, 1]), ("orders", [0, 1, 2, 3, 4]),
    ("payments-7", [1, 2, 3, 4, 0]),
])
def test_hash_map_order_is_kafkas_list_offsets_order(topic: str, answered: list[int]) -> None:
    assert hash_map_order([topic_partition_hash(topic, p) for p in range(5)]) == answered


def test_list_offsets_topics_come_in_order_of_their_first_partition() -> None:
    from kafka_txn_broker.apis.list_offsets import in_kafka_order

    asked = [(name, [(0, 0, -1, 0, 0)]) for name in ("wm", "alpha", "orders", "x1")]
    assert [name for name, _ in in_kafka_order(asked)] == ["alpha", "wm", "orders", "x1"]  # as Kafka 4.4.0 answered


@pytest.mark.parametrize(("release", "hashed"), [("", True), ("4.4", True), ("4.0", True), ("3.3", False)])
def test_list_offsets_order_follows_the_emulated_release(release: str, hashed: bool) -> None:
    from kafka_txn_broker.apis.list_offsets import _hash_ordered

    assert _hash_ordered(release) is hashed  # Kafka 3.3.2 answered [0, 1] of `wm` in the request's order
