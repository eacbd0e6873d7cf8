"""find-hanging's first pass: read every partition's high watermark and LSO from its leader, and ask for producer
state (DescribeProducers) only where a transaction can hang. Pure: the decisions; admin/scan.py does the I/O.

## Why the offsets tell

A partition's last stable offset (LSO) is the first offset of its oldest transaction still undecided - or
decided with its marker not yet below the high watermark (HW) - capped at the HW:
LSO = min(first unstable offset, HW). A leader holding an open transaction whose first batch is below its
HW therefore answers LSO < HW: ListOffsets latest under read_uncommitted gives the HW, under
read_committed the LSO. One request per leader and isolation level covers all its partitions, where the
full scan asks every replica of every partition for its producers.

The HW is read first, then the LSO (`lso_to_read`) - except where it is known without a read: LSO <= HW
always, so a partition whose HW is 0 (nothing written) has LSO = HW; and a partition the previous pass found
clear (LSO = HW) whose HW and leader epoch have not changed since has no new record below its HW, so no
transaction opened below it since: it is still clear. A partition whose LSO read then is below the HW read
before had a transaction open at the second read that started below the HW at the first: it is flagged; one
whose LSO reached the HW read before was clear when that was read.

## The condition under which the pass misses nothing

The pass finds every open transaction the full scan (DescribeProducers on every replica) finds, provided:

- **C1, first batch replicated.** Every open transaction old enough to be a candidate (its last write older
  than the max transaction timeout) starts below its partition's HW. Its first batch came before its last
  write, so more than the max timeout (15 minutes by default) ago by its producer's clock; an in-sync
  follower fetches it within replica.lag.time.max.ms (30 s) or its leader drops it from the ISR, and the HW
  passes it either way. C1 fails only for a HW that has not moved for the max timeout (an in-sync replica
  that stopped fetching and that its leader could not remove from the ISR) or a producer clock that far
  behind.
- **C2, in-sync followers agree with their leader.** A follower in the ISR holds no open transaction its
  leader does not show below its HW. Followers rebuild producer state from the log they copy, so they agree
  unless one lags (then it leaves the ISR, and out-of-sync replicas are always asked) or its producer state
  diverged from its log (a broker bug, a lost snapshot).
- **C3, nothing below the log start alone.** No open transaction lies wholly below its partition's log start
  offset on a partition where nothing was appended since (DeleteRecords or retention removed its records;
  then LSO = HW = log start offset). It holds nothing back until the next record, and the pass flags the
  partition with that record (the LSO stays at the log start while the HW moves on).

What C1-C3 exclude - a stuck HW, a diverged follower, an open transaction on an emptied partition - is
found by a full pass: every `full_scan_every`-th pass of a scan loop (the monitor, `find-hanging --watch`)
is one, and `find-hanging --full-scan` always is. Once found, such a replica is asked again in every pass
until it shows no open transaction (`seen_open`), so a finding does not come and go between passes.

## A scan loop's kept Metadata

A scan loop reuses its Metadata for up to Kafka's metadata.max.age.ms (admin/scan_memory.py), so leaders,
epochs and replica sets can be older than the reads. The pass still finds every transaction:

- the reads name the kept leader and epoch: a leader that moved since answers NOT_LEADER_OR_FOLLOWER or
  FENCED/UNKNOWN_LEADER_EPOCH (or the epochs disagree), the partition is flagged and every replica asked, and
  the loop reads Metadata again at once and redoes the pass;
- a leader that did not move still says its partition's LSO and HW: a transaction it holds open is flagged
  whatever else changed. A follower that left the ISR since (it lags, and can lag behind its leader's
  markers) is asked as out of sync from the next Metadata read on, within the max age: until then it is
  treated as the in-sync replica Metadata says it is (C2);
- a replica set changed by reassignment: the new replica copied its log from the leader, so it holds what
  the leader shows (C2); the old one, asked while flagged, answers an error, which has Metadata read on the
  next pass; every replica set is read again within the max age anyway.

## A partition held at the same offsets (scan loops)

In a scan loop, a partition the last pass found held below its HW, whose leader answers the same HW, LSO and
leader epoch again, is not asked again on its in-sync replicas: their last answers stand (`reusable`,
`kept_after`). It misses nothing the full scan would find, under C1 and C2:

- nothing was appended below the HW since: any record - a producer's batch, a marker - moves the HW once
  replicated, and an open transaction whose first batch is not yet replicated is C1's; the same leader epoch
  means the same leader, never truncated since;
- an in-sync replica's producer state is rebuilt from that log (C2), so its open transactions and their last
  writes are what they were. Producer state changes without a record only by expiring idle producers (Kafka
  never expires a producer with an open transaction) or by the log start offset passing a transaction's
  first offset (then the LSO, never below the log start, moves too);
- a replica that left the ISR (as Metadata shows it), whose answer failed, or that was not asked last pass is
  asked; a full pass asks every replica, and the pass after it asks the held partitions again.

A kept answer cannot add a finding either: each verdict is re-read from its replica before it is reported
(admin/hanging.py `confirm`), as every verdict is.

## Each edge, and what the pass does

- LSO below HW: every replica of the partition is asked (every replica the scope names).
- A replica out of the ISR (lagging, or its broker down): that replica is asked. It can lag behind its
  leader's markers; a down broker's replicas are reported unread, as by the full scan.
- No leader: every replica is asked.
- A read failed - an error code (NOT_LEADER_OR_FOLLOWER, OFFSET_NOT_AVAILABLE while a new leader's HW
  catches up, an authorization error...) or no answer (a broker down; UNSUPPORTED_VERSION from a broker
  without ListOffsets v2, the first with an isolation level): every replica is asked.
- The leader changed between the two reads: both reads name the leader epoch Metadata gave
  (CurrentLeaderEpoch, v4+), so a broker leading at another epoch answers an error; and the epochs of the
  two answers must agree. Else every replica is asked. (ListOffsets before v4 says no epoch: a move to
  another broker still shows, as NOT_LEADER_OR_FOLLOWER.)
- LSO above HW (impossible from one leader at one epoch): every replica is asked.
- A replica the previous pass saw an open transaction on: asked again.
- A cluster whose bootstrap broker lacks ListOffsets v2: a full scan.

Not made cheaper here (admin/scan.py): the coordinator side (ListTransactions by state and age on every
broker, DescribeTransactions of what it lists) costs a few requests per broker whatever the partition
count.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from kafka_txn_tools.models import (
    OffsetRead,
    PartitionInfo,
    PartitionOffsets,
    PartitionProducers,
    ProducerState,
    ScanError,
    TopicPartition,
)

Replica = tuple[TopicPartition, int]  # (partition, broker id)
Held = tuple[int, int, int]  # a partition held below its HW, as its leader answered: (HW, LSO, leader epoch)

# find-hanging --full-scan-every's default: in a scan loop, one pass in this many is a full scan.
DEFAULT_FULL_SCAN_EVERY = 20


class Why(StrEnum):
    """Why the pass asks a replica for its producer state (the first that applies)."""

    FULL = "full-scan"
    LSO_BELOW_HW = "lso-below-high-watermark"
    NO_LEADER = "no-leader"
    UNREAD = "offsets-unread"
    LEADER_CHANGED = "leader-changed"
    INCONSISTENT = "lso-above-high-watermark"
    OUT_OF_SYNC = "out-of-sync-replica"
    SEEN_OPEN = "open-in-last-pass"


def partition_reason(info: PartitionInfo, hw: OffsetRead | None, lso: OffsetRead | None) -> Why | None:
    """Why every replica of a partition must be asked; None when its leader's offsets show nothing open that
    can hang: LSO = HW, both read at one leader epoch, Metadata's. `lso` None: not read, known to equal the HW
    (`lso_to_read`)."""
    if info.leader < 0:
        return Why.NO_LEADER
    if hw is None:
        return Why.UNREAD
    high, epoch, error = hw  # unpacked at once: this runs for every partition of the cluster
    if high is None or error is not None:
        return Why.UNREAD
    if lso is None:
        stable, lso_epoch = high, epoch
    else:
        read, lso_epoch, error = lso
        if read is None or error is not None:
            return Why.UNREAD
        stable = read
    if lso_epoch != epoch or (info.leader_epoch >= 0 and epoch >= 0 and epoch != info.leader_epoch):
        return Why.LEADER_CHANGED
    if stable < high:
        return Why.LSO_BELOW_HW
    if stable > high:
        return Why.INCONSISTENT
    return None


@dataclass(frozen=True)
class Reads:
    """The first pass's answers: the leader (and epoch) asked for each partition, its HW read, and its LSO read
    where one was made (elsewhere LSO = HW, `lso_to_read`)."""

    leaders: Mapping[TopicPartition, tuple[int, int]]
    hw: Mapping[TopicPartition, OffsetRead]
    lso: Mapping[TopicPartition, OffsetRead]

    def offsets(self, tp: TopicPartition, leader: int) -> PartitionOffsets | None:
        """The partition's LSO and HW as `leader` answered them; None when not read from it, or not read."""
        target, hw = self.leaders.get(tp), self.hw.get(tp)
        if target is None or target[0] != leader or hw is None or hw.offset is None or hw.error is not None:
            return None
        lso = self.lso.get(tp, hw)
        return None if lso.offset is None or lso.error is not None else PartitionOffsets(tp, lso.offset, hw.offset)


