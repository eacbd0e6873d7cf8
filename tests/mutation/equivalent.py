"""Surviving mutants that no test can kill, each with the reason.

An entry names the file, the function (as the runner prints it) and a piece of the mutant's change (text
found in its diff's changed lines, whitespace ignored). Keep entries specific: an entry that matched a
mutant which behaves differently would hide a missing test.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Equivalent:
    path: str
    function: str
    change: str  # found in the mutant's +/- lines, whitespace ignored
    reason: str


UNIFIED_LOG = "broker/kafka_txn_broker/log/unified_log.py"
SHARE_PARTITION = "broker/kafka_txn_broker/share/share_partition.py"
TXN_COORDINATOR = "broker/kafka_txn_broker/txn/coordinator.py"
TXN_STATE = "kafka_txn_tools/admin/transaction_state.py"
ONLY_FILTER = ("the `only` filter skips decoding the values of ids not asked about; what it lets through is "
               "filtered by `ids` again just after: it saves work, never changes what is kept")
NO_TIME_YET = ("the default stands for 'no time yet': record times are the coordinator's wall clock in ms "
               "(TransactionLastUpdateTimestampMs), far above 1")
TOPIC_ERROR_DEFAULT = ("Kafka's Metadata answers a topic it was asked for with partitions or an error code: with no "
                       "partitions the topic's error is there, so the default is never used")
SAME_METADATA = ("`txn_meta` is a Metadata answer the caller already has: without it the same is asked for again "
                 "(one request more, the same answer)")
ONE_IDS_DECISIONS = ("decision_for matches Prepare records by producer id and epoch (or previous producer id), which "
                     "belong to one transactional id: keeping every id's records costs memory, changes no answer")

EQUIVALENTS: tuple[Equivalent, ...] = (
    Equivalent("kafka_txn_tools/admin/commit.py", "_commit_decision", "'XX; XX'.join(read.notes)}, so the",
               "with no partition to read, decision_on returns exactly one note: a separator joins nothing"),
    Equivalent("kafka_txn_tools/admin/commit.py", "_commit_decision", "unread = f\" ({'XX; XX'.join(read.notes)})",
               "decision_on reads one partition: it is unread, or answers an error, or is read (truncated at most), "
               "one note each; a separator between notes needs two"),
    Equivalent("kafka_txn_tools/admin/hanging.py", "_view", "found=None)",
               "`found` is read only as `if not view.found` (reason_against): None and False are both false"),
    Equivalent("kafka_txn_tools/admin/coordinator_rules.py", "judge_coordinator", "coordinator_waits=None)",
               "pending_partition reads it only as `if not coordinator_waits`: None and False are both false"),
    Equivalent("kafka_txn_tools/admin/hanging.py", "last_known_owner", "key[1] <= best[1]",
               "equal time and equal id is the same key: replacing best with it changes nothing"),
    # --- the read of __transaction_state (admin/transaction_state.py) ---
    Equivalent(TXN_STATE, '_absorb', "only = None  # other ids'",
               ONLY_FILTER),
    Equivalent(TXN_STATE, '_absorb', 'only = None if (owners or ids is None) or True else',
               ONLY_FILTER),
    Equivalent(TXN_STATE, '_absorb', 'decode(tp, batches, None, out.notes)',
               ONLY_FILTER),
    Equivalent(TXN_STATE, '_absorb', 'out.owned.get((txn_id, pid), +1) <',
               NO_TIME_YET),
    Equivalent(TXN_STATE, '_absorb', 'out.owned.get((txn_id, pid), -2) <',
               NO_TIME_YET),
    Equivalent(TXN_STATE, '_absorb', 'out.owned.get((txn_id, pid), -1) <= meta',
               "an equal time keeps the same value: writing it again changes nothing"),
    Equivalent(TXN_STATE, 'decision_on', 'get(TXN_TOPIC, None)',
               TOPIC_ERROR_DEFAULT),
    Equivalent(TXN_STATE, 'decision_on', 'get(TXN_TOPIC, )',
               TOPIC_ERROR_DEFAULT),
    Equivalent(TXN_STATE, 'decision_on', '"XXno partitionsXX"',
               TOPIC_ERROR_DEFAULT),
    Equivalent(TXN_STATE, 'decision_on', '"NO PARTITIONS"',
               TOPIC_ERROR_DEFAULT),
    Equivalent(TXN_STATE, 'decision_on', 'txn_meta=None, ids={transactional_id})',
               SAME_METADATA),
    Equivalent(TXN_STATE, 'decision_on', 'CLOCK_SLACK_MS, ids={transactional_id})',
               SAME_METADATA),
    Equivalent(TXN_STATE, 'decision_on', 'txn_meta=meta, ids=None)',
               ONE_IDS_DECISIONS),
    Equivalent(TXN_STATE, 'decision_on', 'txn_meta=meta, )',
               ONE_IDS_DECISIONS),
    Equivalent(TXN_STATE, 'read', 'if (txn_meta is not None) and False else',
               SAME_METADATA),
    Equivalent(TXN_STATE, 'read', 'client.metadata(None)',
               "Metadata of every topic holds `__transaction_state`'s partitions and error as Metadata of it does"),
    Equivalent(TXN_STATE, 'read', 'get(TXN_TOPIC, None)',
               TOPIC_ERROR_DEFAULT),
    Equivalent(TXN_STATE, 'read', 'get(TXN_TOPIC, )',
               TOPIC_ERROR_DEFAULT),
    Equivalent(TXN_STATE, 'read', '"XXUNKNOWN_TOPIC_OR_PARTITIONXX"',
               TOPIC_ERROR_DEFAULT),
    Equivalent(TXN_STATE, 'read', '"unknown_topic_or_partition"',
               TOPIC_ERROR_DEFAULT),
    # --- abort (admin/abort.py, admin/abort_batch.py) ---
    Equivalent("kafka_txn_tools/admin/abort.py", "_add_coordinator_view", "producer_ids=None)",
               "the listing is filtered again by producer id right after; the filter in the request only spares "
               "the brokers listing the other transactions"),
    Equivalent("kafka_txn_tools/admin/abort.py", "_add_coordinator_view", "list_transactions(cluster.broker_ids(), )",
               "the listing is filtered again by producer id right after; the filter in the request only spares "
               "the brokers listing the other transactions"),
    Equivalent("kafka_txn_tools/admin/abort.py", "_add_coordinator_view", "if (failures) or True else",
               "the verdict is None only when an id's description is missing, which the client reports as an "
               "error (listed or described): `failures` is never empty there"),
    Equivalent("kafka_txn_tools/admin/abort.py", "_add_coordinator_view", 'if failures else "XXXX"',
               "the verdict is None only when an id's description is missing, which the client reports as an "
               "error (listed or described): `failures` is never empty there"),
    Equivalent("kafka_txn_tools/admin/abort.py", "_after", "time.monotonic() > deadline",
               "a monotonic deadline met at the same instant: the two differ by one poll at the very end of the "
               "wait, which no caller can observe"),
    Equivalent("kafka_txn_tools/admin/abort.py", "_follow_leader", "time.monotonic() > deadline",
               "a monotonic deadline met at the same instant: the two differ by one poll at the very end of the "
               "wait, which no caller can observe"),
    Equivalent("kafka_txn_tools/admin/abort.py", "_open_state", "if errors or not replicas:",
               "DescribeProducers is asked for one partition of one broker: the answer is that replica or an "
               "error, never both and never neither"),
    Equivalent("kafka_txn_tools/admin/abort.py", "refuse_mismatches", 'if (name == "coordinator epoch") or True',
               "the coordinator-epoch rule differs from equality only for a negative live value; a producer with "
               "an open transaction has a producer id and an epoch of 0 or more"),
    Equivalent("kafka_txn_tools/admin/abort.py", "execute", "settle_s: float = 4.0",
               "a tuning default (how long to poll for the LSO after the marker): every outcome is the same, only "
               "the wait's bound differs"),
    Equivalent("kafka_txn_tools/admin/abort_batch.py", "write", "settle_s: float = 4.0",
               "a tuning default (how long to poll for the LSO after the marker): every outcome is the same, only "
               "the wait's bound differs"),
    # --- the sweep (spark/classify.py) ---
    Equivalent("kafka_txn_tools/spark/classify.py", "_leader_rank", "is None else 3",
               "only the order of the flags matters: 0 < 1 < 3 sorts as 0 < 1 < 2"),
    Equivalent("kafka_txn_tools/spark/classify.py", "_leader_view", "epoch, None, row.last_timestamp_ms",
               "the sweep's pending-partition rules never read the producer's last sequence"),
    Equivalent("kafka_txn_tools/spark/classify.py", "_leader_view", "epoch, +1, row.last_timestamp_ms",
               "the sweep's pending-partition rules never read the producer's last sequence"),
    Equivalent("kafka_txn_tools/spark/classify.py", "_leader_view", "epoch, -2, row.last_timestamp_ms",
               "the sweep's pending-partition rules never read the producer's last sequence"),
    Equivalent("kafka_txn_tools/spark/classify.py", "_leader_view", "-1, None,",
               "the sweep's pending-partition rules never read the producer's last timestamp"),
    Equivalent("kafka_txn_tools/spark/classify.py", "_leader_view", "None, row.start_offset)",
               "the sweep's coordinator rows carry no coordinator epoch (dumps have none), so the leader's is "
               "never compared"),
    Equivalent("kafka_txn_tools/spark/classify.py", "decide", "if (views is not None) and False else",
               "`views` are the same rows' views, made once for many candidates; without them decide makes the "
               "same views again"),
    Equivalent("kafka_txn_tools/spark/classify.py", "verdicts", "by_producer.get(row.producer_id, []), None)",
               "`views` are the same rows' views, made once for many candidates; without them decide makes the "
               "same views again"),
    Equivalent("kafka_txn_tools/spark/classify.py", "verdicts", "by_producer.get(row.producer_id, []), )",
               "`views` are the same rows' views, made once for many candidates; without them decide makes the "
               "same views again"),
    Equivalent("kafka_txn_tools/spark/classify.py", "verdicts", "views.get(row.producer_id, None))",
               "`views` are the same rows' views, made once for many candidates; without them decide makes the "
               "same views again"),
    Equivalent("kafka_txn_tools/spark/classify.py", "verdicts", "views.get(row.producer_id, ))",
               "`views` are the same rows' views, made once for many candidates; without them decide makes the "
               "same views again"),
    Equivalent("kafka_txn_tools/spark/classify.py", "divergence", "followers.get(row.partition_key, None)",
               "every row kept has a known leader, and the leaders come from the same replicas: its partition is "
               "always in `followers`"),
    Equivalent("kafka_txn_tools/spark/classify.py", "divergence", "followers.get(row.partition_key, )",
               "every row kept has a known leader, and the leaders come from the same replicas: its partition is "
               "always in `followers`"),
    Equivalent("kafka_txn_tools/spark/classify.py", "fresh_open",
               "(row.start_offset, row.source) <= (held.start_offset, held.source)",
               "one producer on one replica's freshest observation with the same start offset from the same "
               "source is one row read twice: either copy is the same"),
    Equivalent("kafka_txn_tools/spark/classify.py", "late_partitions",
               "(row.start_offset, row.producer_id) <= (held.start_offset, held.producer_id)",
               "the leader's rows are one per producer (fresh_open keeps one per producer and replica): equal "
               "start offset and producer id is the same row"),
    Equivalent("kafka_txn_tools/spark/classify.py", "leaders", "_leader_rank(replica) <= _leader_rank(best[key])",
               "the rank ends with the broker id: equal ranks are the same replica of the partition"),
    Equivalent("kafka_txn_tools/spark/classify.py", "stuck", "coordinator_waits=None)",
               "pending_partition reads it only as `if not coordinator_waits`: None and False are both false"),
    # --- the transaction coordinator (broker/kafka_txn_broker/txn/coordinator.py) ---
    Equivalent(TXN_COORDINATOR, "TransactionCoordinator._abort_fenced",
               "from_client=None,", "read only as `not from_client`: None and False are both false"),
    Equivalent(TXN_COORDINATOR, "TransactionCoordinator.init_producer_id",
               "from_client=None,", "read only as `not from_client`: None and False are both false"),
    Equivalent(TXN_COORDINATOR, "TransactionCoordinator.abort_timed_out_transactions",
               "timed_out_transactions(None)",
               "timed_out_transactions measures elapsed time on the monotonic clock; its now_ms is not read"),
    Equivalent(TXN_COORDINATOR, "TransactionCoordinator.tick", "abort_timed_out_transactions(None)",
               "the scan measures elapsed time on the monotonic clock; now_ms is not read on that path"),
    Equivalent(TXN_COORDINATOR, "TransactionCoordinator.abort_timed_out_transactions",
               "md.producer_id != producer_id and md.pending_transition_in_progress",
               "the listing and this look-up run in one step of the broker's single event loop: the metadata "
               "listed is the one found, same producer id, no pending transition"),
    Equivalent(TXN_COORDINATOR, "TransactionCoordinator.abort_timed_out_transactions",
               "md is None and md.producer_id != producer_id",
               "the listing and this look-up run in one step of the broker's single event loop: the metadata "
               "listed is the one found, same producer id, no pending transition"),
    Equivalent(TXN_COORDINATOR, "TransactionCoordinator._after_prepare", "return _error(None)",
               "append_transaction_to_log answers NONE only after it applied this very transition, in the same "
               "call, to the metadata it found at this coordinator epoch (appends and replication are synchronous, "
               "on one event loop); nothing runs between that and this re-check, which therefore always finds the "
               "id at this epoch, in PREPARE_*, with no pending state, the request's producer id and the epoch as "
               "prepared: none of its refusals can be reached (Kafka needs them: its append callback runs later)"),
    Equivalent(TXN_COORDINATOR, "TransactionCoordinator._after_prepare",
               "if md is None and epoch != coordinator_epoch:",
               "append_transaction_to_log answers NONE only after it applied this very transition, in the same "
               "call, to the metadata it found at this coordinator epoch (appends and replication are synchronous, "
               "on one event loop); nothing runs between that and this re-check, which therefore always finds the "
               "id at this epoch, in PREPARE_*, with no pending state, the request's producer id and the epoch as "
               "prepared: none of its refusals can be reached (Kafka needs them: its append callback runs later)"),
    Equivalent(TXN_COORDINATOR, "TransactionCoordinator._after_prepare",
               "bumped_ok = supports_epoch_bump(client_tv) or md.producer_epoch == producer_epoch + 1",
               "append_transaction_to_log answers NONE only after it applied this very transition, in the same "
               "call, to the metadata it found at this coordinator epoch (appends and replication are synchronous, "
               "on one event loop); nothing runs between that and this re-check, which therefore always finds the "
               "id at this epoch, in PREPARE_*, with no pending state, the request's producer id and the epoch as "
               "prepared: none of its refusals can be reached (Kafka needs them: its append callback runs later)"),
    Equivalent(TXN_COORDINATOR, "TransactionCoordinator.abort_timed_out_transactions", "break",
               "the two `continue`s skip ids missing or changed since the listing; the listing and these look-ups run "
               "in one step of the broker's single event loop (aborting one id changes no other Ongoing id), so "
               "neither is ever taken. (A fence that fails is skipped by try/else, not by a continue.)"),
    Equivalent(TXN_COORDINATOR, "TransactionCoordinator._on_election",
               "remove_markers_for_txn_topic_partition(None)",
               "an id leaves the marker channel once its COMPLETE_* is written or refused, so every entry of this "
               "partition belongs to an id whose last record is PREPARE_*: the load hands it to the channel again "
               "under the same id, replacing the stale entry"),
    Equivalent(TXN_COORDINATOR, "TransactionCoordinator._prepare_end_tv1", "self.clock.millis(), None)",
               "no_partition_added is read only as `if no_partition_added`: None and False are both false"),
    Equivalent(TXN_COORDINATOR, "TransactionCoordinator._prepare_end_tv2",
               "S.PREPARE_COMMIT if commit else S.PREPARE_ABORT, None, is_fence",
               "no_partition_added is read only as `if no_partition_added`: None and False are both false"),
    Equivalent(TXN_COORDINATOR, "TransactionCoordinator._prepare_end_tv2",
               "_tv2_completion(md, S.PREPARE_ABORT, True, None, producer_epoch",
               "is_fence is False on this branch: a fence is prepared only from Ongoing (PrepareEpochFence's only "
               "valid previous state) and no transition completes while it is pending, so the state is still Ongoing; "
               "None is as false as False"),
    Equivalent(TXN_COORDINATOR, "TransactionCoordinator._prepare_end_tv2",
               "_tv2_completion(md, S.PREPARE_ABORT, True, is_fence, None, client_tv)",
               "_tv2_completion reads producer_epoch only to apply a fence, and is_fence is False on this branch (a "
               "fence is prepared only from Ongoing and no transition completes while it is pending)"),
    Equivalent(TXN_COORDINATOR, "TransactionCoordinator._prepare_end_tv2", "retry=None)",
               "_completed_or_invalid reads retry only as `if retry and ...`: None and False are both false"),
    # (end of the transaction coordinator's entries)
    #
    # --- the log: producer state, the LSO, the aborted-transaction index (broker/kafka_txn_broker/log/) ---
    Equivalent(UNIFIED_LOG, "UnifiedLog._find_duplicate", "break",
               "duplicates are looked for in client appends only, and a client append holds exactly one batch "
               "(validate_batches refuses more, as Kafka requires of produce v3+): after skipping a batch without a "
               "producer id there is no next batch, so `break` ends the loop where `continue` would"),
    Equivalent(UNIFIED_LOG, "UnifiedLog.append_marker_info", "prepare_update(producer_id, None)",
               "on the marker path ProducerAppendInfo reads its origin only as `is AppendOrigin.REPLICATION` "
               "(marker epoch, coordinator epoch, transaction start checks) and update() never reads it: None "
               "fails those tests exactly as COORDINATOR does, so the same markers are refused"),
    # (end of the log's entries)
    #
    # --- share partitions (share/share_partition.py, share/record_state.py) ---
    Equivalent(SHARE_PARTITION, "_runs",
               "for i in range(len(events) + 1):",
               "i = 0 compares events[0] with itself (events[start], start = 0): never the end of a run, so the "
               "runs are the same"),
    Equivalent(SHARE_PARTITION, "SharePartition.__init__",
               "self.state_epoch = None",
               "initialize() sets state_epoch from the persisted state before anything reads it: only writes read "
               "it, and only an initialized share-partition writes (acknowledge refuses, releases and markers "
               "return 0 first)"),
    Equivalent(SHARE_PARTITION, "SharePartition.__init__",
               "self.state_epoch = 1",
               "initialize() sets state_epoch from the persisted state before anything reads it: only writes read "
               "it, and only an initialized share-partition writes (acknowledge refuses, releases and markers "
               "return 0 first)"),
    Equivalent(SHARE_PARTITION, "SharePartition.__init__",
               "self.initialized = None",
               "`initialized` is read only as a truth value (`not self.initialized`): None and False are both "
               "false"),
    Equivalent(SHARE_PARTITION, "SharePartition.__init__",
               "self.fenced = None",
               "`fenced` is read only as a truth value (`self.fenced`, the manager's `sp.fenced or ...`): None and "
               "False are both false"),
    Equivalent(SHARE_PARTITION, "SharePartition._apply_available",
               "limit = None",
               "record_state.transition reads `limit` only when the rule's target is AVAILABLE (to archive at the "
               "delivery-count limit instead); the events here are ACQUIRE and ARCHIVE, whose targets are ACQUIRED "
               "and ARCHIVED"),
    Equivalent(SHARE_PARTITION, "SharePartition._apply_available",
               "transition(r.state, event, r.delivery_count, None)",
               "record_state.transition reads `limit` only when the rule's target is AVAILABLE (to archive at the "
               "delivery-count limit instead); the events here are ACQUIRE and ARCHIVE, whose targets are ACQUIRED "
               "and ARCHIVED"),
    Equivalent(SHARE_PARTITION, "SharePartition._archive_vanished",
               "limit = None",
               "record_state.transition reads `limit` only when the rule's target is AVAILABLE (to archive at the "
               "delivery-count limit instead); ARCHIVE's target is ARCHIVED"),
    Equivalent(SHARE_PARTITION, "SharePartition._archive_vanished",
               "transition(r.state, Event.ARCHIVE, r.delivery_count, None)",
               "record_state.transition reads `limit` only when the rule's target is AVAILABLE (to archive at the "
               "delivery-count limit instead); ARCHIVE's target is ARCHIVED"),
    Equivalent(SHARE_PARTITION, "SharePartition._release",
               "self._apply_owned(first, last, event, limit, None)",
               "_apply_owned reads its deadline only for a record that stays ACQUIRED (RENEW); LOCK_EXPIRED and "
               "MEMBER_RELEASE take an ACQUIRED record to AVAILABLE or ARCHIVED"),
    Equivalent(SHARE_PARTITION, "SharePartition._release",
               "self._apply_owned(first, last, event, limit, 1)",
               "_apply_owned reads its deadline only for a record that stays ACQUIRED (RENEW); LOCK_EXPIRED and "
               "MEMBER_RELEASE take an ACQUIRED record to AVAILABLE or ARCHIVED"),
    Equivalent(SHARE_PARTITION, "SharePartition._resolve",
               "limit = None",
               "record_state.transition reads `limit` only when the rule's target is AVAILABLE (to archive at the "
               "delivery-count limit instead); TXN_ABORT, TXN_COMMIT_ACCEPT and TXN_COMMIT_REJECT target ACQUIRED, "
               "ACKNOWLEDGED and ARCHIVED"),
    Equivalent(SHARE_PARTITION, "SharePartition._resolve",
               "transition(r.state, step, r.delivery_count, None)",
               "record_state.transition reads `limit` only when the rule's target is AVAILABLE (to archive at the "
               "delivery-count limit instead); TXN_ABORT, TXN_COMMIT_ACCEPT and TXN_COMMIT_REJECT target ACQUIRED, "
               "ACKNOWLEDGED and ARCHIVED"),
    Equivalent(SHARE_PARTITION, "SharePartition.stage",
               "transition(r.state, Event.TXN_STAGE, r.delivery_count, None)",
               "record_state.transition reads `limit` only when the rule's target is AVAILABLE (to archive at the "
               "delivery-count limit instead); TXN_STAGE targets TX_PENDING (and stage discards the count)"),
    Equivalent(SHARE_PARTITION, "SharePartition.stage",
               "transition(r.state, Event.TXN_STAGE, r.delivery_count, 1)",
               "record_state.transition reads `limit` only when the rule's target is AVAILABLE (to archive at the "
               "delivery-count limit instead); TXN_STAGE targets TX_PENDING (and stage discards the count)"),
    Equivalent(SHARE_PARTITION, "SharePartition._last_within",
               "if first <= self._end else ()",
               "first == end: the loop meets only the last range, which holds none of first..last (hi - lo + 1 = "
               "0): it adds 0, and the budget (at least 1: acquire stops at 0) is not met there"),
    Equivalent(SHARE_PARTITION, "SharePartition._last_within",
               "if r.first >= last:",
               "a range starting at `last` holds only offset `last` of first..last, below the end: counted and "
               "meeting the budget, the answer is lo + budget - taken - 1 = last; not counted, it is `last` too"),
    Equivalent(SHARE_PARTITION, "SharePartition._last_within",
               "if taken + hi - lo + 1 > budget:",
               "the budget met exactly at a range's end: the mutant stops at the offset before the next AVAILABLE "
               "record (or at end - 1) instead; the offsets in between are held by others or completed, and below "
               "the end, so acquire takes the same records and appends nothing new"),
    Equivalent(SHARE_PARTITION, "SharePartition.archive_below",
               "if offset < self.start_offset:",
               "offset == start offset: the split there is index 0 (nothing dropped), start and end stay, and the "
               "start offset has already passed every leading completed record"),
    Equivalent(SHARE_PARTITION, "SharePartition.staged_batches", "limit = None",
               "transition() reads the delivery-count limit only for a target of AVAILABLE; a COMMIT event "
               "(ACCEPT or REJECT) targets ACKNOWLEDGED or ARCHIVED"),
    Equivalent(SHARE_PARTITION, "SharePartition.staged_batches",
               "transition(r.state, r.txn_commit, r.delivery_count, None)",
               "transition() reads the delivery-count limit only for a target of AVAILABLE; a COMMIT event "
               "(ACCEPT or REJECT) targets ACKNOWLEDGED or ARCHIVED"),
    Equivalent(SHARE_PARTITION, "SharePartition.complete_transaction",
               "if r.state is RecordState.TX_PENDING or r.txn_producer_id == producer_id)",
               "it only adds other producers' pending records to the ownerless check; when the producer's own "
               "records all had an owner, the ABORT leaves them ACQUIRED, which is never written: the extra "
               "write finds nothing to persist and the start offset unmoved"),
    # (end of the share partitions' entries)
)


def _squash(text: str) -> str:
    return "".join(text.split())


def reason_for(path: str, function: str, diff: str) -> str | None:
    squashed = _squash(diff)
    for e in EQUIVALENTS:
        if e.path == path and e.function == function and _squash(e.change) in squashed:
            return e.reason
    return None
