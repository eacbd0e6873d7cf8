"""The admin client: kafka-python's network stack (connecting, TLS, SASL, version negotiation),
our requests (connection/wire.py), fanned out to many brokers at once (connection/fan_out.py).

kafka-python runs its I/O on one background thread with its own small event loop; public methods
here block the caller while coroutines run on that loop. Requests to different brokers, and a few
batches per broker, are in flight together: that, not Python speed, is what makes a cluster-wide
scan fast. Per-broker failures come back as ScanError values so one dead broker never stops a scan.

This module reaches into `KafkaAdminClient._manager` (the connection manager its own admin mixins
use); kafka-python is pinned to 3.0.12 in pyproject.toml for that reason.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine, Iterable, Sequence
from typing import Any

import kafka.errors as kerrors
from kafka.admin import KafkaAdminClient

from kafka_txn_broker.formats.messages.gc_pause import bulk as _bulk_read
from kafka_txn_tools.connection import wire
from kafka_txn_tools.connection.config import ClientSettings
from kafka_txn_tools.connection.coordinators import GROUP, TRANSACTION, CoordinatorCache
from kafka_txn_tools.connection.fan_out import RETRIABLE_COORDINATOR, FanOut, Lookup, group_by_node
from kafka_txn_tools.connection.results import DescribeResult, ListResult, Progress
from kafka_txn_tools.connection.security.redact import protect
from kafka_txn_tools.errors import BrokerError, ConnectionFailed, MissingApi, UsageError, error_code
from kafka_txn_tools.models import (
    ClusterInfo,
    OffsetRead,
    PartitionOffsets,
    PartitionProducers,
    ScanError,
    TopicPartition,
    TransactionListing,
)

log = logging.getLogger(__name__)

# Partitions per DescribeProducers request. Upstream sends 500 per request, one request at a time;
# bigger batches, several in flight per broker and all brokers at once cut the round trips.
DESCRIBE_PRODUCERS_BATCH = 2000
# Requests in flight per broker connection (kafka-python refuses more than its limit of 5).
IN_FLIGHT_PER_BROKER = 3
# Bytes per Fetch when reading __transaction_state (its records are ~100 bytes; batches are one record).
FETCH_BYTES = 1 << 20


def _api_of(exc: BaseException) -> str:
    """kafka-python names the request class in IncompatibleBrokerVersion's text: 'the XRequest Kafka protocol'."""
    import re

    found = re.search(r"'(\w+?)Request'", str(exc))
    return found.group(1) if found else "unknown"


def _transport_error(exc: BaseException, broker_id: int | None, api: str) -> ScanError:
    """A failed request (no broker answer) as a ScanError naming the broker and what to check."""
    where = f"broker {broker_id}" if broker_id is not None else "the cluster"
    if isinstance(exc, kerrors.KafkaTimeoutError):
        return ScanError("REQUEST_TIMED_OUT", f"{api}: {where} did not answer in time",
                         broker_id=broker_id, api=api)
    if isinstance(exc, kerrors.IncompatibleBrokerVersion):
        return ScanError("UNSUPPORTED_VERSION", f"{api}: {where} does not support it: {exc}",
                         broker_id=broker_id, api=api)
    if isinstance(exc, kerrors.AuthorizationError | kerrors.SaslAuthenticationFailedError):
        return ScanError("AUTHENTICATION_FAILED", f"{api}: {where} refused us: {exc}", broker_id=broker_id, api=api)
    return ScanError("BROKER_UNREACHABLE", f"{api}: {where} is unreachable ({exc})", broker_id=broker_id, api=api)


