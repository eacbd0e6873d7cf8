"""SharePartitionManager: serves ShareFetch and ShareAcknowledge on one broker (Kafka's
kafka.server.share.SharePartitionManager with its ShareSessionCache and delayed share fetches).

A share-partition lives on the leader of its topic partition. On first use it loads its state from the
share coordinator (or starts at share.auto.offset.reset); a leader change drops it, and the new leader
loads it again. ShareFetch:
1. the share session: epoch 0 opens it (acknowledgements are not allowed then), -1 closes it after its
   acknowledgements, any other epoch must be the session's;
2. the acknowledgements, written by each share-partition before anything is answered;
3. long polling: acquire records from the session's partitions; with none, wait for new data (or
   released records) until MaxWaitMs, then answer. A share-partition whose state partition is still
   loading on its share coordinator is not an error: the fetch tries it again every
   STATE_LOAD_RETRY_S within its wait, as Kafka's persister retries COORDINATOR_LOAD_IN_PROGRESS with
   a backoff, so the client only sees a later answer.
Transactional acknowledgements (KIP-1289): stage() puts a member's ACCEPT / REJECT acknowledgements of
several partitions into a producer's transaction, all or nothing (a failing partition rolls the others
back before the answer); on_txn_marker() hands every marker of `__share_group_state` to the
share-partitions of this node, which match it by producer id. A COMMIT that cannot be written yet is
retried on each tick, so a marker is never lost on a busy share coordinator.
Read from a partition: up to the high watermark, or under read_committed (share.isolation.level) up to
the last stable offset, so a hanging transaction stalls the share group exactly as it does a
read_committed consumer group.

Collaborators come through the constructor: this node's replicas, the topic-id view, the persister, the
group configs and the clock. Event-loop owned; only fetch() awaits (in the long poll).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from kafka_txn_broker.configs.group_config import ShareAutoOffsetReset
from kafka_txn_broker.formats import errors as E
from kafka_txn_broker.formats.errors import (
    BrokerResponseError,
    CoordinatorLoadInProgressError,
    InvalidRecordStateError,
    InvalidRequestError,
    InvalidShareSessionEpochError,
    NotLeaderForPartitionError,
    ShareSessionNotFoundError,
    UnknownTopicIdError,
)
from kafka_txn_broker.formats.record_batch import BatchHeader, iter_batches
from kafka_txn_broker.formats.share_coordinator_records import StateBatch
from kafka_txn_broker.histogram import Histogram
from kafka_txn_broker.share.share_partition import (
    AckBatch,
    AcquiredRange,
    PendingTxn,
    SharePartition,
    SharePartitionKey,
    StatePersister,
)
from kafka_txn_broker.share.share_session import FINAL_EPOCH, INITIAL_EPOCH, ShareSession, ShareSessionCache

if TYPE_CHECKING:
    from kafka_txn_broker.clock import Clock
    from kafka_txn_broker.metadata.topics import PartitionState

log = logging.getLogger(__name__)

TopicIdPartition = tuple[uuid.UUID, int]
RENEW = 4
RECORD_LIMIT_MODE = 1
# How soon a fetch tries a share-partition again whose state partition is loading (Kafka's persister
# retries after a backoff; a retry here costs one lookup).
STATE_LOAD_RETRY_S = 0.01


class LeaderReplicas(Protocol):
    """This node's replicas (ReplicaManager): a partition's replica, and the long-poll wake-up."""

    def get(self, topic: str, partition: int) -> Any: ...

    def notify_data(self) -> None: ...

    async def wait_for_data(self, timeout_s: float) -> None: ...


class TopicNames(Protocol):
    def topic_name(self, topic_id: uuid.UUID) -> str | None: ...

    def leader_of(self, topic: str, partition: int) -> tuple[int, int]:
        """(leader node id, leader epoch); (-1, -1) when unknown."""
        ...


class StagingPersister(StatePersister, Protocol):
    def stage_state(self, key: SharePartitionKey, leader_epoch: int, producer_id: int, producer_epoch: int,
                    batches: list[StateBatch]) -> None:
        """Write acknowledgements staged in the producer's transaction (KIP-1289) in that transaction."""
        ...