@dataclass(frozen=True)
class PassSummary:
    """What a scan's first pass did, for its report: a full scan or not, the partitions in scope, how many of
    them the leaders' offsets showed clear, the replicas asked by reason, and the replicas not asked because
    the last pass's answer stands (a scan loop's partitions held at the same offsets, `reusable`)."""

    full: bool
    partitions: int
    clear: int
    why: dict[Why, int]
    kept: int = 0

    def to_row(self) -> dict[str, object]:
        return {"full_scan": self.full, "partitions": self.partitions, "clear_by_lso": self.clear,
                "replicas_asked": {str(k): v for k, v in sorted(self.why.items())}, "replicas_kept": self.kept}


@dataclass(frozen=True)
class Selection:
    """The replicas a pass asks (broker -> partitions, a subset of the full scan's, in its order) and why."""

    by_broker: dict[int, list[TopicPartition]]
    why: dict[Why, int]  # replicas asked, by reason
    partitions: int  # partitions in scope
    clear: int  # of them, partitions whose leader's offsets showed nothing open (LSO = HW)
    full: bool = False
    # The clear ones whose epoch was said: {tp: (HW, leader epoch)}, for the next pass (`lso_to_read`).
    clear_reads: dict[TopicPartition, tuple[int, int]] = field(default_factory=dict)
    # The partitions flagged with LSO below HW, read at an epoch said: {tp: (HW, LSO, leader epoch)}.
    held_reads: dict[TopicPartition, Held] = field(default_factory=dict)
    # Replicas not asked: the last pass's answers stand for them (`kept`): broker -> partitions.
    kept: dict[int, list[TopicPartition]] = field(default_factory=dict)

    @property
    def replicas(self) -> int:
        return sum(map(len, self.by_broker.values()))

    def summary(self) -> PassSummary:
        return PassSummary(self.full, self.partitions, self.clear, dict(self.why), sum(map(len, self.kept.values())))