class AdminClient:
    """Connect with `AdminClient(settings)`; use as a context manager so the I/O thread stops."""

    def __init__(self, settings: ClientSettings, timeout_ms: int = 30_000, client_id: str = "kafka-txn") -> None:
        self.settings = settings
        self.timeout_ms = timeout_ms
        self._admin = _connect(settings, timeout_ms, client_id)
        self._manager = self._admin._manager
        self._fan = FanOut(self._manager.call_soon, self._manager._net.sleep)

    def __enter__(self) -> AdminClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._admin.close()

    @property
    def principal(self) -> str | None:
        """Who the cluster authenticated us as (SASL username, Kerberos principal, OAuth subject), if SASL."""
        return self.settings.principal

    @property
    def cluster_name(self) -> str:
        """How prompts and the audit log name the cluster: the profile, else the bootstrap servers."""
        return self.settings.cluster_name

    def supports(self, api: str) -> bool:
        """Whether the cluster advertises `api` (capabilities.APIS) in a version our requests can use.

        Brokers answer ApiVersions when we connect; the bootstrap broker's answer stands for the
        cluster (a rolling upgrade can mix versions: then requests to older brokers fail one by one).
        """
        from kafka_txn_tools.connection.capabilities import APIS

        info = APIS[api]
        data = self._manager.broker_version_data
        if data is None:
            return True  # not known before the first connection: let the request find out
        versions = data.api_versions.get(info.key)
        return versions is not None and versions[1] >= info.min_version

    # -- plumbing ---------------------------------------------------------------------------

    def _run(self, fn: Callable[..., Any], *args: Any) -> Any:
        return self._manager.run(fn, *args)

    def _start(self, request: Any, node_id: int | None = None) -> Any:
        """Send without waiting: a kafka-python Future (already failed if the send could not start)."""
        try:
            return self._manager.send(request, node_id=node_id, request_timeout_ms=self.timeout_ms)
        except kerrors.KafkaError as exc:  # e.g. UnknownBrokerIdError, raised before any I/O
            from kafka.future import Future

            return Future().failure(exc)

    async def _send(self, request: Any, node_id: int | None = None) -> Any:
        return await self._start(request, node_id)

    # -- Metadata ---------------------------------------------------------------------------

    def metadata(self, topics: Sequence[str] | None = None) -> ClusterInfo:
        """Brokers and partitions (all topics, internal ones included, when `topics` is None)."""
        async def go() -> ClusterInfo:
            return wire.parse_metadata(await self._send(wire.metadata_request(topics)))

        with _bulk_read():
            return self._run_or_raise(go, "read cluster metadata")

    def _run_or_raise(self, fn: Callable[..., Any], what: str, *args: Any) -> Any:
        try:
            return self._run(fn, *args)
        except kerrors.IncompatibleBrokerVersion as exc:
            # Not a network fault: the broker does not offer the request at all.
            raise MissingApi(_api_of(exc), f"the broker does not support the request to {what} ({exc})") from None
        except kerrors.KafkaTimeoutError:
            from kafka_txn_tools.durations import format_duration_ms

            # Connected a moment ago, so the brokers are reachable: say what the timeout was, not that they are down.
            raise ConnectionFailed(f"{what}: no answer within the {format_duration_ms(self.timeout_ms)} timeout (the "
                                   "cluster answered when connecting just before)",
                                   "give a longer --timeout, e.g. --timeout 30s") from None
        except kerrors.KafkaError as exc:
            err = _transport_error(exc, None, what)
            raise ConnectionFailed(err.message, "check that the brokers are up and reachable",
                                   cause=err.error) from None

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
        # Waves of `in_flight` requests: pipelining without tripping kafka-python's in-flight limit.
        for start in range(0, len(batches), in_flight):
            wave = batches[start:start + in_flight]
            futures = [self._start(wire.describe_producers_request(b), broker_id) for b in wave]
            for batch, future in zip(wave, futures, strict=True):
                try:
                    got, errs = wire.parse_describe_producers(await future, broker_id, open_only)
                except kerrors.KafkaError as exc:
                    err = _transport_error(exc, broker_id, "DescribeProducers")
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
                return broker_id, [], _transport_error(exc, broker_id, "ListTransactions"), dropped
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
        return self._run(self._describe_async, ids, 3, _or_fresh(coordinators))

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
            return node, group, {}, {}, _transport_error(exc, node, "DescribeTransactions")
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

    # -- ElectLeaders, AlterPartitionReassignments (move-coordinator) ------------------------

    def elect_preferred_leader(self, tp: TopicPartition) -> tuple[str | None, str | None]:
        """ElectLeaders(PREFERRED) for one partition: (error name, message), (None, None) when elected."""
        async def go() -> tuple[str | None, str | None]:
            return wire.parse_elect(await self._send(wire.elect_preferred_request(tp, self.timeout_ms)), tp)

        return self._run_or_raise(go, f"elect the preferred leader of {tp}")

    def reorder_replicas(self, tp: TopicPartition, replicas: Sequence[int]) -> tuple[str | None, str | None]:
        """AlterPartitionReassignments of one partition to the same replicas in another order (the first one
        becomes its preferred leader): (error name, message), (None, None) when accepted."""
        async def go() -> tuple[str | None, str | None]:
            return wire.parse_reassign(await self._send(wire.reassign_request(tp, replicas, self.timeout_ms)), tp)

        return self._run_or_raise(go, f"reorder the replicas of {tp}")

    # -- ListOffsets ------------------------------------------------------------------------

    def partition_offsets(self, leaders: dict[TopicPartition, int]) -> dict[TopicPartition, PartitionOffsets]:
        """LSO (READ_COMMITTED latest) and high watermark (READ_UNCOMMITTED latest) from each leader."""
        by_leader = _by_leader(leaders)

        async def go() -> list[tuple[int, dict[TopicPartition, int]]]:
            return await self._fan.to_nodes(
                {(leader, level): tps for leader, tps in by_leader.items()
                 for level in (wire.READ_COMMITTED, wire.READ_UNCOMMITTED)},
                lambda to, tps: self._offsets_on(to[0], tps, to[1]))

        lso: dict[TopicPartition, int] = {}
        hw: dict[TopicPartition, int] = {}
        for level, offsets in self._run(go):
            (lso if level == wire.READ_COMMITTED else hw).update(offsets)
        return {tp: PartitionOffsets(tp, lso.get(tp), hw.get(tp)) for tp in leaders}

    async def _offsets_on(
        self, leader: int, tps: list[TopicPartition], level: int, timestamp: int = wire.LATEST,
    ) -> tuple[int, dict[TopicPartition, int]]:
        try:
            response = await self._send(wire.list_offsets_request(tps, level, timestamp), leader)
        except kerrors.KafkaError:
            return level, {}  # offsets are context for the operator; missing ones render as unknown
        offsets, _failed = wire.parse_list_offsets(response)
        return level, offsets

    def latest_offsets(self, leaders: dict[TopicPartition, tuple[int, int]], read_committed: bool
                       ) -> dict[TopicPartition, OffsetRead]:
        """find-hanging's first pass (admin/lso_prefilter.py): each partition's high watermark, or with
        `read_committed` its LSO, from its leader, one ListOffsets request per leader. `leaders`: {tp: (leader,
        its leader epoch from Metadata, or -1)}; the epoch is named (CurrentLeaderEpoch, v4+), so a broker
        leading at another epoch answers an error for that partition. A request without an answer is each of
        its partitions' error (UNSUPPORTED_VERSION for a broker without ListOffsets v2, the first with an
        isolation level)."""
        by_leader: dict[int, dict[str, list[tuple[int, int]]]] = {}
        for tp, (leader, epoch) in leaders.items():
            by_leader.setdefault(leader, {}).setdefault(tp.topic, []).append((tp.partition, epoch))
        level = wire.READ_COMMITTED if read_committed else wire.READ_UNCOMMITTED

        async def on(leader: int, epochs: dict[str, list[tuple[int, int]]]) -> dict[TopicPartition, OffsetRead] | str:
            try:
                return wire.parse_latest_offsets(await self._send(wire.latest_offsets_request(epochs, level), leader))
            except kerrors.KafkaError as exc:
                return _transport_error(exc, leader, "ListOffsets").error

        async def go() -> list[dict[TopicPartition, OffsetRead] | str]:
            return await self._fan.to_nodes(by_leader, on)

        out: dict[TopicPartition, OffsetRead] = {}
        with _bulk_read():
            outcomes = self._run(go)
        for epochs, outcome in zip(by_leader.values(), outcomes, strict=True):
            if isinstance(outcome, str):
                failed = OffsetRead(None, -1, outcome)
                out.update((TopicPartition(t, p), failed) for t, parts in epochs.items() for p, _epoch in parts)
            else:
                out.update(outcome)  # a partition the broker left out is missing: lso_prefilter says so
        return out

    def offsets_for_time(self, leaders: dict[TopicPartition, int], timestamp_ms: int) -> dict[TopicPartition, int]:
        """Per partition, the first offset whose record timestamp is at least `timestamp_ms` (ListOffsets by
        time); -1 when no record is that recent. Partitions that could not be asked are left out."""
        async def go() -> list[tuple[int, dict[TopicPartition, int]]]:
            return await self._fan.to_nodes(
                _by_leader(leaders), lambda leader, tps: self._offsets_on(leader, tps, wire.READ_UNCOMMITTED,
                                                                          timestamp_ms))

        found: dict[TopicPartition, int] = {}
        for _level, offsets in self._run(go):
            found.update(offsets)
        return found

    # -- Fetch ------------------------------------------------------------------------------

    def read_log(self, reads: dict[TopicPartition, tuple[int, int]], max_bytes: int
                 ) -> tuple[dict[TopicPartition, bytes], list[ScanError]]:
        """Whole record batches of each partition from its start offset up to the high watermark or
        `max_bytes`, read from the given leader: {tp: (leader, start offset)}. Partitions concurrently."""
        async def go() -> list[tuple[TopicPartition, bytes, ScanError | None]]:
            return await self._fan.to_nodes(reads, lambda tp, at: self._read_on(tp, at[0], at[1], max_bytes))

        data: dict[TopicPartition, bytes] = {}
        errors: list[ScanError] = []
        for tp, got, error in self._run(go):
            data[tp] = got
            if error is not None:
                errors.append(error)
        return data, errors

    async def _read_on(self, tp: TopicPartition, leader: int, offset: int, budget: int
                       ) -> tuple[TopicPartition, bytes, ScanError | None]:
        from kafka_txn_tools.batches import SegmentError, iter_batches

        out = bytearray()
        while len(out) < budget:
            try:
                response = await self._send(wire.fetch_request(tp, offset, min(FETCH_BYTES, budget - len(out))),
                                            leader)
            except kerrors.KafkaError as exc:
                return tp, bytes(out), _transport_error(exc, leader, "Fetch")
            records, high_watermark, error = wire.parse_fetch(response, tp)
            if error is not None:
                return tp, bytes(out), ScanError(error, f"reading {tp} from broker {leader} failed: {error}",
                                                 broker_id=leader, partition=tp, api="Fetch", code=error_code(error))
            try:
                complete = [h for h, _ in iter_batches(records, str(tp))]  # a torn last batch ends the list
            except SegmentError as exc:
                return tp, bytes(out), ScanError("CORRUPT_MESSAGE", str(exc), broker_id=leader, partition=tp,
                                                 api="Fetch")
            if not complete or complete[-1].next_offset <= offset:
                break  # the high watermark, or a batch bigger than the fetch size
            out += records[:sum(h.size for h in complete)]
            offset = complete[-1].next_offset
            if offset >= high_watermark:
                break
        return tp, bytes(out), None

    # -- groups -----------------------------------------------------------------------------

    def list_groups(self, broker_ids: Iterable[int]) -> tuple[list[tuple[str, str]], list[ScanError]]:
        """(group id, type) of every group on every broker (each coordinates a share of them)."""
        async def on(broker_id: int) -> tuple[list[tuple[str, str]], ScanError | None]:
            try:
                groups, error = wire.parse_list_groups(await self._send(wire.list_groups_request(), broker_id))
            except kerrors.KafkaError as exc:
                return [], _transport_error(exc, broker_id, "ListGroups")
            if error is not None:
                return [], ScanError(error, f"ListGroups on broker {broker_id} failed: {error}", broker_id=broker_id,
                                     api="ListGroups", code=error_code(error))
            return groups, None

        async def go() -> list[tuple[list[tuple[str, str]], ScanError | None]]:
            return await self._fan.to_nodes(dict.fromkeys(broker_ids), lambda b, _: on(b))

        groups: list[tuple[str, str]] = []
        errors: list[ScanError] = []
        for outcome in self._run(go):
            groups.extend(outcome[0])
            if outcome[1] is not None:
                errors.append(outcome[1])
        return sorted(set(groups)), errors

    def committed_offsets(self, group_ids: Sequence[str], partitions: Sequence[TopicPartition],
                          coordinators: CoordinatorCache | None = None,
                          ) -> tuple[dict[str, dict[TopicPartition, int]], list[ScanError]]:
        """Each group's committed offsets on `partitions`, asked of its coordinator (OffsetFetch).
        `coordinators`: a scan loop's FindCoordinator answers (connection/coordinators.py)."""
        if not group_ids or not partitions:
            return {}, []
        return self._run(self._committed_async, sorted(set(group_ids)), list(partitions),
                         _or_fresh(coordinators))

    async def _committed_async(self, group_ids: list[str], partitions: list[TopicPartition], cache: CoordinatorCache,
                               ) -> tuple[dict[str, dict[TopicPartition, int]], list[ScanError]]:
        async def on(node: int, groups: list[str]) -> _GroupOffsets | ScanError:
            try:
                return wire.parse_offset_fetch(await self._send(wire.offset_fetch_request(groups, partitions), node))
            except kerrors.IncompatibleBrokerVersion:  # before Kafka 3.0: one group a request
                merged: tuple[dict[str, dict[TopicPartition, int]], dict[str, str]] = ({}, {})
                for g in groups:
                    got = wire.parse_offset_fetch(
                        await self._send(wire.offset_fetch_request_single(g, partitions), node), g)
                    merged[0].update(got[0])
                    merged[1].update(got[1])
                return merged
            except kerrors.KafkaError as exc:
                return _transport_error(exc, node, "OffsetFetch")

        return await self._group_offsets(group_ids, on, "group", "OffsetFetch", "OffsetFetch for group", cache)

    def share_group_offsets(self, group_ids: Sequence[str], partitions: Sequence[TopicPartition],
                            coordinators: CoordinatorCache | None = None,
                            ) -> tuple[dict[str, dict[TopicPartition, int]], list[ScanError]]:
        """Each read_committed share group's start offset on `partitions` (KIP-932: DescribeShareGroupOffsets
        and DescribeConfigs of share.isolation.level at the group's coordinator). A read_uncommitted share
        group reads past the LSO, so it is never held back there: it is left out. A cluster without share
        groups (before Kafka 4.1) answers nothing."""
        data = self._manager.broker_version_data
        if not group_ids or not partitions or (
                data is not None and wire.DESCRIBE_SHARE_GROUP_OFFSETS_KEY not in data.api_versions):
            return {}, []
        return self._run(self._share_async, sorted(set(group_ids)), list(partitions),
                         _or_fresh(coordinators))

    async def _share_async(self, group_ids: list[str], partitions: list[TopicPartition], cache: CoordinatorCache,
                           ) -> tuple[dict[str, dict[TopicPartition, int]], list[ScanError]]:
        async def on(node: int, groups: list[str]) -> _GroupOffsets | ScanError:
            try:
                offsets, bad = wire.parse_share_offsets(
                    await self._send(wire.share_offsets_request(groups, partitions), node))
                levels = wire.parse_share_isolation(await self._send(wire.share_isolation_request(groups), node))
            except kerrors.KafkaError as exc:
                return _transport_error(exc, node, "DescribeShareGroupOffsets")
            return {g: o for g, o in offsets.items() if levels.get(g) == "read_committed"}, bad

        return await self._group_offsets(group_ids, on, "share group", "DescribeShareGroupOffsets",
                                         "DescribeShareGroupOffsets for", cache)

    async def _group_offsets(
        self, group_ids: list[str], on: Callable[[int, list[str]], Coroutine[Any, Any, _GroupOffsets | ScanError]],
        kind: str, api: str, what: str, cache: CoordinatorCache,
    ) -> tuple[dict[str, dict[TopicPartition, int]], list[ScanError]]:
        """A group offsets read at each group's coordinator, asked once (again, after a FindCoordinator, where a
        coordinator remembered in `cache` failed): `on(node, groups)` answers ({group: offsets}, {group: error}),
        or the ScanError of a coordinator that could not be asked. A FindCoordinator without an answer ends the
        read with its error."""
        served: set[str] = set()
        sent: dict[int, list[str]] = {}

        async def asked(node: int, groups: list[str]) -> _GroupOffsets | ScanError:
            sent[node] = groups
            return await on(node, groups)

        merged: dict[str, dict[TopicPartition, int]] = {}
        errors: list[ScanError] = []
        unanswered: list[ScanError] = []

        async def find(groups: list[str]) -> Lookup:
            try:
                return wire.parse_find_coordinators(await self._send(wire.find_group_coordinators_request(groups)))
            except kerrors.KafkaError as exc:
                unanswered.append(_transport_error(exc, None, "FindCoordinator"))
                return {}, {}

        def lookup_failed(group: str, e: str) -> None:
            errors.append(ScanError(e, f"FindCoordinator for {kind} {group!r} failed: {e}", api="FindCoordinator",
                                    code=error_code(e)))

        def merge(outcome: _GroupOffsets | ScanError, last: bool) -> list[str]:
            if isinstance(outcome, ScanError):
                node = outcome.broker_id
                again = cache.after_error(GROUP, sent.get(node, []) if node is not None else [], served, last)
                if not again:
                    errors.append(outcome)
                return again
            merged.update(outcome[0])
            again = cache.after_error(GROUP, outcome[1], served, last)
            errors.extend(ScanError(e, f"{what} {g!r} failed: {e}", api=api, code=error_code(e))
                          for g, e in outcome[1].items() if g not in again)
            return again

        await self._fan.to_coordinators(group_ids, cache.finder(GROUP, find, served), asked, merge, lookup_failed,
                                        attempts=2 if cache.serving else 1)
        return ({}, unanswered) if unanswered else (merged, errors)


