"""A deliberately thin, blocking Kafka protocol client: one request, one response, on plain sockets.

The scenarios use it to play clients that misbehave in ways real client libraries refuse to (writing
to a partition never added to the transaction, replaying a delayed request, ignoring a fencing
error). Messages are the wire codec's classes (formats/messages) at fixed, widely supported versions, so the
same scenario runs against this embedded broker and against Apache Kafka 3.x/4.x.
"""

from __future__ import annotations

import itertools
import socket
import struct
from dataclasses import dataclass
from typing import Any, Protocol

from kafka_txn_broker.formats.messages import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DescribeProducersRequest,
    DescribeProducersResponse,
    DescribeTransactionsRequest,
    DescribeTransactionsResponse,
    EndTxnRequest,
    EndTxnResponse,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
    InitProducerIdRequest,
    InitProducerIdResponse,
    MetadataRequest,
    MetadataResponse,
    ProduceRequest,
    ProduceResponse,
    decode_response,
    encode_request,
)
from kafka_txn_broker.formats.record_batch import build_batch

# Versions every Kafka since 2.x serves (and 4.x still does); none flexible except where noted.
V_METADATA, V_FIND_COORDINATOR, V_INIT_PID, V_ADD_PARTITIONS, V_END_TXN, V_PRODUCE = 8, 3, 3, 3, 3, 8
_RESPONSES = {
    MetadataRequest.API_KEY: MetadataResponse, FindCoordinatorRequest.API_KEY: FindCoordinatorResponse,
    InitProducerIdRequest.API_KEY: InitProducerIdResponse,
    AddPartitionsToTxnRequest.API_KEY: AddPartitionsToTxnResponse,
    EndTxnRequest.API_KEY: EndTxnResponse, ProduceRequest.API_KEY: ProduceResponse,
    DescribeTransactionsRequest.API_KEY: DescribeTransactionsResponse,
    CreateTopicsRequest.API_KEY: CreateTopicsResponse,
    IncrementalAlterConfigsRequest.API_KEY: IncrementalAlterConfigsResponse,
    DescribeProducersRequest.API_KEY: DescribeProducersResponse,
}
# EndTxn v5 is KIP-890's: a TV2 client (the coordinator bumps the epoch and answers the new one); InitProducerId
# v6 is KIP-939's (Enable2Pc, KeepPreparedTxn).
V_END_TXN_TV2, V_INIT_PID_2PC = 5, 6
_CORRELATION = struct.Struct(">i")
BROKER_RESOURCE, SET = 4, 0
V_CREATE_TOPICS = 4
TXN_KEY_TYPE = 1


class RawClientError(RuntimeError):
    """A connection or protocol failure (not a Kafka error code, which responses carry)."""


@dataclass(frozen=True)
class ProducerIdAndEpoch:
    producer_id: int
    epoch: int


class _Connection:
    def __init__(self, host: str, port: int, timeout_s: float) -> None:
        try:
            self.sock = socket.create_connection((host, port), timeout=timeout_s)
        except OSError as exc:
            raise RawClientError(f"cannot connect to {host}:{port}: {exc}") from None

    def roundtrip(self, frame: bytes) -> bytes:
        self.sock.sendall(frame)
        return self.read_frame()

    def read_frame(self) -> bytes:
        (size,) = struct.unpack(">i", self._read(4))
        return struct.pack(">i", size) + self._read(size)

    def _read(self, n: int) -> bytes:
        chunks, left = [], n
        while left:
            chunk = self.sock.recv(left)
            if not chunk:
                raise RawClientError("the broker closed the connection")
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    def close(self) -> None:
        self.sock.close()


class Transport(Protocol):
    """Another way to the brokers (TLS, SASL: a client stack that has them); requests are sent at the version
    their class is pinned to (`XRequest[v](...)`), responses come back decoded."""

    def send(self, request: Any, node_id: int | None) -> Any: ...

    def close(self) -> None: ...


