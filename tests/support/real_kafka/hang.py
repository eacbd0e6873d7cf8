"""Hanging transactions and idempotent producers' state on a real Kafka cluster, made through the protocol with
the embedded broker's raw client (as its `late-write-after-abort` scenario makes them), many partitions at once.

A hang here is KAFKA-14402's pattern: a producer adds partitions to its transaction, aborts it (EndTxn v3: the
epoch stays), then a delayed Produce (v8, no AddPartitionsToTxn) lands on each of those partitions at sequence 0.
The leader, not verifying (`transaction.partition.verification.enable=false`; a Produce below v12), takes it as the
start of a new transaction the coordinator never hears of. The writes' CreateTime is `backdate_ms` in the past,
so tools judging age by the producer's last timestamp see them as old without waiting.

Threading: plain blocking functions; each opens its own client and closes it.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from kafka_txn_broker.formats import errors as E
from kafka_txn_broker.formats.messages import InitProducerIdRequest, InitProducerIdResponse, ProduceRequest
from kafka_txn_broker.formats.record_batch import build_batch
from kafka_txn_broker.testing.raw_client import (
    V_INIT_PID,
    V_PRODUCE,
    ProducerIdAndEpoch,
    RawClientError,
    RawKafkaClient,
)

_RETRIABLE = {E.COORDINATOR_LOAD_IN_PROGRESS, E.COORDINATOR_NOT_AVAILABLE, E.NOT_COORDINATOR,
              E.CONCURRENT_TRANSACTIONS}
# A leader not ready yet for a new topic's partition (metadata is ahead of it): send again.
_LEADERSHIP = {E.NOT_LEADER_OR_FOLLOWER, E.UNKNOWN_TOPIC_OR_PARTITION, E.LEADER_NOT_AVAILABLE,
               E.NOT_ENOUGH_REPLICAS}
_PD = ProduceRequest.TopicProduceData.PartitionProduceData


@dataclass(frozen=True)
class Hang:
    """One partition left with an open transaction no coordinator will finish: its ground truth."""

    topic: str
    partition: int
    producer_id: int
    producer_epoch: int
    start_offset: int
    transactional_id: str


def _retry(step: Callable[[], int], what: str, attempts: int = 150) -> None:
    """Run a coordinator step until it answers something other than a retriable error (the transaction state
    topic being created or loaded, FindCoordinator failing meanwhile)."""
    last = ""
    for _ in range(attempts):
        try:
            code = step()
        except RawClientError as exc:  # FindCoordinator before __transaction_state exists: retriable too
            last = str(exc)
            time.sleep(0.1)
            continue
        if code not in _RETRIABLE:
            if code != E.NONE:
                raise RuntimeError(f"{what} failed with {E.name(code)}")
            return
        last = E.name(code)
        time.sleep(0.1)
    raise RuntimeError(f"{what} still failing after {attempts} attempts (last: {last})")


def wait_for_leaders(client: RawKafkaClient, topic: str, partitions: int, timeout_s: float = 120.0) -> dict[int, int]:
    """partition -> leader, once every partition of `topic` has one."""
    deadline = time.monotonic() + timeout_s
    leaders: dict[int, int] = {}
    while time.monotonic() < deadline:
        try:
            leaders = client.partition_leaders(topic)
        except RawClientError:  # a new topic is not in every broker's metadata yet
            time.sleep(0.2)
            continue
        if len(leaders) == partitions and all(v >= 0 for v in leaders.values()):
            return leaders
        time.sleep(0.2)
    raise TimeoutError(f"{topic}: {len(leaders)} of {partitions} partitions have a leader after {timeout_s} s")


def _produce_many(client: RawKafkaClient, topic: str, leaders: dict[int, int], batches: dict[int, bytes],
                  transactional_id: str | None, attempts: int = 100) -> dict[int, int]:
    """One Produce (v8, acks=all) per leader carrying each partition's batch: partition -> base offset. A
    partition whose leader is not ready yet (a new topic) is sent again, to its leader as metadata then says."""
    offsets: dict[int, int] = {}
    pending = dict(batches)
    last = ""
    for _ in range(attempts):
        by_leader: dict[int, list[int]] = defaultdict(list)
        for partition in pending:
            by_leader[leaders[partition]].append(partition)
        for leader, partitions in by_leader.items():
            request = ProduceRequest[V_PRODUCE](transactional_id=transactional_id, acks=-1, timeout_ms=60000,
                                                topic_data=[ProduceRequest.TopicProduceData(name=topic, partition_data=[
                                                    _PD(index=p, records=pending[p]) for p in partitions])])
            for answer in client.send(request, V_PRODUCE, leader).responses[0].partition_responses:
                if answer.error_code in _LEADERSHIP:
                    last = E.name(answer.error_code)
                    continue
                if answer.error_code:
                    raise RuntimeError(f"Produce to {topic}-{answer.index} failed with {E.name(answer.error_code)}: "
                                       "is transaction.partition.verification.enable false on the cluster?")
                offsets[answer.index] = int(answer.base_offset)
                del pending[answer.index]
        if not pending:
            return offsets
        time.sleep(0.2)
        leaders = client.partition_leaders(topic)
    raise RuntimeError(f"Produce to {len(pending)} partitions of {topic} still failing ({last})")


def _wait_complete_abort(client: RawKafkaClient, transactional_id: str, timeout_s: float = 60.0) -> None:
    """Until the coordinator has written its abort markers (EndTxn v3 answers at PrepareAbort; the markers go
    out afterwards): a write landing before the marker would be aborted by it, not left hanging."""
    deadline = time.monotonic() + timeout_s
    state = ""
    while time.monotonic() < deadline:
        state = client.describe_transaction(transactional_id).transaction_state
        if state == "CompleteAbort":
            return
        time.sleep(0.05)
    raise TimeoutError(f"{transactional_id} still {state} {timeout_s} s after its abort")


def stage_hangs(bootstrap: str, topic: str, partitions: Iterable[int], transactional_id: str,
                backdate_ms: int = 30 * 60_000) -> list[Hang]:
    """A late write after an abort on each of `partitions` of `topic`, all from one transactional producer."""
    wanted = sorted(set(partitions))
    with RawKafkaClient(bootstrap) as client:
        leaders = client.partition_leaders(topic)
        holder: dict[str, ProducerIdAndEpoch] = {}

        def init() -> int:
            code, holder["pe"] = client.init_producer_id(transactional_id, 60000)
            return code

        _retry(init, f"InitProducerId for {transactional_id}")
        pe = holder["pe"]
        _retry(lambda: client.add_partitions(transactional_id, pe, topic, wanted),
               f"AddPartitionsToTxn for {transactional_id}")
        created = int(time.time() * 1000) - backdate_ms  # the delayed request was built before the client gave up
        _retry(lambda: client.end_txn(transactional_id, pe, commit=False), f"EndTxn(abort) for {transactional_id}")
        _wait_complete_abort(client, transactional_id)
        batches = {p: build_batch([(None, f"late-{p}".encode())], timestamp_ms=created, producer_id=pe.producer_id,
                                  producer_epoch=pe.epoch, base_sequence=0, transactional=True) for p in wanted}
        offsets = _produce_many(client, topic, leaders, batches, transactional_id)
    return [Hang(topic, p, pe.producer_id, pe.epoch, offsets[p], transactional_id) for p in wanted]


def _init_idempotent(client: RawKafkaClient) -> ProducerIdAndEpoch:
    """A producer id and epoch for an idempotent producer (InitProducerId without a transactional id)."""
    holder: dict[str, ProducerIdAndEpoch] = {}

    def init() -> int:
        answer = client.send(InitProducerIdRequest[V_INIT_PID](
            transactional_id=None, transaction_timeout_ms=-1, producer_id=-1, producer_epoch=-1),
            V_INIT_PID, response_class=InitProducerIdResponse)
        holder["pe"] = ProducerIdAndEpoch(answer.producer_id, answer.producer_epoch)
        return int(answer.error_code)

    _retry(init, "InitProducerId (idempotent)")
    return holder["pe"]


def seed_idempotent(bootstrap: str, topic: str, partitions: int, producers: int, records: int = 1) -> list[int]:
    """`producers` idempotent producers (ids from InitProducerId without a transactional id) each write one
    batch of `records` records to every partition of `topic`: the producer state real clusters carry. Their
    producer ids."""
    with RawKafkaClient(bootstrap) as client:
        leaders = wait_for_leaders(client, topic, partitions)
        ids = []
        for _ in range(producers):
            pe = _init_idempotent(client)
            now = int(time.time() * 1000)
            batches = {p: build_batch([(None, b"x" * 16)] * records, timestamp_ms=now,
                                      producer_id=pe.producer_id, producer_epoch=pe.epoch,
                                      base_sequence=0) for p in range(partitions)}
            _produce_many(client, topic, leaders, batches, None)
            ids.append(pe.producer_id)
    return ids
