"""The admin client the flows use (admin/api.py's ClusterApi): one Transport (connection/transport.py) with the
request families of connection/transactions.py, offsets.py, groups.py and leadership.py.

Threading: as connection/transport.py: blocking calls from any thread; I/O on kafka-python's own thread.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kafka_txn_tools.connection.config import ClientSettings
from kafka_txn_tools.connection.connect import connect
from kafka_txn_tools.connection.groups import GroupRequests
from kafka_txn_tools.connection.leadership import LeadershipRequests
from kafka_txn_tools.connection.offsets import OffsetRequests
from kafka_txn_tools.connection.security.ticket_cache import LOGIN_FAILED
from kafka_txn_tools.connection.transactions import (
    DESCRIBE_PRODUCERS_BATCH,
    IN_FLIGHT_PER_BROKER,
    TransactionRequests,
)
from kafka_txn_tools.connection.transport import Transport
from kafka_txn_tools.errors import ConnectionFailed

__all__ = ["DESCRIBE_PRODUCERS_BATCH", "IN_FLIGHT_PER_BROKER", "AdminClient", "Transport"]


class AdminClient(TransactionRequests, OffsetRequests, GroupRequests, LeadershipRequests):
    """Connect with `AdminClient(settings)` (connection/connect.py names what fails and its fix); use as a context
    manager so the I/O thread stops."""

    def __init__(self, settings: ClientSettings, timeout_ms: int = 30_000, client_id: str = "kafka-txn") -> None:
        self.settings = settings
        super().__init__(connect(settings, timeout_ms, client_id), timeout_ms)

    def renew_credentials(self) -> None:
        """For a client kept open across many operations (the monitor, between its scans): get a new OAuth
        token near the current one's expiry, keep the Kerberos ticket renewed (security/oauth.py, kerberos.py).
        kafka-python re-authenticates its connections with them when the broker's session lifetime (KIP-368)
        asks. ConnectionFailed (cause LOGIN_FAILED) naming why, once the credential has expired and cannot be
        renewed. Called from the caller's thread."""
        provider = self.settings.kwargs.get("sasl_oauth_token_provider")
        if provider is not None:
            provider.token()
        if self.settings.kerberos is not None:
            self.settings.kerberos.renew()

    def _run(self, fn: Callable[..., Any], *args: Any) -> Any:
        try:
            return super()._run(fn, *args)
        except ConnectionFailed as exc:
            if exc.cause == LOGIN_FAILED and self.settings.kerberos is not None:
                # A re-authentication failed on kafka-python's thread: say why the ticket could not be renewed,
                # if that is why (a keytab gone, a renew limit passed).
                self.settings.kerberos.explain_failure()
            raise

    def close(self) -> None:
        try:
            super().close()
        finally:
            if self.settings.kerberos is not None:
                self.settings.kerberos.close()

    @property
    def principal(self) -> str | None:
        """Who the cluster authenticated us as (SASL username, Kerberos principal, OAuth subject), if SASL."""
        return self.settings.principal

    @property
    def cluster_name(self) -> str:
        """How prompts and the audit log name the cluster: the profile, else the bootstrap servers."""
        return self.settings.cluster_name
