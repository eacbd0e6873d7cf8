"""Committed offsets of the groups in one `__consumer_offsets` partition, and pending transactional ones.

A transactional offset commit (TxnOffsetCommit) is held per producer id until the transaction's
marker reaches this partition: COMMIT makes it visible, ABORT drops it. When both a plain commit and a
transactional one exist for a partition, the one written later in the log wins, as in Kafka.
"""

from __future__ import annotations

from dataclasses import dataclass

TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class CommittedOffset:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp_ms: int
    # Position of the commit record in the log; decides which of two competing commits is newer.
    record_offset: int


class OffsetStore:
    def __init__(self) -> None:
        self.committed: dict[str, dict[TopicPartition, CommittedOffset]] = {}
        # producer id -> group -> partition -> offset waiting for the transaction's marker
        self.pending: dict[int, dict[str, dict[TopicPartition, CommittedOffset]]] = {}

    # ---- plain commits -------------------------------------------------------------------------
    def put(self, group: str, tp: TopicPartition, value: CommittedOffset) -> None:
        self.committed.setdefault(group, {})[tp] = value

    def delete(self, group: str, tp: TopicPartition) -> None:
        offsets = self.committed.get(group)
        if offsets is not None:
            offsets.pop(tp, None)
            if not offsets:
                del self.committed[group]

    def get(self, group: str, tp: TopicPartition) -> CommittedOffset | None:
        return self.committed.get(group, {}).get(tp)

    def of_group(self, group: str) -> dict[TopicPartition, CommittedOffset]:
        return dict(self.committed.get(group, {}))

    def groups(self) -> set[str]:
        out = set(self.committed)
        for per_group in self.pending.values():
            out.update(per_group)
        return out

    # ---- transactional commits -----------------------------------------------------------------
    def put_pending(self, producer_id: int, group: str, tp: TopicPartition, value: CommittedOffset) -> None:
        self.pending.setdefault(producer_id, {}).setdefault(group, {})[tp] = value

    def has_pending(self, group: str, tp: TopicPartition) -> bool:
        return any(tp in per_group.get(group, {}) for per_group in self.pending.values())

    def complete(self, producer_id: int, commit: bool) -> None:
        """Apply (COMMIT) or drop (ABORT) everything the producer's transaction committed here."""
        per_group = self.pending.pop(producer_id, None)
        if per_group is None or not commit:
            return
        for group, offsets in per_group.items():
            for tp, value in offsets.items():
                current = self.get(group, tp)
                if current is None or current.record_offset < value.record_offset:
                    self.put(group, tp, value)
