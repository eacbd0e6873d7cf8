"""The admin client the flows use (admin/api.py's ClusterApi): one Transport (connection/transport.py) with the
request families of connection/transactions.py, offsets.py, groups.py and leadership.py.

Threading: as connection/transport.py: blocking calls from any thread; I/O on kafka-python's own thread.
"""

from __future__ import annotations

from kafka_txn_tools.connection.config import ClientSettings
from kafka_txn_tools.connection.connect import connect
from kafka_txn_tools.connection.groups import GroupRequests
from kafka_txn_tools.connection.leadership import LeadershipRequests
from kafka_txn_tools.connection.offsets import OffsetRequests
from kafka_txn_tools.connection.transactions import (
    DESCRIBE_PRODUCERS_BATCH,
    IN_FLIGHT_PER_BROKER,
    TransactionRequests,
)
from kafka_txn_tools.connection.transport import Transport

__all__ = ["DESCRIBE_PRODUCERS_BATCH", "IN_FLIGHT_PER_BROKER", "AdminClient", "Transport"]


class AdminClient(TransactionRequests, OffsetRequests, GroupRequests, LeadershipRequests):
    """Connect with `AdminClient(settings)` (connection/connect.py names what fails and its fix); use as a context
    manager so the I/O thread stops."""

    def __init__(self, settings: ClientSettings, timeout_ms: int = 30_000, client_id: str = "kafka-txn") -> None:
        self.settings = settings
        super().__init__(connect(settings, timeout_ms, client_id), timeout_ms)

    @property
    def principal(self) -> str | None:
        """Who the cluster authenticated us as (SASL username, Kerberos principal, OAuth subject), if SASL."""
        return self.settings.principal

    @property
    def cluster_name(self) -> str:
        """How prompts and the audit log name the cluster: the profile, else the bootstrap servers."""
        return self.settings.cluster_name
