"""partitionFor(key) of the internal topics: Java String.hashCode semantics."""

from __future__ import annotations

import pytest

from kafka_txn_broker.formats.partitioning import java_string_hash, partition_for


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