class RawKafkaClient:
    """Plain sockets to PLAINTEXT listeners by default; with a `transport`, every request goes through it (a
    secured cluster: `kafka-txn broker scenario --command-config`)."""

    def __init__(self, bootstrap_servers: str, client_id: str = "kafka-txn-scenario", timeout_s: float = 30.0,
                 transport: Transport | None = None) -> None:
        first = bootstrap_servers.split(",")[0].strip()
        host, _, port = first.rpartition(":")
        self.bootstrap = (host, int(port))
        self.client_id = client_id
        self.timeout_s = timeout_s
        self.transport = transport
        self._correlation = itertools.count(1)
        self._conns: dict[tuple[str, int], _Connection] = {}
        self.brokers: dict[int, tuple[str, int]] = {}

    def close(self) -> None:
        for conn in self._conns.values():
            conn.close()
        self._conns.clear()
        if self.transport is not None:
            self.transport.close()

    def __enter__(self) -> RawKafkaClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- plumbing --------------------------------------------------------------------------
    def _connection(self, address: tuple[str, int]) -> _Connection:
        conn = self._conns.get(address)
        if conn is None:
            conn = self._conns[address] = _Connection(*address, self.timeout_s)
        return conn

    def send(self, request: Any, version: int, node_id: int | None = None, response_class: Any = None) -> Any:
        """Send at `version` to a broker (default: the bootstrap one) and decode the answer."""
        if self.transport is not None:
            try:
                return self.transport.send(request, node_id)
            except Exception as exc:  # the transport's own errors (TLS, SASL, timeouts): one error type here
                raise RawClientError(f"request to broker {node_id if node_id is not None else 'bootstrap'} failed: "
                                     f"{type(exc).__name__}: {exc}") from None
        conn = self._connection(self.bootstrap if node_id is None else self.brokers[node_id])
        correlation_id = next(self._correlation)
        frame = encode_request(request, version, correlation_id, self.client_id)
        decoder = response_class if response_class is not None else _RESPONSES[request.API_KEY]
        return decode_response(decoder, conn.roundtrip(frame), version)

    # ---- metadata and coordinators ---------------------------------------------------------
    def partition_leaders(self, topic: str) -> dict[int, int]:
        """partition -> leader id, refreshing the broker table."""
        req = MetadataRequest[V_METADATA](topics=[MetadataRequest.MetadataRequestTopic(name=topic)],
                                          allow_auto_topic_creation=False, include_cluster_authorized_operations=False,
                                          include_topic_authorized_operations=False)
        resp = self.send(req, V_METADATA)
        self.brokers = {b.node_id: (b.host, b.port) for b in resp.brokers}
        for t in resp.topics:
            if t.name == topic:
                if t.error_code:
                    raise RawClientError(f"metadata for {topic} failed with error {t.error_code}")
                return {p.partition_index: p.leader_id for p in t.partitions}
        raise RawClientError(f"topic {topic} not in metadata")

    def create_topic(self, name: str, partitions: int, replication_factor: int) -> None:
        """CreateTopics, sent to any broker (KRaft brokers forward it to the controller)."""
        T = CreateTopicsRequest.CreatableTopic
        req = CreateTopicsRequest[V_CREATE_TOPICS](topics=[T(name=name, num_partitions=partitions,
                                                             replication_factor=replication_factor, assignments=[],
                                                             configs=[])], timeout_ms=30000, validate_only=False)
        result = self.send(req, V_CREATE_TOPICS).topics[0]
        if result.error_code:
            raise RawClientError(f"creating topic {name} failed with error {result.error_code}: {result.error_message}")

    def broker_count(self) -> int:
        req = MetadataRequest[V_METADATA](topics=[], allow_auto_topic_creation=False,
                                          include_cluster_authorized_operations=False,
                                          include_topic_authorized_operations=False)
        resp = self.send(req, V_METADATA)
        self.brokers = {b.node_id: (b.host, b.port) for b in resp.brokers}
        return len(self.brokers)

    def transaction_coordinator(self, transactional_id: str) -> int:
        resp = self.send(FindCoordinatorRequest[V_FIND_COORDINATOR](key=transactional_id, key_type=TXN_KEY_TYPE),
                         V_FIND_COORDINATOR)
        if resp.error_code:
            raise RawClientError(f"FindCoordinator({transactional_id}) failed with error {resp.error_code}")
        self.brokers.setdefault(resp.node_id, (resp.host, resp.port))
        return int(resp.node_id)

    # ---- transactional protocol --------------------------------------------------------------
    def init_producer_id(self, transactional_id: str, timeout_ms: int) -> tuple[int, ProducerIdAndEpoch]:
        node = self.transaction_coordinator(transactional_id)
        resp = self.send(InitProducerIdRequest[V_INIT_PID](transactional_id=transactional_id,
                                                           transaction_timeout_ms=timeout_ms, producer_id=-1,
                                                           producer_epoch=-1), V_INIT_PID, node)
        return resp.error_code, ProducerIdAndEpoch(resp.producer_id, resp.producer_epoch)

    def init_producer_id_2pc(self, transactional_id: str, keep_prepared: bool = False
                             ) -> tuple[int, ProducerIdAndEpoch]:
        """InitProducerId v6 with Enable2Pc (KIP-939): a transaction an external manager owns, no timeout."""
        node = self.transaction_coordinator(transactional_id)
        resp = self.send(InitProducerIdRequest[V_INIT_PID_2PC](
            transactional_id=transactional_id, transaction_timeout_ms=60_000, producer_id=-1, producer_epoch=-1,
            enable2_pc=True, keep_prepared_txn=keep_prepared), V_INIT_PID_2PC, node)
        return resp.error_code, ProducerIdAndEpoch(resp.producer_id, resp.producer_epoch)

    def bump_epoch(self, transactional_id: str, timeout_ms: int, times: int) -> tuple[int, ProducerIdAndEpoch]:
        """`times` InitProducerId requests in one pipelined burst (each bumps the epoch, as a producer restarting
        in a loop would): the last answer."""
        node = self.transaction_coordinator(transactional_id)
        if self.transport is not None:
            return self._bump_one_by_one(transactional_id, timeout_ms, times, node)
        conn = self._connection(self.brokers[node])
        req = InitProducerIdRequest[V_INIT_PID](
            transactional_id=transactional_id, transaction_timeout_ms=timeout_ms, producer_id=-1, producer_epoch=-1)
        # The requests differ only in their correlation ids: encoded once (tens of thousands of encodings would
        # take the broker's share of the interpreter), each a copy with its own id in the request header (bytes
        # 8-11 of the frame: after the size, the API key and the API version).
        frame = encode_request(req, V_INIT_PID, 0, self.client_id)
        frames = [b"".join((frame[:8], _CORRELATION.pack(next(self._correlation)), frame[12:])) for _ in range(times)]
        conn.sock.sendall(b"".join(frames))
        last = None
        for _ in frames:
            last = decode_response(InitProducerIdResponse, conn.read_frame(), V_INIT_PID)
            if last.error_code:
                break
        assert last is not None
        return last.error_code, ProducerIdAndEpoch(last.producer_id, last.producer_epoch)

    def _bump_one_by_one(self, transactional_id: str, timeout_ms: int, times: int, node: int
                         ) -> tuple[int, ProducerIdAndEpoch]:
        """bump_epoch through a transport: one request after the other (slower; no pipelining there)."""
        last = None
        for _ in range(times):
            last = self.send(InitProducerIdRequest[V_INIT_PID](
                transactional_id=transactional_id, transaction_timeout_ms=timeout_ms, producer_id=-1,
                producer_epoch=-1), V_INIT_PID, node)
            if last.error_code:
                break
        assert last is not None
        return last.error_code, ProducerIdAndEpoch(last.producer_id, last.producer_epoch)

    def add_partitions(self, transactional_id: str, pe: ProducerIdAndEpoch, topic: str, partitions: list[int]) -> int:
        node = self.transaction_coordinator(transactional_id)
        T = AddPartitionsToTxnRequest.AddPartitionsToTxnTopic
        req = AddPartitionsToTxnRequest[V_ADD_PARTITIONS](
            v3_and_below_transactional_id=transactional_id, v3_and_below_producer_id=pe.producer_id,
            v3_and_below_producer_epoch=pe.epoch, v3_and_below_topics=[T(name=topic, partitions=partitions)])
        resp = self.send(req, V_ADD_PARTITIONS, node)
        codes = [p.partition_error_code for t in resp.results_by_topic_v3_and_below for p in t.results_by_partition]
        return next((c for c in codes if c), 0)

    def describe_transaction(self, transactional_id: str) -> Any:
        """The coordinator's DescribeTransactions entry for one id (check its error_code)."""
        node = self.transaction_coordinator(transactional_id)
        resp = self.send(DescribeTransactionsRequest[0](transactional_ids=[transactional_id]), 0, node)
        return resp.transaction_states[0]

    def end_txn(self, transactional_id: str, pe: ProducerIdAndEpoch, commit: bool) -> int:
        node = self.transaction_coordinator(transactional_id)
        resp = self.send(EndTxnRequest[V_END_TXN](transactional_id=transactional_id, producer_id=pe.producer_id,
                                                  producer_epoch=pe.epoch, committed=commit), V_END_TXN, node)
        return int(resp.error_code)

    def end_txn_tv2(self, transactional_id: str, pe: ProducerIdAndEpoch, commit: bool
                    ) -> tuple[int, ProducerIdAndEpoch]:
        """EndTxn v5 (KIP-890): the answer carries the producer id and epoch to continue with."""
        node = self.transaction_coordinator(transactional_id)
        resp = self.send(EndTxnRequest[V_END_TXN_TV2](transactional_id=transactional_id, producer_id=pe.producer_id,
                                                      producer_epoch=pe.epoch, committed=commit), V_END_TXN_TV2, node)
        return int(resp.error_code), ProducerIdAndEpoch(resp.producer_id, resp.producer_epoch)

    # ---- admin ---------------------------------------------------------------------------------
    def set_broker_configs(self, configs: dict[str, str]) -> tuple[int, str | None]:
        """IncrementalAlterConfigs SET of cluster-wide dynamic broker configs: (error code, message)."""
        R = IncrementalAlterConfigsRequest.AlterConfigsResource
        resource = R(resource_type=BROKER_RESOURCE, resource_name="", configs=[
            R.AlterableConfig(name=k, config_operation=SET, value=v) for k, v in configs.items()])
        resp = self.send(IncrementalAlterConfigsRequest[0](resources=[resource], validate_only=False), 0)
        answer = resp.responses[0]
        return int(answer.error_code), answer.error_message

    def describe_producer(self, topic: str, partition: int, producer_id: int) -> Any:
        """The leader's DescribeProducers entry for one producer (None: it has none)."""
        p = self._describe_producers(topic, partition)
        return next((a for a in p.active_producers if a.producer_id == producer_id), None)

    def describe_producers(self, topic: str, partition: int) -> list[Any]:
        """The leader's DescribeProducers entries of a partition (producer_id, current_txn_start_offset...)."""
        p = self._describe_producers(topic, partition)
        if p.error_code:
            raise RawClientError(f"DescribeProducers of {topic}-{partition} failed with error {p.error_code}")
        return list(p.active_producers)

    def _describe_producers(self, topic: str, partition: int) -> Any:
        leader = self.partition_leaders(topic)[partition]
        T = DescribeProducersRequest.TopicRequest
        resp = self.send(DescribeProducersRequest[0](topics=[T(name=topic, partition_indexes=[partition])]), 0, leader)
        return resp.topics[0].partitions[0]

    def produce_transactional(self, transactional_id: str, pe: ProducerIdAndEpoch, topic: str, partition: int,
                              base_sequence: int, values: list[bytes], timestamp_ms: int) -> tuple[int, int]:
        """One transactional batch to the partition leader, acks=all: (error code, base offset)."""
        batch = build_batch([(None, v) for v in values], timestamp_ms=timestamp_ms, producer_id=pe.producer_id,
                            producer_epoch=pe.epoch, base_sequence=base_sequence, transactional=True)
        return self._produce(transactional_id, topic, partition, batch)

    def produce(self, topic: str, partition: int, values: list[bytes], timestamp_ms: int) -> tuple[int, int]:
        """One plain (non-idempotent) batch to the partition leader, acks=all: (error code, base offset)."""
        batch = build_batch([(None, v) for v in values], timestamp_ms=timestamp_ms)
        return self._produce(None, topic, partition, batch)

    def _produce(self, transactional_id: str | None, topic: str, partition: int, batch: bytes) -> tuple[int, int]:
        leader = self.partition_leaders(topic)[partition]
        PD = ProduceRequest.TopicProduceData.PartitionProduceData
        req = ProduceRequest[V_PRODUCE](transactional_id=transactional_id, acks=-1, timeout_ms=30000,
                                        topic_data=[ProduceRequest.TopicProduceData(
                                            name=topic, partition_data=[PD(index=partition, records=batch)])])
        resp = self.send(req, V_PRODUCE, leader)
        p = resp.responses[0].partition_responses[0]
        return int(p.error_code), int(p.base_offset)