@dataclass(frozen=True)
class KeptState:
    """The open transactions in-sync replicas showed last pass on a partition held below its HW, at the leader's
    (HW, LSO, leader epoch) then: {broker: its open transactions' producer states (empty: none)}."""

    held: Held
    by_broker: dict[int, tuple[ProducerState, ...]]


def full_selection(planned: Mapping[int, Sequence[TopicPartition]]) -> Selection:
    """A full pass: every replica the full scan asks."""
    by_broker = {b: list(tps) for b, tps in planned.items()}
    partitions = len({tp for tps in planned.values() for tp in tps})
    return Selection(by_broker, {Why.FULL: sum(map(len, by_broker.values()))}, partitions, 0, full=True)


def _in_scope(planned: Mapping[int, Sequence[TopicPartition]]) -> set[TopicPartition]:
    return set().union(*planned.values())


def leaders_to_read(planned: Mapping[int, Sequence[TopicPartition]], infos: Mapping[TopicPartition, PartitionInfo]
                    ) -> dict[TopicPartition, tuple[int, int]]:
    """The first pass's reads: each planned partition that has a leader -> (leader, leader epoch)."""
    out: dict[TopicPartition, tuple[int, int]] = {}
    for tp in _in_scope(planned):
        info = infos.get(tp)
        if info is not None and info.leader >= 0:
            out[tp] = (info.leader, info.leader_epoch)
    return out


