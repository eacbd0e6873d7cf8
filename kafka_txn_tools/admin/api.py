"""The admin operations the flows (scan, abort, fence, listing, describe, dump) need, as a Protocol.

connection/client.py's AdminClient implements it over the wire; the flows depend only on this, which
keeps them importable without kafka-python and testable with plain data. The Protocol is the flows' own
(it names what they need of a cluster, and their fakes implement it); the client satisfies it
structurally, so the connection layer never imports the flows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

from kafka_txn_tools.connection.coordinators import CoordinatorCache
from kafka_txn_tools.models import (
    ClusterInfo,
    DescribeResult,
    ListResult,
    OffsetRead,
    PartitionOffsets,
    PartitionProducers,
    Progress,
    ScanError,
    TopicPartition,
)


class ClusterApi(Protocol):
    def supports(self, api: str) -> bool: ...

    def metadata(self, topics: Sequence[str] | None = None) -> ClusterInfo: ...

    def describe_producers(
        self, by_broker: dict[int, list[TopicPartition]], batch_size: int = ..., in_flight: int = ...,
        progress: Progress | None = None, open_only: bool = False,
    ) -> tuple[list[PartitionProducers], list[ScanError]]: ...

    def list_transactions(
        self, broker_ids: Iterable[int], states: Sequence[str] = (), producer_ids: Sequence[int] = (),
        duration_ms: int | None = None, pattern: str | None = None,
    ) -> ListResult: ...

    def describe_transactions(self, transactional_ids: Iterable[str], coordinators: CoordinatorCache | None = None
                              ) -> DescribeResult: ...

    def partition_offsets(self, leaders: dict[TopicPartition, int]) -> dict[TopicPartition, PartitionOffsets]: ...

    def latest_offsets(self, leaders: dict[TopicPartition, tuple[int, int]], read_committed: bool
                       ) -> dict[TopicPartition, OffsetRead]: ...

    def latest_offsets_both(self, leaders: dict[TopicPartition, tuple[int, int]]
                            ) -> tuple[dict[TopicPartition, OffsetRead], dict[TopicPartition, OffsetRead]]: ...

    def write_abort_marker(
        self, leader: int, partition: TopicPartition, producer_id: int, producer_epoch: int,
        coordinator_epoch: int, start_offset: int | None,
    ) -> str | None: ...

    def write_commit_marker(
        self, leader: int, partition: TopicPartition, producer_id: int, producer_epoch: int,
        coordinator_epoch: int, start_offset: int | None,
    ) -> str | None: ...

    def fence_transactional_id(self, transactional_id: str, transaction_timeout_ms: int) -> tuple[int, int]: ...

    def offsets_for_time(self, leaders: dict[TopicPartition, int], timestamp_ms: int) -> dict[TopicPartition, int]: ...

    def read_log(self, reads: dict[TopicPartition, tuple[int, int]], max_bytes: int
                 ) -> tuple[dict[TopicPartition, bytes], list[ScanError]]: ...

    def list_groups(self, broker_ids: Iterable[int]) -> tuple[list[tuple[str, str]], list[ScanError]]: ...

    def committed_offsets(self, group_ids: Sequence[str], partitions: Sequence[TopicPartition],
                          coordinators: CoordinatorCache | None = None,
                          ) -> tuple[dict[str, dict[TopicPartition, int]], list[ScanError]]: ...

    def share_group_offsets(self, group_ids: Sequence[str], partitions: Sequence[TopicPartition],
                            coordinators: CoordinatorCache | None = None,
                            ends: Mapping[TopicPartition, int | None] | None = None,
                            ) -> tuple[dict[str, dict[TopicPartition, int]], list[ScanError]]: ...