class GroupShareConfigs(Protocol):
    def share_record_lock_duration_ms(self, group_id: str) -> int: ...

    def share_delivery_count_limit(self, group_id: str) -> int: ...

    def share_partition_max_record_locks(self, group_id: str) -> int: ...

    def share_auto_offset_reset(self, group_id: str) -> ShareAutoOffsetReset: ...

    def share_isolation_level(self, group_id: str) -> str: ...

    def share_renew_acknowledge_enable(self, group_id: str) -> bool: ...


class _GroupLimits:
    """One group's share configs as a SharePartition reads them (dynamic: read at each use)."""

    __slots__ = ("configs", "group_id")

    def __init__(self, configs: GroupShareConfigs, group_id: str) -> None:
        self.configs = configs
        self.group_id = group_id

    def record_lock_duration_ms(self) -> int:
        return self.configs.share_record_lock_duration_ms(self.group_id)

    def delivery_count_limit(self) -> int:
        return self.configs.share_delivery_count_limit(self.group_id)

    def max_in_flight_records(self) -> int:
        return self.configs.share_partition_max_record_locks(self.group_id)


@dataclass(slots=True)
class PartitionResult:
    """What one share-partition answers in a ShareFetch / ShareAcknowledge response."""

    error: int = E.NONE
    message: str | None = None
    ack_error: int = E.NONE
    ack_message: str | None = None
    leader_id: int = -1
    leader_epoch: int = -1
    records: bytes = b""
    acquired: list[AcquiredRange] = field(default_factory=list)
    acknowledged: bool = False  # acknowledgements for it came with the request: the answer reports them


@dataclass(frozen=True, slots=True)
class ShareFetchCall:
    group_id: str
    member_id: str
    epoch: int
    max_wait_ms: int
    max_bytes: int
    max_records: int
    fetch: list[TopicIdPartition]                      # partitions added to the session
    acks: dict[TopicIdPartition, list[AckBatch]]       # acknowledgements, per partition
    forget: list[TopicIdPartition]
    connection: object | None = None
    record_limit: bool = False  # ShareFetch v2 ShareAcquireMode 1: MaxRecords is a hard limit


@dataclass(slots=True)
class ShareFetchResult:
    error: int = E.NONE
    message: str | None = None
    lock_timeout_ms: int = 0
    partitions: dict[TopicIdPartition, PartitionResult] = field(default_factory=dict)