def lso_to_read(leaders: Mapping[TopicPartition, tuple[int, int]], hw: Mapping[TopicPartition, OffsetRead],
                clear_before: Mapping[TopicPartition, tuple[int, int]]) -> dict[TopicPartition, tuple[int, int]]:
    """After the HW read (`hw`) of `leaders` ({tp: (leader, leader epoch)}): those whose LSO must be read. Not:
    a partition whose HW read failed (it is asked in full anyway); one with HW 0 (nothing written: LSO = HW);
    one the previous pass found clear at the same HW and leader epoch (`clear_before`: {tp: (HW, epoch)}; an
    epoch not said (-1) is never the same)."""
    out = {}
    for tp, target in leaders.items():
        read = hw.get(tp)
        if read is None or read.error is not None or read.offset is None or read.offset == 0:
            continue
        if read.leader_epoch >= 0 and clear_before.get(tp) == (read.offset, read.leader_epoch):
            continue
        out[tp] = target
    return out


def select(planned: Mapping[int, Sequence[TopicPartition]], infos: Mapping[TopicPartition, PartitionInfo],
           reads: Reads, seen_open: Collection[Replica] = (), kept: Mapping[TopicPartition, KeptState] | None = None
           ) -> Selection:
    """Of the replicas the full scan would ask (`planned`: broker -> partitions), the ones this pass asks:
    every planned replica of a partition with a reason (`partition_reason`), replicas out of the ISR, and
    replicas the previous pass saw an open transaction on; except, in a scan loop, the in-sync replicas of a
    partition held below its HW at the same HW, LSO and leader epoch as in the last pass, whose answers then
    (`kept`) stand (`reusable`)."""
    hw_of, lso_of, info_of = reads.hw.get, reads.lso.get, infos.get
    flagged: dict[TopicPartition, Why] = {}  # every planned replica asked
    clear = 0
    clear_reads: dict[TopicPartition, tuple[int, int]] = {}
    # On a clear partition, only the replicas out of its ISR and those the last pass saw open.
    extra: dict[int, dict[TopicPartition, Why]] = {}
    # One pass over the partitions in scope (a whole cluster's): each loop over them costs milliseconds.
    for tp in _in_scope(planned):
        info, hw = info_of(tp), hw_of(tp)
        reason = Why.UNREAD if info is None else partition_reason(info, hw, lso_of(tp))
        if reason is not None:
            flagged[tp] = reason
            continue
        clear += 1
        assert info is not None and hw is not None and hw.offset is not None  # a clear partition was read
        if hw.leader_epoch >= 0:
            clear_reads[tp] = (hw.offset, hw.leader_epoch)
        if len(info.isr) < len(info.replicas):
            for broker in info.replicas:
                if broker not in info.isr:
                    extra.setdefault(broker, {})[tp] = Why.OUT_OF_SYNC
    for tp, broker in seen_open:
        if tp not in flagged:
            extra.setdefault(broker, {}).setdefault(tp, Why.SEEN_OPEN)
    held_reads = {tp: held for tp, reason in flagged.items()
                  if reason is Why.LSO_BELOW_HW and (held := _held(reads, tp)) is not None}
    by_broker: dict[int, list[TopicPartition]] = {}
    why: dict[Why, int] = {}
    not_asked: dict[int, list[TopicPartition]] = {}
    for broker, tps in planned.items():
        more = extra.get(broker, {})
        asked = []
        for tp in tps:
            if tp in flagged and reusable(tp, broker, infos[tp], held_reads.get(tp), kept or {}):
                not_asked.setdefault(broker, []).append(tp)
            elif tp in flagged or tp in more:
                asked.append(tp)
        for tp in asked:
            reason = flagged.get(tp) or more[tp]
            why[reason] = why.get(reason, 0) + 1
        if asked:
            by_broker[broker] = asked
    return Selection(by_broker, why, len(flagged) + clear, clear, clear_reads=clear_reads, held_reads=held_reads,
                     kept=not_asked)