# A coordinator's answer to a group offsets read: {group: {partition: offset}}, {group: error name}.
_GroupOffsets = tuple[dict[str, dict[TopicPartition, int]], dict[str, str]]


def _or_fresh(coordinators: CoordinatorCache | None) -> CoordinatorCache:
    """A one-off call's: remembers for itself alone."""
    return coordinators if coordinators is not None else CoordinatorCache()


def _by_leader(leaders: dict[TopicPartition, int]) -> dict[int, list[TopicPartition]]:
    """The partitions each leader leads; partitions without a leader (-1) are not asked."""
    return group_by_node({tp: leader for tp, leader in leaders.items() if leader >= 0})


class _BootstrapWatch(logging.Handler):
    """Ends kafka-python's bootstrap at the first answer that retrying cannot change.

    kafka-python retries a failed bootstrap connection until its timeout, whatever the failure, and
    then raises only a timeout. A SASL refusal or an unsupported mechanism is final: the handler
    keeps it and closes the connection manager, which ends the bootstrap loop at once.
    """

    FINAL = (kerrors.SaslAuthenticationFailedError, kerrors.UnsupportedSaslMechanismError,
             kerrors.IllegalSaslStateError, kerrors.AuthorizationError)

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.client: Any = None
        self.refusal: BaseException | None = None

    def make_client(self, **config: Any) -> Any:
        """kafka-python's `kafka_client` hook: the client is built before the bootstrap starts."""
        from kafka.net.compat import KafkaNetClient

        self.client = KafkaNetClient(**config)
        return self.client

    def emit(self, record: logging.LogRecord) -> None:
        args = record.args if isinstance(record.args, tuple) else ()
        final = next((a for a in args if isinstance(a, self.FINAL)), None)
        if final is None or self.refusal is not None:
            return
        self.refusal = final
        if self.client is not None:
            self.client._manager.close()  # the bootstrap loop ends at its next turn


