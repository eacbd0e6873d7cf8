"""Fakes for the clients' unit tests: a kafka-python producer shell around a REAL TransactionManager (so the
private attributes the client touches are pinned by these tests) and a scripted network."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from typing import Any

from kafka.producer.transaction_manager import ProducerIdAndEpoch, TransactionManager, TransactionState

from kafka_txn_broker.formats.messages import TXN_SHARE_ACKNOWLEDGE_KEY, TxnShareAcknowledgeResponse
from kafka_txn_tools.clients.network import TopicLayout

PRODUCER_ID, EPOCH = 4000, 7
TOPIC_IDS = {"in": uuid.UUID(int=1), "other": uuid.UUID(int=2)}


def transaction_manager(*, in_transaction: bool = True) -> TransactionManager:
    """kafka-python's own manager, brought to READY (and IN_TRANSACTION) as init_transactions would."""
    tm = TransactionManager(transactional_id="rpw-1", transaction_timeout_ms=60000, api_version=(4, 0))
    tm._transition_to(TransactionState.INITIALIZING)
    tm.set_producer_id_and_epoch(ProducerIdAndEpoch(PRODUCER_ID, EPOCH))
    tm._transition_to(TransactionState.READY)
    if in_transaction:
        tm.begin_transaction()
    return tm


class FakeProducer:
    def __init__(self, tm: TransactionManager | None) -> None:
        self._transaction_manager = tm
        self.config = {"bootstrap_servers": "x:1"}
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Callable[..., None]:
        def record(*args: Any, **kwargs: Any) -> None:
            self.calls.append(name)
        return record


Answer = Callable[[int | None, Any], Any]


def answer(code: int = 0, partitions: dict[tuple[str, int], int] | None = None, leader: int = -1) -> Any:
    """A TxnShareAcknowledgeResponse: top-level `code`, per-partition codes."""
    R = TxnShareAcknowledgeResponse
    T = R.TxnShareAcknowledgeTopicResponse
    P = T.TxnShareAcknowledgePartitionResponse
    by_topic: dict[uuid.UUID, list[Any]] = {}
    for (topic, p), c in (partitions or {}).items():
        by_topic.setdefault(TOPIC_IDS[topic], []).append(P(
            partition_index=p, error_code=c, error_message=None,
            current_leader=P.LeaderIdAndEpoch(leader_id=leader, leader_epoch=1)))
    return R[0](throttle_time_ms=0, error_code=code,
                responses=[T(topic_id=t, partitions=ps) for t, ps in by_topic.items()], node_endpoints=[])


class FakeNetwork:
    """Leaders per (topic, partition), changed with `moves` after each metadata request; `answers` are
    called per request (node, request) and return a response or raise."""

    def __init__(self, leaders: dict[tuple[str, int], int], answers: Iterable[Answer] = (),
                 advertised: bool = True, moves: list[dict[tuple[str, int], int]] | None = None) -> None:
        self.leaders = dict(leaders)
        self.answers = list(answers)
        self.advertised = advertised
        self.moves = list(moves or [])
        self.sent: list[tuple[int | None, Any]] = []
        self.metadata_requests = 0
        self.closed = False

    def advertises(self, api_key: int) -> bool:
        return self.advertised and api_key == TXN_SHARE_ACKNOWLEDGE_KEY

    def broker_advertises(self, node_id: int, api_key: int) -> bool | None:
        return None

    def topics(self, names: Iterable[str]) -> dict[str, TopicLayout | int]:
        if self.metadata_requests and self.moves:
            self.leaders.update(self.moves.pop(0))
        self.metadata_requests += 1
        out: dict[str, TopicLayout | int] = {}
        for name in names:
            if name not in TOPIC_IDS:
                out[name] = 3  # UNKNOWN_TOPIC_OR_PARTITION
            else:
                out[name] = TopicLayout(TOPIC_IDS[name], {p: n for (t, p), n in self.leaders.items() if t == name})
        return out

    def send(self, request: Any, node_id: int | None, timeout_ms: int | None = None) -> Any:
        self.sent.append((node_id, request))
        if not self.answers:
            return answer(0, {(next(t for t, i in TOPIC_IDS.items() if i == topic.topic_id), p.partition_index): 0
                              for topic in request.topics for p in topic.partitions})
        return self.answers.pop(0)(node_id, request)

    def group_coordinator(self, group_id: str) -> tuple[int, int]:
        return 0, 0

    def close(self) -> None:
        self.closed = True


def staged(request: Any) -> dict[tuple[uuid.UUID, int], list[tuple[int, int, list[int]]]]:
    """What a TxnShareAcknowledge request asks to stage."""
    return {(t.topic_id, p.partition_index): [(b.first_offset, b.last_offset, list(b.acknowledge_types))
                                              for b in p.acknowledgement_batches]
            for t in request.topics for p in t.partitions}