def _held(reads: Reads, tp: TopicPartition) -> Held | None:
    hw, lso = reads.hw.get(tp), reads.lso.get(tp)
    if hw is None or lso is None or hw.offset is None or lso.offset is None or hw.leader_epoch < 0:
        return None
    return hw.offset, lso.offset, hw.leader_epoch


def reusable(tp: TopicPartition, broker: int, info: PartitionInfo, held: Held | None,
             kept: Mapping[TopicPartition, KeptState]) -> bool:
    """Whether the last pass's answer of `broker` for `tp` stands for this pass's: `tp` is held below its HW at
    the same (HW, LSO, leader epoch) as then, and `broker` is in its ISR and answered then."""
    last = kept.get(tp)
    return held is not None and last is not None and last.held == held and broker in info.isr \
        and broker in last.by_broker


def kept_after(selection: Selection, answers: Iterable[PartitionProducers], errors: Iterable[ScanError],
               infos: Mapping[TopicPartition, PartitionInfo], before: Mapping[TopicPartition, KeptState]
               ) -> dict[TopicPartition, KeptState]:
    """What the next pass may reuse: for each partition held below its HW this pass, the open transactions of
    each in-sync replica that answered (or whose last answer stood again). `answers`: open-only answers (a
    replica without an open transaction has none)."""
    failed_brokers = {e.broker_id for e in errors if e.partition is None and e.broker_id is not None}
    failed = {(e.partition, e.broker_id) for e in errors if e.partition is not None}
    got: dict[Replica, tuple[ProducerState, ...]] = {(a.partition, a.broker_id): a.producers for a in answers}
    out: dict[TopicPartition, KeptState] = {}
    stood = {(b, tp) for b, tps in selection.kept.items() for tp in tps}
    for broker, tp in [*((b, tp) for b, tps in selection.by_broker.items() for tp in tps), *stood]:
        held, info = selection.held_reads.get(tp), infos.get(tp)
        if held is None or info is None or broker not in info.isr or broker in failed_brokers or (tp, broker) in failed:
            continue
        states = before[tp].by_broker[broker] if (broker, tp) in stood else got.get((tp, broker), ())
        out.setdefault(tp, KeptState(held, {})).by_broker[broker] = states
    return out


def seen_open_after(asked: Mapping[int, Sequence[TopicPartition]], answers: Iterable[PartitionProducers],
                    errors: Iterable[ScanError], before: Collection[Replica]) -> frozenset[Replica]:
    """The replicas to ask again next pass: those whose answer showed an open transaction, and those seen
    open before that were asked again but did not answer (still not known to be clear). One no longer asked
    (its topic deleted, its replica moved away) is forgotten."""
    found = {(a.partition, a.broker_id) for a in answers if any(p.has_open_transaction for p in a.producers)}
    unread_brokers = {e.broker_id for e in errors if e.partition is None and e.broker_id is not None}
    unread = {(e.partition, e.broker_id) for e in errors if e.partition is not None and e.broker_id is not None}
    asked_set = {(tp, b) for b, tps in asked.items() for tp in tps}
    kept = {r for r in before if r in asked_set and (r in unread or r[1] in unread_brokers)}
    return frozenset(found | kept)