_CHECK = {"GSSAPI": "check the Kerberos settings: sasl.kerberos.service.name, keyTab and principal",
          "OAUTHBEARER": "check the token's issuer, audience and lifetime against the broker's "
                         "sasl.oauthbearer.* settings"}


def _auth_refused(servers: str, mechanism: str, exc: BaseException) -> ConnectionFailed:
    if isinstance(exc, kerrors.UnsupportedSaslMechanismError | kerrors.IllegalSaslStateError):
        return ConnectionFailed(f"the cluster at {servers} does not accept SASL/{mechanism} ({exc})",
                                "check sasl.mechanism and security.protocol", cause="UNSUPPORTED_SASL_MECHANISM")
    if isinstance(exc, kerrors.AuthorizationError):
        return ConnectionFailed(f"the cluster at {servers} refused this principal ({exc})",
                                cause="AUTHORIZATION_FAILED")
    # kafka-python's text is "[Error 58] SaslAuthenticationFailedError: <the broker's message>".
    reason = str(exc).split("SaslAuthenticationFailedError: ")[-1].strip() or type(exc).__name__
    return ConnectionFailed(f"the cluster at {servers} refused SASL/{mechanism} authentication ({reason})",
                            _CHECK.get(mechanism, "check the username and password in sasl.jaas.config"),
                            cause="SASL_AUTHENTICATION_FAILED")


