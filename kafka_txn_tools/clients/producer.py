"""TransactionalShareProducer: kafka-python's transactional KafkaProducer plus KIP-1289's
send_share_acknowledgements_to_transaction, for read-process-write loops that read from a share group.

    producer = TransactionalShareProducer(bootstrap_servers=..., transactional_id="rpw-1")
    producer.init_transactions()
    producer.begin_transaction()
    producer.send("out", value)                                  # the outputs
    producer.send_share_acknowledgements_to_transaction(        # the inputs, in the same transaction
        {("in", 0): [(5, ACCEPT), (6, 9, ACCEPT)]}, metadata)
    producer.commit_transaction()                                # both, or (abort_transaction) neither

The acknowledgements are staged on the share-partitions' leaders with TxnShareAcknowledge: one request per
leader (topic ids and leaders from Metadata v10+), carrying the producer's transactional id, its current
producer id and epoch, and the share member's group id, member id and epoch. The broker adds the
share-partitions' `__share_group_state` partitions to the transaction through its coordinator and holds the
records TX_PENDING; the transaction's COMMIT marker acknowledges (ACCEPT) or archives (REJECT) them, an ABORT
gives them back to the member. Unlike the KIP's Java method, this call blocks until every leader has answered,
so its errors are raised here (not at commit):
- a type other than ACCEPT/REJECT, a malformed or repeated offset: ValueError, before any request;
- PRODUCER_FENCED, INVALID_PRODUCER_EPOCH, TRANSACTIONAL_ID_AUTHORIZATION_FAILED, INVALID_TXN_STATE:
  FatalShareAcknowledgementError; kafka-python's producer is put in its fatal state, so it must be closed;
- CONCURRENT_TRANSACTIONS (the previous transaction's markers are still being written) and the coordinator's
  COORDINATOR_LOAD_IN_PROGRESS / COORDINATOR_NOT_AVAILABLE / NOT_COORDINATOR: retried a bounded number of times
  (the broker staged nothing), then abortable;
- NOT_LEADER_OR_FOLLOWER on a partition: metadata refreshed and the partition sent to its new leader, at most
  `leader_retries` times, then abortable;
- anything else (STALE_MEMBER_EPOCH, UNKNOWN_MEMBER_ID, INVALID_RECORD_STATE, GROUP_AUTHORIZATION_FAILED, an
  unknown topic, a lost connection, ...): AbortableShareAcknowledgementError; kafka-python's producer is put in
  its abortable state, so commit_transaction() refuses and abort_transaction() is the way on;
- a broker that does not advertise the API: TxnShareAcknowledgeUnsupportedError, before sending it.

kafka-python internals this relies on (kafka-python is pinned to 3.0.12; tests pin each of them):
- `KafkaProducer._transaction_manager`: the TransactionManager holding `producer_id_and_epoch`, `_lock`,
  `_current_state` and `_transaction_started`, and the public transition_to_abortable_error /
  transition_to_fatal_error.
- `_transaction_started`: kafka-python skips EndTxn when it is False ("no partitions or offsets were added"),
  which would leave a transaction holding only share acknowledgements open at the coordinator, its records
  TX_PENDING until the transaction times out. It is set True once a TxnShareAcknowledge may have registered a
  `__share_group_state` partition (a success, or a request whose outcome is unknown), as kafka-python itself
  does after AddPartitionsToTxn / AddOffsetsToTxn.

How librdkafka's ShareConsumer behaves when a producer acknowledges its records: see kafka_txn_tools.clients.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

import kafka.errors as kerrors
from kafka import KafkaProducer

from kafka_txn_tools.clients.acks import AckBatch, TopicPartition, normalize
from kafka_txn_tools.clients.errors import (
    AbortableShareAcknowledgementError,
    FatalShareAcknowledgementError,
    TxnShareAcknowledgeUnsupportedError,
)
from kafka_txn_tools.clients.group_metadata import ShareGroupMetadata, describe_member
from kafka_txn_tools.clients.network import Network, TopicLayout, connection_settings

NONE = 0
NOT_LEADER_OR_FOLLOWER = 6
FATAL = frozenset({"PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH", "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
                   "INVALID_TXN_STATE"})
RETRIABLE = frozenset({"CONCURRENT_TRANSACTIONS", "COORDINATOR_LOAD_IN_PROGRESS", "COORDINATOR_NOT_AVAILABLE",
                       "NOT_COORDINATOR"})
LEADER_RETRIES = 3
COORDINATOR_RETRIES = 20
BACKOFF_MS = 20.0
MAX_BACKOFF_MS = 200.0


def error_name(code: int) -> str:
    return str(kerrors.for_code(code).message)


class TransactionalShareProducer:
    """A transactional producer that can also stage share-group acknowledgements in its transactions.

    Build it with kafka-python KafkaProducer settings (transactional_id required), or wrap an existing
    transactional KafkaProducer with `producer=`. Connection settings are shared with the small admin
    connection set that sends TxnShareAcknowledge and the metadata it needs (see network.py).
    """

    def __init__(self, *, producer: Any = None, network: Network | None = None, leader_retries: int = LEADER_RETRIES,
                 coordinator_retries: int = COORDINATOR_RETRIES, **configs: Any) -> None:
        self._producer = producer if producer is not None else KafkaProducer(**configs)
        tm = getattr(self._producer, "_transaction_manager", None)
        if tm is None or not tm.is_transactional():
            raise ValueError("TransactionalShareProducer needs a transactional producer: set transactional_id")
        self._tm = tm
        self._network = network if network is not None else Network(**connection_settings(self._producer.config))
        self._leader_retries = leader_retries
        self._topic_cache: dict[str, TopicLayout] = {}
        self._coordinator_retries = coordinator_retries

    # ---- the producer's own API, delegated --------------------------------------------------------------
    @property
    def producer(self) -> Any:
        """The wrapped kafka-python KafkaProducer."""
        return self._producer

    def init_transactions(self) -> None:
        self._producer.init_transactions()

    def begin_transaction(self) -> None:
        self._producer.begin_transaction()

    def send(self, topic: str, value: Any = None, key: Any = None, headers: Any = None, partition: int | None = None,
             timestamp_ms: int | None = None) -> Any:
        return self._producer.send(topic, value=value, key=key, headers=headers, partition=partition,
                                   timestamp_ms=timestamp_ms)

    def commit_transaction(self) -> None:
        self._producer.commit_transaction()

    def abort_transaction(self) -> None:
        self._producer.abort_transaction()

    def flush(self, timeout: float | None = None) -> None:
        self._producer.flush(timeout)

    def close(self, timeout: float | None = None) -> None:
        try:
            self._producer.close(timeout)
        finally:
            self._network.close()

    def __enter__(self) -> TransactionalShareProducer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def share_group_metadata(self, group_id: str, client_id: str) -> ShareGroupMetadata:
        """The share consumer with `client.id` = client_id's identity in `group_id` (ShareGroupDescribe)."""
        return describe_member(self._network, group_id, client_id)

    # ---- KIP-1289 -----------------------------------------------------------------------------------------
    def send_share_acknowledgements_to_transaction(self, acks: Mapping[TopicPartition, Iterable[Any]],
                                                   group_metadata: ShareGroupMetadata) -> None:
        """Stage `acks` in the open transaction (see acks.py for their shape; ACCEPT=1, REJECT=3 only).
        Returns once every share-partition leader has staged them; raises as the module docstring says."""
        from kafka_txn_broker.formats.messages import TXN_SHARE_ACKNOWLEDGE_KEY

        batches = normalize(acks)
        if not isinstance(group_metadata, ShareGroupMetadata):
            raise TypeError(f"group_metadata must be a ShareGroupMetadata, not {type(group_metadata).__name__}")
        self._ensure_in_transaction()
        if not batches:
            return
        if not self._network.advertises(TXN_SHARE_ACKNOWLEDGE_KEY):
            raise TxnShareAcknowledgeUnsupportedError("the bootstrap broker")
        pending = batches
        try:
            for attempt in range(self._leader_retries + 1):
                layouts = self._layouts(pending, refresh=attempt > 0)
                moved: dict[TopicPartition, list[AckBatch]] = {}
                for leader, part in sorted(_by_leader(pending, layouts).items()):
                    moved.update(self._stage_on(leader, part, layouts, group_metadata))
                if not moved:
                    return
                pending = moved
            raise self._abortable(f"the leaders of {_names(pending)} kept moving", "NOT_LEADER_OR_FOLLOWER")
        except Exception:
            self._topic_cache.clear()  # a topic recreated (new id) or moved: ask again next time
            raise

    # ---- steps ----------------------------------------------------------------------------------------------
    def _ensure_in_transaction(self) -> None:
        from kafka.producer.transaction_manager import TransactionState

        tm = self._tm
        with tm._lock:
            if tm.has_error():
                raise kerrors.KafkaError(f"cannot stage acknowledgements: the producer is in an error state "
                                         f"({tm.last_error}); abort the transaction (or close, if fatal)")
            if tm._current_state != TransactionState.IN_TRANSACTION:
                raise kerrors.IllegalStateError("cannot stage share acknowledgements outside a transaction: "
                                                "call begin_transaction() first")

    def _layouts(self, pending: Mapping[TopicPartition, Any], *, refresh: bool) -> dict[str, TopicLayout]:
        """Topic ids and leaders: remembered from earlier calls (a Metadata round trip per transaction would
        cost as much as the staging), asked again for unknown topics, after a leader moved, and after a failure."""
        wanted = {t for t, _ in pending}
        missing = wanted if refresh else {t for t in wanted if t not in self._topic_cache}
        found: dict[str, TopicLayout | int] = dict(self._network.topics(missing)) if missing else {}
        for topic, answer in found.items():
            if isinstance(answer, TopicLayout):
                self._topic_cache[topic] = answer
        layouts: dict[str, TopicLayout] = {}
        for topic, partition in pending:
            layout = found.get(topic, 3) if topic in missing else self._topic_cache[topic]  # 3: unknown topic
            if not isinstance(layout, TopicLayout):
                raise self._abortable(f"no metadata for topic {topic!r}: {error_name(layout)}", error_name(layout))
            if partition not in layout.leaders:
                raise self._abortable(f"topic {topic!r} has no partition {partition}", "UNKNOWN_TOPIC_OR_PARTITION")
            layouts[topic] = layout
        return layouts

    def _stage_on(self, leader: int, part: dict[TopicPartition, list[AckBatch]], layouts: dict[str, TopicLayout],
                  group: ShareGroupMetadata) -> dict[TopicPartition, list[AckBatch]]:
        """Stage `part` on `leader`: the partitions to send again to their new leader."""
        from kafka_txn_broker.formats.messages import TXN_SHARE_ACKNOWLEDGE_KEY

        if leader < 0:
            return dict(part)  # no leader right now: ask the metadata again
        if self._network.broker_advertises(leader, TXN_SHARE_ACKNOWLEDGE_KEY) is False:
            raise TxnShareAcknowledgeUnsupportedError(f"broker {leader}")
        response = self._send_retrying(leader, part, layouts, group)
        moved: dict[TopicPartition, list[AckBatch]] = {}
        failures: list[tuple[str, str]] = []  # (what, error name)
        names = {layouts[t].topic_id: t for t, _ in part}
        for t in response.responses:
            for p in t.partitions:
                tp = (names.get(t.topic_id, str(t.topic_id)), p.partition_index)
                if p.error_code == NOT_LEADER_OR_FOLLOWER and tp in part:
                    moved[tp] = part[tp]
                elif p.error_code != NONE:
                    name = error_name(p.error_code)
                    failures.append((f"{tp[0]}-{tp[1]}: {name}" + (f" ({p.error_message})" if p.error_message
                                                                   else ""), name))
        if failures:
            raise self._abortable("staging share acknowledgements failed on " + "; ".join(w for w, _ in failures),
                                  failures[0][1])
        return moved

    def _send_retrying(self, leader: int, part: dict[TopicPartition, list[AckBatch]], layouts: dict[str, TopicLayout],
                       group: ShareGroupMetadata) -> Any:
        """The leader's answer with no top-level error; the coordinator's transient refusals retried."""
        backoff = BACKOFF_MS
        for _attempt in range(self._coordinator_retries + 1):
            request = self._request(part, layouts, group)
            try:
                response = self._network.send(request, leader)
            except kerrors.IncompatibleBrokerVersion:
                raise TxnShareAcknowledgeUnsupportedError(f"broker {leader}") from None
            except kerrors.KafkaError as exc:
                # The request may have been staged before the answer was lost: abort to be sure.
                self._mark_started()
                raise self._abortable(f"TxnShareAcknowledge to broker {leader} failed: {exc!r}",
                                      type(exc).__name__) from exc
            name = error_name(response.error_code) if response.error_code else None
            if name is None:
                self._mark_started()  # the share state partitions are in the transaction now
                return response
            if name in FATAL:
                raise self._fatal(name)
            if name not in RETRIABLE:
                raise self._abortable(f"the broker refused the share acknowledgements: {name}", name)
            time.sleep(backoff / 1000)
            backoff = min(backoff * 2, MAX_BACKOFF_MS)
        raise self._abortable(f"the broker kept answering {name} to TxnShareAcknowledge", name)

    def _request(self, part: dict[TopicPartition, list[AckBatch]], layouts: dict[str, TopicLayout],
                 group: ShareGroupMetadata) -> Any:
        from kafka_txn_broker.formats.messages import TxnShareAcknowledgeRequest as R

        T = R.TxnShareAcknowledgeTopic
        P = T.TxnShareAcknowledgePartition
        by_topic: dict[str, list[Any]] = defaultdict(list)
        for (topic, partition), batches in sorted(part.items()):
            by_topic[topic].append(P(partition_index=partition, acknowledgement_batches=[
                P.TxnShareAcknowledgeBatch(first_offset=b.first_offset, last_offset=b.last_offset,
                                           acknowledge_types=[b.ack_type]) for b in batches]))
        with self._tm._lock:
            pe = self._tm.producer_id_and_epoch
            producer_id, epoch = pe.producer_id, pe.epoch
        return R(transactional_id=self._tm.transactional_id, group_id=group.group_id, producer_id=producer_id,
                 producer_epoch=epoch, member_id=group.member_id, member_epoch=group.member_epoch,
                 topics=[T(topic_id=layouts[t].topic_id, partitions=ps) for t, ps in by_topic.items()])

    # ---- kafka-python's transaction state -------------------------------------------------------------------
    def _mark_started(self) -> None:
        with self._tm._lock:
            self._tm._transaction_started = True

    def _abortable(self, message: str, error: str | None) -> AbortableShareAcknowledgementError:
        exc = AbortableShareAcknowledgementError(message + ": abort the transaction (abort_transaction) and retry "
                                                 "the loop with records polled again", error)
        self._tm.transition_to_abortable_error(exc)
        return exc

    def _fatal(self, name: str) -> FatalShareAcknowledgementError:
        exc = FatalShareAcknowledgementError(
            f"the producer cannot stage share acknowledgements ({name}): another producer with transactional id "
            f"{self._tm.transactional_id!r} took over, or it is not allowed; close this producer", name)
        self._tm.transition_to_fatal_error(exc)
        return exc


def _by_leader(pending: Mapping[TopicPartition, list[AckBatch]],
               layouts: dict[str, TopicLayout]) -> dict[int, dict[TopicPartition, list[AckBatch]]]:
    out: dict[int, dict[TopicPartition, list[AckBatch]]] = defaultdict(dict)
    for (topic, partition), batches in pending.items():
        out[layouts[topic].leaders.get(partition, -1)][(topic, partition)] = batches
    return out


def _names(pending: Mapping[TopicPartition, Any]) -> str:
    return ", ".join(f"{t}-{p}" for t, p in sorted(pending))
