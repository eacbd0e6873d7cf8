"""The offset and log reads: ListOffsets (the LSO and the high watermark, by time) from each leader, and Fetch
of __transaction_state. Threading: as connection/transport.py.
"""

from __future__ import annotations

import kafka.errors as kerrors

from kafka_txn_broker.gc_pause import bulk as _bulk_read
from kafka_txn_tools.connection import wire
from kafka_txn_tools.connection.fan_out import group_by_node
from kafka_txn_tools.connection.transport import Transport, transport_error
from kafka_txn_tools.errors import error_code
from kafka_txn_tools.models import OffsetRead, PartitionOffsets, ScanError, TopicPartition

# Bytes per Fetch when reading __transaction_state (its records are ~100 bytes; batches are one record).
FETCH_BYTES = 1 << 20


def _by_leader(leaders: dict[TopicPartition, int]) -> dict[int, list[TopicPartition]]:
    """The partitions each leader leads; partitions without a leader (-1) are not asked."""
    return group_by_node({tp: leader for tp, leader in leaders.items() if leader >= 0})



class OffsetRequests(Transport):
    """Offset and log reads, on a Transport."""

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
        level = wire.READ_COMMITTED if read_committed else wire.READ_UNCOMMITTED

        async def go() -> dict[TopicPartition, OffsetRead]:
            return await self._latest(leaders, level)

        with _bulk_read():
            return self._run(go)

    def latest_offsets_both(self, leaders: dict[TopicPartition, tuple[int, int]]
                            ) -> tuple[dict[TopicPartition, OffsetRead], dict[TopicPartition, OffsetRead]]:
        """`latest_offsets` of both levels at once, (high watermarks, LSOs): one round trip instead of two, for
        a first pass, which knows nothing yet that would narrow the LSO read."""
        async def go() -> list[dict[TopicPartition, OffsetRead]]:
            levels = {wire.READ_UNCOMMITTED: leaders, wire.READ_COMMITTED: leaders}
            return await self._fan.to_nodes(levels, lambda level, asked: self._latest(asked, level))

        with _bulk_read():
            hw, lso = self._run(go)
        return hw, lso

    async def _latest(self, leaders: dict[TopicPartition, tuple[int, int]], level: int
                      ) -> dict[TopicPartition, OffsetRead]:
        by_leader: dict[int, dict[str, list[tuple[int, int]]]] = {}
        for tp, (leader, epoch) in leaders.items():
            by_leader.setdefault(leader, {}).setdefault(tp.topic, []).append((tp.partition, epoch))

        async def on(leader: int, epochs: dict[str, list[tuple[int, int]]]) -> dict[TopicPartition, OffsetRead] | str:
            try:
                return wire.parse_latest_offsets(await self._send(wire.latest_offsets_request(epochs, level), leader))
            except kerrors.KafkaError as exc:
                return transport_error(exc, leader, "ListOffsets").error

        out: dict[TopicPartition, OffsetRead] = {}
        outcomes = await self._fan.to_nodes(by_leader, on)
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
                return tp, bytes(out), transport_error(exc, leader, "Fetch")
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