def _probe(settings: ClientSettings, timeout_ms: int) -> list[str]:
    """The bootstrap addresses that answered as Kafka; ConnectionFailed naming each problem if none did."""
    from kafka_txn_tools.connection.bootstrap import MAX_PROBE_S, probe_all

    servers = [a for a in (settings.bootstrap_servers or "").split(",") if a.strip()]
    kw = settings.kwargs
    probes = probe_all(servers, kw.get("security_protocol", "PLAINTEXT"), kw.get("ssl_context"),
                       kw.get("sasl_mechanism"), timeout_ms / 1000)
    usable = [p.address for p in probes if p.ok]
    if usable:
        return usable
    if timeout_ms / 1000 < MAX_PROBE_S and all(p.problem.startswith("did not answer within") for p in probes):
        # Silence within a short timeout proves nothing about the brokers: ask again with the probe's own
        # budget, and blame the timeout only if they answer then.
        again = probe_all(servers, kw.get("security_protocol", "PLAINTEXT"), kw.get("ssl_context"),
                          kw.get("sasl_mechanism"), MAX_PROBE_S)
        if any(p.ok for p in again):
            raise _too_short(",".join(servers), timeout_ms)
    problems = "; ".join(f"{p.address} {p.problem}" for p in probes)
    fixes = sorted({p.fix for p in probes if p.fix})
    raise ConnectionFailed(f"cannot connect to the cluster: {problems}", "; ".join(fixes) or None,
                           cause="BROKER_UNREACHABLE")


