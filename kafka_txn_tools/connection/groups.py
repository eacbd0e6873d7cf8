"""The group APIs a scan reads for context: ListGroups on each broker, each group's committed offsets at its
coordinator (OffsetFetch), and read_committed share groups' start offsets (KIP-932). Threading: as
connection/transport.py.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from typing import Any

import kafka.errors as kerrors

from kafka_txn_tools.connection import wire
from kafka_txn_tools.connection.coordinators import GROUP, CoordinatorCache, or_fresh
from kafka_txn_tools.connection.fan_out import Lookup
from kafka_txn_tools.connection.transport import Transport, transport_error
from kafka_txn_tools.errors import error_code
from kafka_txn_tools.models import ScanError, TopicPartition

# A coordinator's answer to a group offsets read: {group: {partition: offset}}, {group: error name}.
_GroupOffsets = tuple[dict[str, dict[TopicPartition, int]], dict[str, str]]


class GroupRequests(Transport):
    """Group reads, on a Transport."""

    def list_groups(self, broker_ids: Iterable[int]) -> tuple[list[tuple[str, str]], list[ScanError]]:
        """(group id, type) of every group on every broker (each coordinates a share of them)."""
        async def on(broker_id: int) -> tuple[list[tuple[str, str]], ScanError | None]:
            try:
                groups, error = wire.parse_list_groups(await self._send(wire.list_groups_request(), broker_id))
            except kerrors.KafkaError as exc:
                return [], transport_error(exc, broker_id, "ListGroups")
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
                         or_fresh(coordinators))

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
                return transport_error(exc, node, "OffsetFetch")

        return await self._group_offsets(group_ids, on, "group", "OffsetFetch", "OffsetFetch for group", cache)

    def share_group_offsets(self, group_ids: Sequence[str], partitions: Sequence[TopicPartition],
                            coordinators: CoordinatorCache | None = None,
                            ends: Mapping[TopicPartition, int | None] | None = None,
                            ) -> tuple[dict[str, dict[TopicPartition, int]], list[ScanError]]:
        """Each read_committed share group's position on `partitions` (KIP-932: DescribeShareGroupOffsets
        and DescribeConfigs of share.isolation.level at the group's coordinator): its start offset, moved past
        the records already delivered above it where `ends` (the partitions' high watermarks) and the lag
        tell (wire.parse_share_offsets). A read_uncommitted share group reads past the LSO, so it is never
        held back there: it is left out. A cluster without share groups (before Kafka 4.1) answers nothing."""
        known = self.api_versions()
        if not group_ids or not partitions or (
                known is not None and wire.DESCRIBE_SHARE_GROUP_OFFSETS_KEY not in known):
            return {}, []
        return self._run(self._share_async, sorted(set(group_ids)), list(partitions),
                         or_fresh(coordinators), dict(ends or {}))

    async def _share_async(self, group_ids: list[str], partitions: list[TopicPartition], cache: CoordinatorCache,
                           ends: dict[TopicPartition, int | None],
                           ) -> tuple[dict[str, dict[TopicPartition, int]], list[ScanError]]:
        async def on(node: int, groups: list[str]) -> _GroupOffsets | ScanError:
            try:
                offsets, bad = wire.parse_share_offsets(
                    await self._send(wire.share_offsets_request(groups, partitions), node), ends)
                levels = wire.parse_share_isolation(await self._send(wire.share_isolation_request(groups), node))
            except kerrors.KafkaError as exc:
                return transport_error(exc, node, "DescribeShareGroupOffsets")
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
                unanswered.append(transport_error(exc, None, "FindCoordinator"))
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
