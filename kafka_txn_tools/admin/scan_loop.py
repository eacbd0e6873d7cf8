"""The state a scan loop keeps between its passes, in the open: given to `find_hanging` beside its (frozen)
options, never hidden inside them. The rules it follows are admin/lso_prefilter.py's (the first pass) and
admin/scan_memory.py's (the answers kept)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from kafka_txn_tools.admin.lso_prefilter import (
    DEFAULT_FULL_SCAN_EVERY,
    KeptState,
    Replica,
    Selection,
    kept_after,
    seen_open_after,
)
from kafka_txn_tools.admin.scan_memory import ScanMemory
from kafka_txn_tools.models import PartitionInfo, PartitionProducers, ScanError, TopicPartition


@dataclass
class ScanLoop:
    """What a scan loop (the monitor's, `find-hanging --watch`) keeps from one pass to the next: the first pass's
    state (which replicas were seen open, which partitions were clear or held, when the next full pass is due)
    and the cluster's answers that cannot have changed (admin/scan_memory.py). A loop creates one for its life
    and passes it to every `find_hanging` call; a one-off scan gets a fresh one. Not thread-safe: a loop's
    passes run one after another on one thread."""

    # One pass in this many is a full scan (the `full_scan_every`-th, the 2 x `full_scan_every`-th...; the
    # first pass never is); 0: never.
    full_scan_every: int = DEFAULT_FULL_SCAN_EVERY
    passes: int = 0
    seen_open: frozenset[Replica] = field(default_factory=frozenset)
    # The partitions the last pass found clear: {tp: (HW, leader epoch)} (`lso_to_read`).
    clear: dict[TopicPartition, tuple[int, int]] = field(default_factory=dict)
    # The partitions the last pass found held below their HW, and their in-sync replicas' answers (`reusable`).
    held: dict[TopicPartition, KeptState] = field(default_factory=dict)
    # What the loop keeps of the cluster's other answers between passes (admin/scan_memory.py).
    memory: ScanMemory = field(default_factory=ScanMemory)

    def next_is_full(self) -> bool:
        return self.full_scan_every > 0 and (self.passes + 1) % self.full_scan_every == 0

    def kept_answers(self, selection: Selection) -> list[PartitionProducers]:
        """The last pass's answers standing for the replicas `selection` does not ask (those with an open
        transaction: a DescribeProducers answer for open transactions only)."""
        return [PartitionProducers(tp, b, states) for b, tps in selection.kept.items() for tp in tps
                if (states := self.held[tp].by_broker[b])]

    def after_pass(self, selection: Selection, answers: Iterable[PartitionProducers],
                   errors: Iterable[ScanError], infos: Mapping[TopicPartition, PartitionInfo] | None = None) -> None:
        """`answers`: this pass's, the kept ones that stood included."""
        answers, errors = list(answers), list(errors)
        self.passes += 1
        self.seen_open = seen_open_after(_joined(selection.by_broker, selection.kept), answers, errors,
                                         self.seen_open)
        self.clear = selection.clear_reads
        self.held = kept_after(selection, answers, errors, infos or {}, self.held)


def _joined(a: Mapping[int, Sequence[TopicPartition]], b: Mapping[int, Sequence[TopicPartition]]
            ) -> dict[int, list[TopicPartition]]:
    out = {broker: list(tps) for broker, tps in a.items()}
    for broker, tps in b.items():
        out.setdefault(broker, []).extend(tps)
    return out
