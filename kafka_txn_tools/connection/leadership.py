"""The leadership APIs move-coordinator uses: ElectLeaders (preferred) and AlterPartitionReassignments.
Threading: as connection/transport.py.
"""

from __future__ import annotations

from collections.abc import Sequence

from kafka_txn_tools.connection import wire
from kafka_txn_tools.connection.transport import Transport
from kafka_txn_tools.models import TopicPartition


class LeadershipRequests(Transport):
    """Leader elections and replica reorders, on a Transport."""

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
