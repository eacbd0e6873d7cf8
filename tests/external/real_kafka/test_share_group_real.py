"""A share group (KIP-932) held at a hanging transaction's LSO on real Apache Kafka, as production makes it: a
read_committed share group consumes a partition whose LSO a late write after an abort holds. Its members get
every record below the LSO and none of those past it, however long they poll; `kafka-txn find-hanging` lists the
group on the partition's row (type share, at the LSO, lagging by exactly the held records), and the row's
printed abort, run verbatim with --yes, frees the partition: the LSO reaches the high watermark (librdkafka's
ListOffsets) and the same member then gets the records past the marker, not the aborted late write.

Kafka 4.4.0 serves share groups on a freshly formatted cluster (its default features for 4.4-IV2 include
share.version=2; `StorageTool version-mapping` prints them), so the session cluster needs no extra config.
It persists a share-partition's start offset one state write behind, so the group's start offset alone
stays below the LSO; the tool reads its position from the start offset and the lag (counted to the high
watermark, as upstream's kafka-share-groups.sh shows below).
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.e2e.cli_support import kafka_txn
from tests.e2e.share_support import produce, set_group_configs, share_consumer
from tests.external.real_kafka.conftest import RELEASE
from tests.external.real_kafka.test_find_hanging_real import BACKDATE_MS, clear_by_printed_commands, only_row, scan
from tests.support.real_kafka import KafkaCluster, UpstreamTool
from tests.support.real_kafka.hang import stage_hangs
from tests.support.real_kafka.staging import Release, offsets, ready_topic, warm_up

SHARE_GROUP_COMMAND = "org.apache.kafka.tools.consumer.group.ShareGroupCommand"
BEFORE, AFTER = 5, 3  # committed records below the hang, and produced past it


def poll_values(member: Any, want: int, seconds: float) -> list[bytes]:
    """Poll until `want` records came or `seconds` passed; the values, in order."""
    got: list[bytes] = []
    deadline = time.monotonic() + seconds
    while len(got) < want and time.monotonic() < deadline:
        got += [m.value() for m in member.poll(0.5) if m.error() is None]
    return got


def upstream_lag(kafka_libs: Any, bs: str, group: str) -> tuple[int, int]:
    """(start offset, lag) of the group's only share-partition, as kafka-share-groups.sh --describe prints them."""
    run = UpstreamTool(kafka_libs, main_class=SHARE_GROUP_COMMAND).run("--bootstrap-server", bs, "--describe",
                                                                      "--group", group)
    assert run.returncode == 0, run.stdout + run.stderr
    header, row = [line.split() for line in run.stdout.splitlines() if line.strip()]
    return int(row[header.index("START-OFFSET")]), int(row[header.index("LAG")])


def test_a_read_committed_share_group_held_at_a_hang_is_listed_and_freed_by_the_printed_abort(
        real_kafka: KafkaCluster, kafka_libs: Any) -> None:
    if not Release(RELEASE).share_groups:
        pytest.skip(f"Apache Kafka {RELEASE} has no share groups (KIP-932: 4.1 and later)")
    bs = real_kafka.bootstrap_servers
    warm_up(bs)
    topic = ready_topic(bs, f"real-share-{time.monotonic_ns() % 10**8}", 1)
    group = f"{topic}-readers"
    produce(bs, topic, BEFORE, 1, prefix="before")
    [hang] = stage_hangs(bs, topic, [0], f"{topic}-txn", backdate_ms=BACKDATE_MS)
    produce(bs, topic, AFTER, 1, prefix="after")
    held = offsets(bs, topic, 0)
    assert held.lso == hang.start_offset and held.high_watermark == hang.start_offset + 1 + AFTER

    set_group_configs(bs, group, share_auto_offset_reset="earliest", share_isolation_level="read_committed")
    member = share_consumer(bs, group, [topic])
    try:
        got = poll_values(member, BEFORE, 60)
        assert got == [b"before%d" % i for i in range(BEFORE)]
        assert poll_values(member, 1, 3) == []  # nothing past the LSO, however long it polls
        member.commit_sync(10)  # its acknowledgements
        start, lag = upstream_lag(kafka_libs, bs, group)
        assert start < held.lso  # the persisted start offset lags behind the group
        assert lag == held.high_watermark - held.lso  # Kafka counts the lag to the high watermark

        described = kafka_txn(bs, "describe-share-group", "--group", group, "-o", "json")
        assert described.code == 0, described.err
        [part] = described.json()["share_group"]
        assert (part["last_stable_offset"], part["high_watermark"], part["held_at_lso"]) == (
            held.lso, held.high_watermark, True)

        row = only_row(scan(bs, topic), 0)
        assert (row["kind"], row["reason"], row["start_offset"], row["transactional_id"]) == (
            "partition", "transaction-not-ongoing", hang.start_offset, hang.transactional_id)
        assert [(g["group_id"], g["type"], g["committed_offset"], g["lag"]) for g in row["stalled_groups"]] == [
            (group, "share", held.lso, held.high_watermark - held.lso)]
        clear_by_printed_commands(bs, row)
        # Freed: the member gets the records past the abort marker, and not the late write it aborted.
        assert poll_values(member, AFTER, 60) == [b"after%d" % i for i in range(AFTER)]
        member.commit_sync(10)
    finally:
        member.close()
    assert kafka_txn(bs, "find-hanging", "--topic", topic, "--exit-code").code == 0