def _connect(settings: ClientSettings, timeout_ms: int, client_id: str) -> Any:
    servers = settings.bootstrap_servers or ""
    kwargs = dict(settings.kwargs)
    protect([kwargs.get("sasl_plain_password"), kwargs.get("ssl_password")])  # kafka-python logs them
    kwargs.setdefault("client_id", client_id)
    kwargs.setdefault("request_timeout_ms", timeout_ms)
    mech = kwargs.get("sasl_mechanism", "SASL")
    provider = kwargs.get("sasl_oauth_token_provider")
    if provider is not None:
        provider.token()  # a refused secret or a dead token endpoint, named before connecting
        settings.principal = provider.subject() or settings.principal
    usable = _probe(settings, timeout_ms)
    if settings.kerberos is not None:
        # Tickets for the first usable broker: a Kerberos problem named in one round trip to the KDC.
        from kafka_txn_tools.connection.bootstrap import split_address

        settings.principal = settings.kerberos.login(split_address(usable[0])[0])
    watch = _BootstrapWatch()
    net_log = logging.getLogger("kafka.net")
    net_log.addHandler(watch)
    try:
        return KafkaAdminClient(bootstrap_servers=usable, bootstrap_timeout_ms=timeout_ms,
                                kafka_client=watch.make_client, **kwargs)
    except kerrors.SaslAuthenticationFailedError as exc:
        raise _auth_refused(servers, mech, exc) from None
    except kerrors.KafkaTimeoutError:
        _close_quietly(watch.client)
        if watch.refusal is not None:
            raise _auth_refused(servers, mech, watch.refusal) from None
        if _connects_given_time(usable, kwargs, timeout_ms):
            raise _too_short(servers, timeout_ms) from None
        raise ConnectionFailed(
            f"could not connect to the cluster at {servers} within {timeout_ms / 1000:g}s",
            "check --bootstrap-server, that the brokers are up, and security.protocol / TLS settings",
            cause="BROKER_UNREACHABLE") from None
    except kerrors.KafkaConfigurationError as exc:
        _close_quietly(watch.client)
        raise UsageError(f"invalid client configuration: {exc}") from None
    except kerrors.KafkaError as exc:
        _close_quietly(watch.client)
        raise ConnectionFailed(f"could not connect to the cluster at {servers}: {exc}") from None
    finally:
        net_log.removeHandler(watch)


