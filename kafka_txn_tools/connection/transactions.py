"""The transaction APIs (after Kafka's admin internals handlers for them): DescribeProducers on each replica,
ListTransactions on each broker, FindCoordinator + DescribeTransactions, WriteTxnMarkers to a leader,
InitProducerId to fence (KIP-939). Threading: as connection/transport.py (blocking calls, I/O on its thread).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import kafka.errors as kerrors

from kafka_txn_broker.gc_pause import bulk as _bulk_read
from kafka_txn_tools.connection import wire
from kafka_txn_tools.connection.coordinators import TRANSACTION, CoordinatorCache, or_fresh
from kafka_txn_tools.connection.fan_out import RETRIABLE_COORDINATOR, Lookup
from kafka_txn_tools.connection.transport import Transport, transport_error
from kafka_txn_tools.errors import BrokerError, error_code
from kafka_txn_tools.models import (
    DescribeResult,
    ListResult,
    PartitionProducers,
    Progress,
    ScanError,
    TopicPartition,
    TransactionListing,
)

# Partitions per DescribeProducers request. Upstream sends 500 per request, one request at a time;
# bigger batches, several in flight per broker and all brokers at once cut the round trips.
DESCRIBE_PRODUCERS_BATCH = 2000
# Requests in flight per broker connection (kafka-python refuses more than its limit of 5).
IN_FLIGHT_PER_BROKER = 3


class TransactionRequests(Transport):
    """Requests of the transaction APIs, on a Transport."""

    # -- DescribeProducers ------------------------------------------------------------------

    def describe_producers(
        self,
        by_broker: dict[int, list[TopicPartition]],
        batch_size: int = DESCRIBE_PRODUCERS_BATCH,
        in_flight: int = IN_FLIGHT_PER_BROKER,
        progress: Progress | None = None,
        open_only: bool = False,
    ) -> tuple[list[PartitionProducers], list[ScanError]]:
        """Producer state of each listed partition on each listed broker, all brokers concurrently.

        `open_only`: only producers with an open transaction, only partitions that have one.
        """
        async def go() -> list[tuple[list[PartitionProducers], list[ScanError]]]:
            return await self._fan.to_nodes(
                {b: tps for b, tps in by_broker.items() if tps},
                lambda b, tps: self._describe_producers_on(b, tps, batch_size, in_flight, progress, open_only))

        results: list[PartitionProducers] = []
        errors: list[ScanError] = []
        with _bulk_read():
            outcomes = self._run(go)
        for outcome in outcomes:
            results.extend(outcome[0])
            errors.extend(outcome[1])
        return results, errors

    async def _describe_producers_on(
        self, broker_id: int, partitions: list[TopicPartition], batch_size: int, in_flight: int,
        progress: Progress | None, open_only: bool,
    ) -> tuple[list[PartitionProducers], list[ScanError]]:
        batches = [partitions[i:i + batch_size] for i in range(0, len(partitions), batch_size)]
        results: list[PartitionProducers] = []
        errors: list[ScanError] = []
        # Waves of `in_flight` requests: pipelining, each request taking its turn at the broker's in-flight limit
        # with whatever else is sent to it (connection/in_flight.py).
        for start in range(0, len(batches), in_flight):
            wave = batches[start:start + in_flight]
            futures = [self._fan.start(self._send(wire.describe_producers_request(b), broker_id)) for b in wave]
            for batch, future in zip(wave, futures, strict=True):
                try:
                    got, errs = wire.parse_describe_producers(await future, broker_id, open_only)
                except kerrors.KafkaError as exc:
                    err = transport_error(exc, broker_id, "DescribeProducers")
                    errors.append(ScanError(err.error, f"{err.message}; {len(batch)} partitions not read",
                                            broker_id=broker_id, api=err.api, partitions=len(batch)))
                    continue
                results.extend(got)
                errors.extend(errs)
                if progress is not None:
                    progress(len(batch))
        return results, errors

    # -- ListTransactions -------------------------------------------------------------------

    def list_transactions(
        self,
        broker_ids: Iterable[int],
        states: Sequence[str] = (),
        producer_ids: Sequence[int] = (),
        duration_ms: int | None = None,
        pattern: str | None = None,
    ) -> ListResult:
        """ListTransactions on every given broker (each coordinates a share of the transactional ids).

        A broker too old for a filter (v0: no duration, v1: no pattern) is asked without it and
        named in `unfiltered`, so the caller filters its answer client-side.
        """
        async def go() -> list[tuple[int, list[TransactionListing], ScanError | None, set[str]]]:
            return await self._fan.to_nodes(
                dict.fromkeys(broker_ids), lambda b, _: self._list_on(b, states, producer_ids, duration_ms, pattern))

        result = ListResult()
        for outcome in self._run(go):
            broker_id, listings, error, dropped = outcome
            result.listings.extend(listings)
            if error is not None:
                result.errors.append(error)
            if dropped:
                result.unfiltered[broker_id] = dropped
        return result

    async def _list_on(
        self, broker_id: int, states: Sequence[str], producer_ids: Sequence[int], duration_ms: int | None,
        pattern: str | None,
    ) -> tuple[int, list[TransactionListing], ScanError | None, set[str]]:
        dropped: set[str] = set()
        while True:
            request = wire.list_transactions_request(
                states, producer_ids,
                None if "duration" in dropped else duration_ms,
                None if "pattern" in dropped else pattern)
            try:
                response = await self._send(request, broker_id)
            except kerrors.IncompatibleBrokerVersion:
                # Drop the newest filter first: v2 adds the pattern, v1 the duration.
                if pattern is not None and "pattern" not in dropped:
                    dropped.add("pattern")
                    continue
                if duration_ms is not None and "duration" not in dropped:
                    dropped.add("duration")
                    continue
                return broker_id, [], ScanError(
                    "UNSUPPORTED_VERSION", f"broker {broker_id} does not support ListTransactions (Kafka < 3.0)",
                    broker_id=broker_id, api="ListTransactions"), dropped
            except kerrors.KafkaError as exc:
                return broker_id, [], transport_error(exc, broker_id, "ListTransactions"), dropped
            listings, error = wire.parse_list_transactions(response, broker_id)
            if error is not None:
                if error == "INVALID_REGULAR_EXPRESSION":
                    raise BrokerError(f"broker {broker_id} rejected --transactional-id-pattern {pattern!r}", error)
                return broker_id, [], ScanError(error, f"ListTransactions on broker {broker_id} failed: {error}",
                                                broker_id=broker_id, api="ListTransactions",
                                                code=error_code(error)), dropped
            return broker_id, listings, None, dropped

    # -- FindCoordinator + DescribeTransactions ----------------------------------------------

    def describe_transactions(self, transactional_ids: Iterable[str], coordinators: CoordinatorCache | None = None
                              ) -> DescribeResult:
        """Each id described by its coordinator (FindCoordinator batched, one request per coordinator).
        `coordinators`: a scan loop's FindCoordinator answers (connection/coordinators.py)."""
        ids = sorted(set(transactional_ids))
        if not ids:
            return DescribeResult()
        return self._run(self._describe_async, ids, 3, or_fresh(coordinators))

    async def _describe_async(self, ids: list[str], attempts: int, cache: CoordinatorCache) -> DescribeResult:
        result = DescribeResult()
        served: set[str] = set()

        def lookup_failed(txn_id: str, err: str) -> None:
            result.errors.append(ScanError(err, f"FindCoordinator for {txn_id!r} failed: {err}",
                                           transactional_id=txn_id, api="FindCoordinator", code=error_code(err)))

        await self._fan.to_coordinators(ids, cache.finder(TRANSACTION, self._find_coordinators, served),
                                        self._describe_on,
                                        lambda outcome, last: self._merge_describe(outcome, result, last, cache,
                                                                                   served),
                                        lookup_failed, attempts)
        return result

    @staticmethod
    def _merge_describe(outcome: Any, result: DescribeResult, last: bool, cache: CoordinatorCache,
                        served: set[str]) -> list[str]:
        node, group, found, failed, transport = outcome
        if transport is not None:
            again = cache.after_error(TRANSACTION, group, served, last)  # a remembered coordinator: find it anew
            if len(again) < len(group):
                result.errors.append(ScanError(transport.error, f"{transport.message}; {len(group) - len(again)} "
                                               "ids not described", broker_id=node, api=transport.api))
            return again
        result.descriptions.update(found)
        retry: list[str] = cache.after_error(TRANSACTION, (k for k, e in failed.items()
                                                           if e != "TRANSACTIONAL_ID_NOT_FOUND"), served, last)
        for txn_id, err in failed.items():
            if txn_id in retry:
                continue
            if err == "TRANSACTIONAL_ID_NOT_FOUND":
                result.not_found.add(txn_id)
            elif err in RETRIABLE_COORDINATOR and not last:
                retry.append(txn_id)
            else:
                result.errors.append(ScanError(err, f"DescribeTransactions for {txn_id!r} failed: {err}",
                                               broker_id=node, transactional_id=txn_id,
                                               api="DescribeTransactions", code=error_code(err)))
        return retry

    async def _describe_on(self, node: int, group: list[str]) -> Any:
        try:
            response = await self._send(wire.describe_transactions_request(group), node)
        except kerrors.KafkaError as exc:
            return node, group, {}, {}, transport_error(exc, node, "DescribeTransactions")
        found, failed = wire.parse_describe_transactions(response, node)
        return node, group, found, failed, None

    async def _find_coordinators(self, ids: list[str]) -> Lookup:
        try:
            response = await self._send(wire.find_coordinators_request(ids))
            return wire.parse_find_coordinators(response)
        except kerrors.IncompatibleBrokerVersion:
            pass  # before Kafka 3.0: one FindCoordinator per id
        found: dict[str, int] = {}
        failed: dict[str, str] = {}
        for txn_id in ids:
            response = await self._send(wire.find_coordinator_request_single(txn_id))
            ok, bad = wire.parse_find_coordinator_single(response, txn_id)
            found.update(ok)
            failed.update(bad)
        return found, failed

    # -- WriteTxnMarkers --------------------------------------------------------------------

    def write_abort_marker(
        self, leader: int, partition: TopicPartition, producer_id: int, producer_epoch: int,
        coordinator_epoch: int, start_offset: int | None,
    ) -> str | None:
        """Send the abort marker to the leader; the partition's error name, or None on success."""
        request = wire.abort_marker_request(partition, producer_id, producer_epoch, coordinator_epoch, start_offset)

        async def go() -> str | None:
            return wire.parse_write_txn_markers(await self._send(request, leader), partition)

        return self._run_or_raise(go, f"write the abort marker to broker {leader}")

    def write_commit_marker(
        self, leader: int, partition: TopicPartition, producer_id: int, producer_epoch: int,
        coordinator_epoch: int, start_offset: int | None,
    ) -> str | None:
        """Send a COMMIT marker to the leader (`kafka-txn commit`: only the one a coordinator decided on); the
        partition's error name, or None on success."""
        request = wire.abort_marker_request(partition, producer_id, producer_epoch, coordinator_epoch, start_offset,
                                            commit=True)

        async def go() -> str | None:
            return wire.parse_write_txn_markers(await self._send(request, leader), partition)

        return self._run_or_raise(go, f"write the commit marker to broker {leader}")

    # -- InitProducerId (force-terminate) ----------------------------------------------------

    def fence_transactional_id(self, transactional_id: str, transaction_timeout_ms: int,
                               attempts: int = 5) -> tuple[int, int]:
        """KIP-939: bump the producer epoch of `transactional_id`, aborting its open transaction. InitProducerId
        sets the id's transaction timeout too: `transaction_timeout_ms` is the one it keeps."""
        fenced: list[tuple[int, int]] = []

        def refuse(_key: str, error: str) -> None:
            raise BrokerError(f"force-terminate of transactional id {transactional_id!r} failed: {error}", error)

        async def init(node: int, _keys: list[str]) -> tuple[int, int, str | None]:
            return wire.parse_fence(await self._send(wire.fence_request(transactional_id, transaction_timeout_ms),
                                                     node))

        def merge(answer: tuple[int, int, str | None], last: bool) -> list[str]:
            pid, epoch, error = answer
            if error is None:
                fenced.append((pid, epoch))
            elif error in RETRIABLE_COORDINATOR and not last:
                return [transactional_id]
            else:
                refuse(transactional_id, error)
            return []

        async def go() -> tuple[int, int]:
            await self._fan.to_coordinators([transactional_id], self._find_coordinators, init, merge, refuse,
                                            attempts, backoff_s=0.2)
            return fenced[0]

        return self._run_or_raise(go, "force-terminate")