class SharePartitionManager:
    def __init__(self, node_id: int, replicas: LeaderReplicas, topics: TopicNames, persister: StagingPersister,
                 configs: GroupShareConfigs, clock: Clock, max_sessions: int = 2000) -> None:
        self.node_id = node_id
        self.replicas = replicas
        self.topics = topics
        self.persister = persister
        self.configs = configs
        self.clock = clock
        self.partitions: dict[SharePartitionKey, SharePartition] = {}
        self.sessions = ShareSessionCache(max_sessions)
        self._rotation = 0
        # COMMIT markers whose acknowledgements could not be written yet: (share-partition, producer id).
        self._unwritten_commits: set[tuple[SharePartitionKey, int]] = set()
        self._expired_pending_of_dropped = 0  # TxnPendingLockExpiredCount of share-partitions since unloaded
        self.txn_ack_latency = Histogram()  # TxnShareAcknowledgeRequestLatencyMs (observed by the API handler)

    # ---- ShareFetch ----------------------------------------------------------------------------------
    async def fetch(self, call: ShareFetchCall) -> ShareFetchResult:
        try:
            session = self._session_for_fetch(call)
        except BrokerResponseError as exc:
            return ShareFetchResult(int(exc.errno), _message(exc))
        result = ShareFetchResult(lock_timeout_ms=self.configs.share_record_lock_duration_ms(call.group_id))
        for tp, batches in call.acks.items():
            code, message = self.acknowledge_one(call.group_id, call.member_id, tp, batches)
            result.partitions[tp] = PartitionResult(ack_error=code, ack_message=message, acknowledged=True)
        if session is None:  # epoch -1: acknowledgements only, then the session is gone
            self.close_session(call.group_id, call.member_id)
            return result
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(call.max_wait_ms, 0) / 1000.0
        while True:
            acquired, state_loading = self._fetch_all(call, session, result)
            remaining = deadline - loop.time()
            failed = any(r.error for r in result.partitions.values())
            if acquired or failed or remaining <= 0 or self.sessions.get(call.group_id, call.member_id) is not session:
                return result
            await self.replicas.wait_for_data(min(remaining, STATE_LOAD_RETRY_S) if state_loading else remaining)

    def _session_for_fetch(self, call: ShareFetchCall) -> ShareSession | None:
        if not call.group_id:
            raise InvalidRequestError("GroupId can't be empty in a ShareFetch")
        if not call.member_id:
            raise InvalidRequestError("MemberId can't be empty in a ShareFetch")
        if call.epoch == INITIAL_EPOCH:
            if call.acks:
                raise InvalidRequestError("acknowledgements cannot be sent with share session epoch 0")
            session, old = self.sessions.open(call.group_id, call.member_id, call.connection)
            if old is not None:
                self._release_member(call.group_id, call.member_id)
        elif call.epoch == FINAL_EPOCH:
            if call.fetch:
                raise InvalidRequestError("a ShareFetch closing its session (epoch -1) cannot fetch")
            if self.sessions.get(call.group_id, call.member_id) is None:
                raise ShareSessionNotFoundError(f"no share session for member {call.member_id}")
            return None
        else:
            session = self.sessions.advance(call.group_id, call.member_id, call.epoch)
        session.add(call.fetch)
        session.forget(call.forget)
        return session

    def _fetch_all(self, call: ShareFetchCall, session: ShareSession, result: ShareFetchResult) -> tuple[int, bool]:
        """One pass over the session's partitions (a rotating start, for fairness): acquired records, and
        whether a share-partition's state is still loading."""
        parts = session.partitions
        if not parts:
            return 0, False
        self._rotation = (self._rotation + 1) % len(parts)
        budget_records, budget_bytes, acquired = call.max_records, max(call.max_bytes, 1), 0
        state_loading = False
        for tp in parts[self._rotation:] + parts[:self._rotation]:
            if budget_records <= 0 or budget_bytes <= 0:
                break
            res = result.partitions.setdefault(tp, PartitionResult())
            if res.acquired or res.error:
                continue
            state_loading |= self._fetch_partition(call, tp, budget_records, budget_bytes, res)
            got = sum(r.last_offset - r.first_offset + 1 for r in res.acquired)
            acquired += got
            budget_records -= got
            budget_bytes -= len(res.records)
        for tp in [tp for tp, r in result.partitions.items() if _empty(r)]:
            del result.partitions[tp]  # nothing to say about it in this answer
        return acquired, state_loading

    def _fetch_partition(self, call: ShareFetchCall, tp: TopicIdPartition, max_records: int, max_bytes: int,
                         out: PartitionResult) -> bool:
        """Acquire records of one partition into `out`; True when its state is loading (try again soon)."""
        try:
            part = self._leader(tp, out)
            sp = self._share_partition(call.group_id, tp, part)
            self._acquire(sp, part, call, max_records, max_bytes, out)
        except CoordinatorLoadInProgressError:
            return True  # nothing for this partition yet, and no error: see the module docstring
        except BrokerResponseError as exc:
            out.error, out.message = int(exc.errno), _message(exc)
        except Exception as exc:  # a bug must not fail the other partitions
            log.exception("share fetch of %s for group %s failed", tp, call.group_id)
            out.error, out.message = E.UNKNOWN_SERVER_ERROR, repr(exc)
        return False

    def _acquire(self, sp: SharePartition, part: Any, call: ShareFetchCall, max_records: int, max_bytes: int,
                 out: PartitionResult) -> None:
        sp.expire_locks()
        if not sp.can_acquire():
            return
        ulog = part.log
        if sp.next_fetch_offset() < ulog.log_start_offset:
            sp.archive_below(ulog.log_start_offset)
        offset = sp.next_fetch_offset()
        committed = self.configs.share_isolation_level(sp.key.group_id) == "read_committed"
        data = ulog.read(offset, max_bytes, committed, min_one_batch=True)
        if not data.records:
            return
        records = bytes(data.records)
        batches = list(iter_batches(records))
        aborted = [(a.producer_id, a.first_offset) for a in (data.aborted_transactions or [])]
        acquired = sp.acquire(call.member_id, [h for _pos, h in batches], max_records, fetch_offset=offset,
                              read_committed=committed, aborted=aborted, record_limit=call.record_limit)
        if acquired:
            out.acquired = acquired
            out.records = _covering(records, batches, acquired[0].first_offset, acquired[-1].last_offset)

    def _leader(self, tp: TopicIdPartition, out: PartitionResult) -> Any:
        name = self.topics.topic_name(tp[0])
        if name is None:
            raise UnknownTopicIdError(f"no topic has id {tp[0]}")
        part = self.replicas.get(name, tp[1])
        if part is None or not part.is_leader:
            out.leader_id, out.leader_epoch = self.topics.leader_of(name, tp[1])
            raise NotLeaderForPartitionError(f"node {self.node_id} does not lead {name}-{tp[1]}")
        out.leader_id, out.leader_epoch = self.node_id, part.state.leader_epoch
        return part

    def _share_partition(self, group_id: str, tp: TopicIdPartition, part: Any) -> SharePartition:
        key = SharePartitionKey(group_id, tp[0], tp[1])
        sp = self.partitions.get(key)
        epoch = part.state.leader_epoch
        if sp is not None and (sp.fenced or sp.leader_epoch != epoch):
            self._drop(key)  # fenced, or from an older leadership of ours: load it again
            sp = None
        if sp is None:
            sp = SharePartition(key, epoch, self.persister, self.clock, _GroupLimits(self.configs, group_id))
            sp.initialize(lambda: self._reset_offset(group_id, part.log))
            self.partitions[key] = sp
        return sp

    def _reset_offset(self, group_id: str, ulog: Any) -> int:
        """share.auto.offset.reset: the high watermark (latest), the log start (earliest), or the first
        offset of a record at most the duration old (by_duration)."""
        strategy = self.configs.share_auto_offset_reset(group_id)
        if strategy.strategy == "earliest":
            return int(ulog.log_start_offset)
        if strategy.strategy == "by_duration":
            found = ulog.offset_for_timestamp(strategy.timestamp(self.clock.millis()))
            if found is not None:
                return int(found[0])
        return int(ulog.high_watermark)

    # ---- ShareAcknowledge ----------------------------------------------------------------------------
    def acknowledge(self, group_id: str, member_id: str, epoch: int,
                    acks: dict[TopicIdPartition, list[AckBatch]]) -> ShareFetchResult:
        try:
            if not group_id or not member_id:
                raise InvalidRequestError("GroupId and MemberId can't be empty in a ShareAcknowledge")
            if epoch == INITIAL_EPOCH:
                raise InvalidShareSessionEpochError("a ShareAcknowledge needs an open share session")
            if epoch != FINAL_EPOCH:
                self.sessions.advance(group_id, member_id, epoch)
            elif self.sessions.get(group_id, member_id) is None:
                raise ShareSessionNotFoundError(f"no share session for member {member_id}")
        except BrokerResponseError as exc:
            return ShareFetchResult(int(exc.errno), _message(exc))
        result = ShareFetchResult(lock_timeout_ms=self.configs.share_record_lock_duration_ms(group_id))
        for tp, batches in acks.items():
            code, message = self.acknowledge_one(group_id, member_id, tp, batches)
            res = result.partitions[tp] = PartitionResult(error=code, message=message)
            name = self.topics.topic_name(tp[0])
            if code == NotLeaderForPartitionError.errno and name is not None:
                res.leader_id, res.leader_epoch = self.topics.leader_of(name, tp[1])
        if epoch == FINAL_EPOCH:
            self.close_session(group_id, member_id)
        return result

    def acknowledge_one(self, group_id: str, member_id: str, tp: TopicIdPartition,
                        batches: list[AckBatch]) -> tuple[int, str | None]:
        try:
            name = self.topics.topic_name(tp[0])
            if name is None:
                raise UnknownTopicIdError(f"no topic has id {tp[0]}")
            part = self.replicas.get(name, tp[1])
            if part is None or not part.is_leader:
                raise NotLeaderForPartitionError(f"node {self.node_id} does not lead {name}-{tp[1]}")
            if any(t == RENEW for b in batches for t in b.ack_types) \
                    and not self.configs.share_renew_acknowledge_enable(group_id):
                raise InvalidRequestError(f"RENEW acknowledgements are off for group {group_id} "
                                          f"(share.renew.acknowledge.enable=false)")
            sp = self.partitions.get(SharePartitionKey(group_id, tp[0], tp[1]))
            if sp is None:
                raise InvalidRecordStateError(f"member {member_id} holds no records of {name}-{tp[1]}")
            sp.acknowledge(member_id, batches)
        except BrokerResponseError as exc:
            return int(exc.errno), _message(exc)
        if any(t != 1 for b in batches for t in b.ack_types):
            self.replicas.notify_data()  # released records: a waiting fetch may take them
        return E.NONE, None

    # ---- TxnShareAcknowledge (KIP-1289) -------------------------------------------------------------
    def stage(self, group_id: str, member_id: str, producer_id: int, producer_epoch: int,
              acks: dict[TopicIdPartition, list[AckBatch]]) -> dict[TopicIdPartition, PartitionResult]:
        """Stage the acknowledgements of every partition in the producer's transaction, or none: when one
        partition fails, those already staged are rolled back, and answer the same error naming it.
        Staged records are then written in the producer's transaction (durable until its marker); a
        failed write rolls back every partition too. Writes that succeeded before it stay in the log, in
        a transaction the producer must now abort (the error is abortable), which drops them."""
        results: dict[TopicIdPartition, PartitionResult] = {}
        staged: list[tuple[SharePartition, list[AckBatch]]] = []
        failed: tuple[TopicIdPartition, int] | None = None
        for tp, batches in acks.items():
            res = results[tp] = PartitionResult()
            try:
                sp = self._held_share_partition(group_id, member_id, tp, res)
                sp.stage(member_id, producer_id, batches)
                staged.append((sp, batches))
            except BrokerResponseError as exc:
                res.error, res.message = int(exc.errno), _message(exc)
                failed = tp, res.error
                break
        if failed is None:
            failed = self._write_staged(producer_id, producer_epoch, staged, results)
        if failed is not None:
            for sp, batches in staged:
                sp.unstage(producer_id, batches)
            for tp in acks:
                if tp != failed[0]:
                    results[tp] = PartitionResult(error=failed[1], message=f"not staged: partition {failed[0][1]} "
                                                                           f"of topic {failed[0][0]} failed")
        return results

    def _write_staged(self, producer_id: int, producer_epoch: int, staged: list[tuple[SharePartition, list[AckBatch]]],
                      results: dict[TopicIdPartition, PartitionResult]) -> tuple[TopicIdPartition, int] | None:
        for sp, batches in staged:
            try:
                self.persister.stage_state(sp.key, sp.leader_epoch, producer_id, producer_epoch,
                                           sp.staged_batches(producer_id, batches))
            except BrokerResponseError as exc:
                tp = (sp.key.topic_id, sp.key.partition)
                results[tp] = PartitionResult(error=int(exc.errno), message=_message(exc))
                return tp, int(exc.errno)
        return None

    def _held_share_partition(self, group_id: str, member_id: str, tp: TopicIdPartition,
                              res: PartitionResult) -> SharePartition:
        name = self.topics.topic_name(tp[0])
        if name is None:
            raise UnknownTopicIdError(f"no topic has id {tp[0]}")
        part = self.replicas.get(name, tp[1])
        if part is None or not part.is_leader:
            res.leader_id, res.leader_epoch = self.topics.leader_of(name, tp[1])
            raise NotLeaderForPartitionError(f"node {self.node_id} does not lead {name}-{tp[1]}")
        sp = self.partitions.get(SharePartitionKey(group_id, tp[0], tp[1]))
        if sp is None:
            raise InvalidRecordStateError(f"member {member_id} holds no records of {name}-{tp[1]}")
        return sp

    def on_txn_marker(self, producer_id: int, commit: bool) -> int:
        """A transaction marker reached `__share_group_state` (the KIP's broadcast: every share-partition
        here looks for what the producer staged). Returns how many records it resolved."""
        resolved = 0
        for key, sp in list(self.partitions.items()):
            try:
                resolved += sp.complete_transaction(producer_id, commit)
            except BrokerResponseError as exc:
                log.warning("COMMIT of producer %s on %s not written yet (retried): %s", producer_id, key, exc)
                self._unwritten_commits.add((key, producer_id))
        if resolved and not commit:
            self.replicas.notify_data()
        return resolved

    def _retry_commits(self) -> None:
        for key, producer_id in list(self._unwritten_commits):
            sp = self.partitions.get(key)
            try:
                if sp is not None:
                    sp.complete_transaction(producer_id, True)
            except BrokerResponseError:
                continue
            self._unwritten_commits.discard((key, producer_id))

    def pending_transactions(self) -> dict[SharePartitionKey, list[PendingTxn]]:
        """What open transactions hold TX_PENDING on this node's share-partitions."""
        return {key: p for key, sp in self.partitions.items() if (p := sp.pending_transactions())}

    def txn_pending_records_count(self) -> int:
        return sum(t.records for ts in self.pending_transactions().values() for t in ts)

    def txn_pending_lock_expired_count(self) -> int:
        return self._expired_pending_of_dropped + sum(sp.expired_pending_locks for sp in self.partitions.values())

    # ---- releases ------------------------------------------------------------------------------------
    def close_session(self, group_id: str, member_id: str) -> None:
        if self.sessions.close(group_id, member_id) is not None:
            self._release_member(group_id, member_id)

    def on_member_removed(self, group_id: str, member_id: str) -> None:
        """The member left its share group, or its session there expired: what it holds goes back. While
        it still has a share session here, its records wait for that session to close (a closing client
        leaves the group and closes its sessions at once; its last acknowledgements come with the
        session's close), for the connection to drop, or for their locks to expire."""
        if self.sessions.get(group_id, member_id) is None:
            self._release_member(group_id, member_id)

    def on_connection_closed(self, connection: object) -> None:
        for s in self.sessions.of_connection(connection):
            self.close_session(s.group_id, s.member_id)

    def _release_member(self, group_id: str, member_id: str) -> None:
        released = 0
        for key, sp in list(self.partitions.items()):
            if key.group_id == group_id:
                try:
                    released += sp.release_member(member_id)
                except BrokerResponseError as exc:
                    # Not written: the lock still expires, and releases them then.
                    log.warning("releasing %s for member %s failed: %s", key, member_id, exc)
        if released:
            self.replicas.notify_data()

    def tick(self) -> None:
        """Acquisition locks that ran out release their records (written like any release)."""
        self._retry_commits()
        released = 0
        for key, sp in list(self.partitions.items()):
            try:
                released += sp.expire_locks()
            except BrokerResponseError as exc:
                log.warning("lock expiry of %s not written yet: %s", key, exc)
        if released:
            self.replicas.notify_data()

    def on_leadership_change(self, changed: Iterable[PartitionState]) -> None:
        """A partition this node stopped leading (or leads at a new epoch) loses its share-partitions:
        what was only acquired is delivered again by the new leader, from the persisted state."""
        moved = {(s.topic, s.partition) for s in changed}
        for key in list(self.partitions):
            name = self.topics.topic_name(key.topic_id)
            if name is None or (name, key.partition) in moved:
                self._drop(key)

    def forget(self, keys: Iterable[SharePartitionKey]) -> None:
        """Their persisted state was reset or deleted: load it again on next use."""
        for key in keys:
            self._drop(key)

    def _drop(self, key: SharePartitionKey) -> None:
        """Unload a share-partition. What it held TX_PENDING was also written in its transaction: the new
        leader loads those records pending again, and their marker resolves them there."""
        sp = self.partitions.pop(key, None)
        if sp is not None:
            self._expired_pending_of_dropped += sp.expired_pending_locks

    # ---- views (admin) -------------------------------------------------------------------------------
    def share_partitions_of(self, group_id: str) -> list[SharePartition]:
        return [sp for key, sp in self.partitions.items() if key.group_id == group_id]


def _empty(r: PartitionResult) -> bool:
    return not (r.error or r.ack_error or r.acquired or r.acknowledged)


def _covering(records: bytes, batches: Sequence[tuple[int, BatchHeader]], first: int, last: int) -> bytes:
    """The whole batches of `records` that hold offsets first..last."""
    start = end = None
    for pos, h in batches:
        if start is None and h.last_offset >= first:
            start = pos
        if h.base_offset <= last:
            end = pos + h.size
    return records[start or 0:end or 0]


def _message(exc: BaseException) -> str | None:
    return str(exc.args[0]) if exc.args else None