# A timeout this short may be all that failed: connecting once more with this one tells.
ENOUGH_TO_CONNECT_MS = 5_000


def _too_short(servers: str, timeout_ms: int) -> ConnectionFailed:
    from kafka_txn_tools.durations import format_duration_ms

    return ConnectionFailed(f"the timeout of {format_duration_ms(timeout_ms)} is too short to connect: the brokers at "
                      f"{servers} answered when given {format_duration_ms(ENOUGH_TO_CONNECT_MS)}",
                      "give a longer --timeout, e.g. --timeout 30s (or default.api.timeout.ms in --command-config)")


def _connects_given_time(usable: list[str], kwargs: dict[str, Any], timeout_ms: int) -> bool:
    """After a connection timed out within a short timeout: does one with ENOUGH_TO_CONNECT_MS succeed?"""
    if timeout_ms >= ENOUGH_TO_CONNECT_MS:
        return False
    try:
        admin = KafkaAdminClient(bootstrap_servers=usable, bootstrap_timeout_ms=ENOUGH_TO_CONNECT_MS,
                                 **{**kwargs, "request_timeout_ms": ENOUGH_TO_CONNECT_MS})
    except kerrors.KafkaError:
        return False
    _close_quietly(admin)
    return True


def _close_quietly(client: Any) -> None:
    """Stop the I/O thread of a client whose admin client never finished starting."""
    if client is None:
        return
    try:
        client.close()
    except Exception:  # noqa: BLE001 - already failing; the original error is the one to report
        log.debug("closing a failed bootstrap client", exc_info=True)
