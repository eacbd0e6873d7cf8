"""What a scan loop (the monitor, `find-hanging --watch`) keeps between passes, so that its steady state asks
the cluster only what can have changed. It lives in the loop's ScanLoop (admin/scan_loop.py), beside
what the first pass remembers: a one-off find-hanging has a fresh one and never uses it.

Every pass before the loop's first, and every full pass (`ScanLoop.next_is_full()`), uses nothing kept:
it reads everything afresh and keeps what it read. Each part below says why using it cannot hide a finding
(or, for context only, how stale it can be), and what drops it.

- **Producer id -> transactional id** (`ProducerIds`). The candidates' producer ids are listed
  (ListTransactions by producer id, on every broker) only when not known from an earlier pass.
  - A mapping P -> X is used only when this pass's DescribeTransactions of X, sent anyway to judge the
    candidate, still names P as X's producer id. A transactional id has one producer id at a time, and a
    producer id belongs to one transactional id, so X's answer says what listing P would. When it does not
    (X now has another producer id, X is gone, X's coordinator did not answer), P is listed now.
  - A producer id that every coordinator answered for without naming a transactional id (no listing
    error) stays unmapped: Kafka allocates producer ids once (ProducerIdManager hands out ids from blocks the
    controller allocates in increasing order, never again), and a transactional id that needs a new one
    (epoch exhausted, or initialised afresh after its id expired) gets a newly allocated one, never an old
    one back. One thing besides could hide a mapping: a `__transaction_state` partition between two leaders
    while it was listed (the old coordinator has dropped its ids, the new one has not started loading them,
    so neither lists them nor answers an error). So an unmapped id is kept only when every
    `__transaction_state` partition had a leader in the pass's Metadata, and only while the leaders and
    leader epochs stay those (a coordinator move shows in the next Metadata read: every full pass, within
    the Metadata max age, after any error).
  - Any listing error of a pass drops every unmapped id (the broker that did not answer may hold it).
- **Coordinators** (connection/coordinators.py): FindCoordinator's answers for transactional ids and groups,
  kept until the coordinator answers NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE, fails another way, or
  cannot be reached, as Kafka's clients keep theirs; the ids it failed are then found again in the same call.
  A remembered coordinator that moved answers an error, never a wrong answer: it can cost a round, not a
  finding.
- **The group list** (ListGroups on every broker): used only to name the groups held back at a finding's LSO,
  context and not a finding. Kept for `max_age_ms` (5 minutes, as Kafka's metadata.max.age.ms) by the memory's
  clock, dropped when a read of it or of a group's offsets fails. A group created since is named within that
  age: its committed offset at the LSO is read from the next list on. A group deleted since has no offsets to
  read, so it is never named held back.
- **Metadata** (the scan's own read: brokers, partitions, leaders, leader epochs, replicas, ISRs): kept for
  `max_age_ms` (Kafka's metadata.max.age.ms is the model), dropped after any pass with an error, or whose
  first pass found a partition it could not trust (a read failed: NOT_LEADER_OR_FOLLOWER,
  FENCED/UNKNOWN_LEADER_EPOCH, UNKNOWN_TOPIC_OR_PARTITION...; a leader epoch other than Metadata's; no
  leader). When that happens on a kept Metadata, it is read again at once and the first pass redone, so a
  moved leader never costs a pass its offsets. admin/lso_prefilter.py says why a kept Metadata still finds
  every transaction; a topic created since is read within the max age, long before a transaction on it can
  be old enough to report (the max transaction timeout, 15 minutes by default, is longer). A pass that fails
  as a whole drops it too.
- **Producer state of partitions held below their HW at unchanged offsets**: kept by the first pass itself,
  beside its other memory (admin/lso_prefilter.py, "A partition held at the same offsets").
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from kafka_txn_broker.formats.partitioning import TXN_TOPIC
from kafka_txn_tools.connection.coordinators import CoordinatorCache
from kafka_txn_tools.models import ClusterInfo, TransactionListing

Topics = tuple[str, ...] | None  # what a Metadata read asked for (None: every topic)

# How long a loop uses a list it read (Kafka's metadata.max.age.ms default).
MAX_AGE_MS = 300_000
Groups = list[tuple[str, str]]  # (group id, type), as ListGroups answers


def _monotonic_ms() -> int:
    return time.monotonic_ns() // 1_000_000


# `__transaction_state`'s partitions as a pass's Metadata showed them: (partition, leader, leader epoch).
TxnHomes = frozenset[tuple[int, int, int]]


def txn_homes(cluster: ClusterInfo) -> TxnHomes | None:
    """Where the transactional ids live, when the Metadata shows every partition of `__transaction_state` led;
    None when it does not show that topic, or one of its partitions has no leader."""
    infos = [i for i in cluster.partitions if i.partition.topic == TXN_TOPIC]
    if not infos or any(i.leader < 0 for i in infos):
        return None
    return frozenset((i.partition.partition, i.leader, i.leader_epoch) for i in infos)


@dataclass
class ProducerIds:
    """Producer id -> transactional id, as ListTransactions by producer id answered; and the producer ids no
    coordinator listed, with the `__transaction_state` leaders they were not listed under."""

    ids: dict[int, str] = field(default_factory=dict)
    unmapped: dict[int, TxnHomes] = field(default_factory=dict)

    def known(self, pids: Iterable[int], homes: TxnHomes | None) -> tuple[dict[int, str], set[int]]:
        """Of `pids`, those mapped (to check against their id's description) and those known unmapped under
        the same `homes`."""
        mapped = {p: self.ids[p] for p in pids if p in self.ids}
        unmapped = {p for p in pids if homes is not None and self.unmapped.get(p) == homes}
        return mapped, unmapped

    def learn(self, asked: Iterable[int], listings: Iterable[TransactionListing], failed: bool,
              homes: TxnHomes | None) -> None:
        """What ListTransactions by the producer ids `asked` answered; `failed`: some broker did not answer."""
        asked = set(asked)
        listed = {x.producer_id: x.transactional_id for x in listings if x.producer_id in asked}
        self.ids.update(listed)
        for pid in asked - listed.keys():
            self.ids.pop(pid, None)
            if homes is not None and not failed:
                self.unmapped[pid] = homes
        if failed:
            self.unmapped.clear()

    def forget(self, pids: Iterable[int]) -> None:
        for pid in pids:
            self.ids.pop(pid, None)
            self.unmapped.pop(pid, None)

    def keep_only(self, pids: Iterable[int]) -> None:
        """Forget the producer ids that are no longer candidates: a loop keeps only what it can use."""
        wanted = set(pids)
        self.ids = {p: x for p, x in self.ids.items() if p in wanted}
        self.unmapped = {p: h for p, h in self.unmapped.items() if p in wanted}

    def clear(self) -> None:
        self.ids.clear()
        self.unmapped.clear()


@dataclass(eq=False)  # one loop's memory: equal only to itself
class ScanMemory:
    """Not thread-safe: one scan at a time uses it (the loop's)."""

    producer_ids: ProducerIds = field(default_factory=ProducerIds)
    coordinators: CoordinatorCache = field(default_factory=CoordinatorCache)
    clock: Callable[[], int] = _monotonic_ms  # milliseconds, for the lists' age
    max_age_ms: int = MAX_AGE_MS
    passes: int = 0
    serving: bool = False  # this pass uses what earlier passes kept
    _groups: tuple[int, Groups] | None = None  # (read at, the list)
    _metadata: tuple[int, Topics, ClusterInfo] | None = None  # (read at, topics asked, the answer)
    metadata_kept: bool = False  # this pass's Metadata is a kept one

    def begin_pass(self, full: bool) -> None:
        """A pass starts: a full one (or the first) reads everything afresh."""
        self.serving = self.passes > 0 and not full
        self.coordinators.serving = self.serving
        if not self.serving:
            self.producer_ids.clear()
            self.coordinators.clear()
            self._groups = None
            self._metadata = None
        self.metadata_kept = False

    def end_pass(self) -> None:
        self.passes += 1

    def metadata(self, topics: Iterable[str] | None) -> ClusterInfo | None:
        """The Metadata kept for the same topics, if this pass may use it (younger than the max age)."""
        kept = self._metadata
        if not self.serving or kept is None or kept[1] != _topics(topics) or self.clock() - kept[0] >= self.max_age_ms:
            return None
        self.metadata_kept = True
        return kept[2]

    def keep_metadata(self, topics: Iterable[str] | None, cluster: ClusterInfo) -> None:
        """Metadata just read; one naming a topic it could not describe is not kept."""
        self.metadata_kept = False
        self._metadata = None if cluster.topic_errors else (self.clock(), _topics(topics), cluster)

    def doubt_metadata(self) -> None:
        """A read of the pass failed or disagreed with the Metadata: the next pass reads it afresh."""
        self._metadata = None

    def group_list(self) -> Groups | None:
        """The group list kept, if this pass may use it (younger than the max age)."""
        if not self.serving or self._groups is None or self.clock() - self._groups[0] >= self.max_age_ms:
            return None
        return self._groups[1]

    def keep_groups(self, groups: Groups | None) -> None:
        """The group list just read (None: a read of it, or of a group's offsets, failed: drop it)."""
        if groups is None:
            self._groups = None
        elif self.group_list() is None:  # keep its first read's time, not each use's
            self._groups = (self.clock(), list(groups))


def _topics(topics: Iterable[str] | None) -> Topics:
    return None if topics is None else tuple(sorted(topics))


def checked_mappings(mapped: Mapping[int, str], producer_of: Mapping[str, int]) -> tuple[dict[int, str], list[int]]:
    """Of the remembered mappings, those this pass's descriptions confirm ({pid: id}), and the producer ids to
    list again. `producer_of`: the described ids' producer ids now."""
    good = {p: x for p, x in mapped.items() if producer_of.get(x) == p}
    return good, sorted(mapped.keys() - good.keys())
