"""The transport every request of the tools goes through: kafka-python's network stack (connecting, TLS, SASL,
version negotiation) behind one public `send()`, and the fan-out that drives many requests at once
(connection/fan_out.py). Nothing outside connection/ touches kafka-python's private names; this module and
connect.py are where they are touched.

Threading: kafka-python runs its I/O on one background thread with its own small event loop; `send()` and
`run()` block the caller while coroutines run on that loop, so any thread may call them. Requests to
different brokers, and a few batches per broker, are in flight together: that, not Python speed, is what makes
a cluster-wide scan fast. Per-broker failures come back as ScanError values so one dead broker never stops a
scan.

It reaches into `KafkaAdminClient._manager` (the connection manager kafka-python's own admin mixins use);
kafka-python is pinned in pyproject.toml for that reason.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Self

import kafka.errors as kerrors

from kafka_txn_broker.gc_pause import bulk
from kafka_txn_tools.connection import wire
from kafka_txn_tools.connection.fan_out import FanOut
from kafka_txn_tools.connection.in_flight import InFlightLimit
from kafka_txn_tools.errors import ConnectionFailed, MissingApi
from kafka_txn_tools.models import ClusterInfo, ScanError

# A broker that cannot be reached (refused, in backoff, unknown): not answered, another broker may answer.
_UNREACHABLE = (kerrors.KafkaConnectionError, kerrors.NodeNotReadyError, kerrors.UnknownBrokerIdError)
# No answer in time: a request's timeout (RequestTimedOutError), or kafka-python's own (KafkaTimeoutError).
_TIMED_OUT = (kerrors.RequestTimedOutError, kerrors.KafkaTimeoutError)


def api_of(exc: BaseException) -> str:
    """kafka-python names the request class in IncompatibleBrokerVersion's text: 'the XRequest Kafka protocol'."""
    import re

    found = re.search(r"'(\w+?)Request'", str(exc))
    return found.group(1) if found else "unknown"


def transport_error(exc: BaseException, broker_id: int | None, api: str) -> ScanError:
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


class Transport:
    """Requests to the cluster a connected KafkaAdminClient (`admin`) reaches; use as a context manager so the I/O
    thread stops. `timeout_ms`: each request's timeout."""

    def __init__(self, admin: Any, timeout_ms: int = 30_000) -> None:
        self.timeout_ms = timeout_ms
        self._admin = admin
        self._manager = admin._manager
        self._fan = FanOut(self._manager.call_soon, self._manager._net.sleep)
        # One slot below kafka-python's own limit: its Metadata refreshes share the connection.
        allowed = int(self._manager.config.get("max_in_flight_requests_per_connection", 5))
        self._slots = InFlightLimit(max(1, allowed - 1))

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._admin.close()

    def supports(self, api: str) -> bool:
        """Whether the cluster advertises `api` (capabilities.APIS) in a version our requests can use.

        Brokers answer ApiVersions when we connect; the bootstrap broker's answer stands for the
        cluster (a rolling upgrade can mix versions: then requests to older brokers fail one by one).
        """
        from kafka_txn_tools.connection.capabilities import APIS

        info = APIS[api]
        known = self.api_versions()
        if known is None:
            return True  # not known before the first connection: let the request find out
        versions = known.get(info.key)
        return versions is not None and versions[1] >= info.min_version

    def api_versions(self, node_id: int | None = None) -> dict[int, tuple[int, int]] | None:
        """{api key: (min, max)} a broker advertised in its ApiVersions answer: the bootstrap broker's (`node_id`
        None), or that broker's; None before we have talked to it."""
        if node_id is None:
            data = self._manager.broker_version_data
        else:
            conn = self._manager._conns.get(node_id)
            data = getattr(conn, "broker_version_data", None) if conn is not None else None
        return None if data is None or data.api_versions is None else dict(data.api_versions)

    def update_metadata(self, response: Any) -> None:
        """Teach the connection manager a Metadata answer, so connections to any new leader can be made."""
        self._manager.cluster.update_metadata(response)

    def send(self, request: Any, node_id: int | None = None, timeout_ms: int | None = None) -> Any:
        """Send `request` (a kafka-python message, any version it negotiates) to broker `node_id` (None: any
        broker) and wait for the answer; kafka-python's errors (transport, no common version) are raised."""
        return self._run(self._send, request, node_id, timeout_ms)

    # -- Metadata ---------------------------------------------------------------------------

    def metadata(self, topics: Sequence[str] | None = None) -> ClusterInfo:
        """Brokers and partitions (all topics, internal ones included, when `topics` is None)."""
        async def go() -> ClusterInfo:
            return wire.parse_metadata(await self._send(wire.metadata_request(topics)))

        with bulk():
            return self._run_or_raise(go, "read cluster metadata")


    # -- plumbing for the request families (connection/transactions.py, offsets.py, groups.py, ...) ----------

    def _run(self, fn: Callable[..., Any], *args: Any) -> Any:
        try:
            return self._manager.run(fn, *args)
        except Exception as exc:
            if type(exc).__module__.startswith("gssapi"):
                # The Kerberos library failed while kafka-python (re-)authenticated a connection on its own thread
                # (a ticket expired and not renewable): a named login failure, not a crash.
                from kafka_txn_tools.connection.security.kerberos import login_failure

                raise login_failure(exc) from None
            raise

    def _start(self, request: Any, node_id: int | None = None, timeout_ms: int | None = None) -> Any:
        """Send without waiting: a kafka-python Future (already failed if the send could not start)."""
        try:
            return self._manager.send(request, node_id=node_id, request_timeout_ms=timeout_ms or self.timeout_ms)
        except kerrors.KafkaError as exc:  # e.g. UnknownBrokerIdError, raised before any I/O
            from kafka.future import Future

            return Future().failure(exc)

    async def _send(self, request: Any, node_id: int | None = None, timeout_ms: int | None = None) -> Any:
        if node_id is None:
            return await self._send_any(request, timeout_ms)
        await self._slots.acquire(node_id)
        try:
            return await self._start(request, node_id, timeout_ms)
        except (*_UNREACHABLE, *_TIMED_OUT) as exc:
            if "max_in_flight" not in str(exc):  # the broker is not answering: the burst's others fail now too
                self._slots.fail_waiting(node_id, exc)
            raise
        finally:
            self._slots.release(node_id)

    async def _send_any(self, request: Any, timeout_ms: int | None) -> Any:
        """`request` to any broker (Metadata, FindCoordinator, ...). kafka-python picks one at random among the
        brokers the last Metadata named, and a broker just killed stays named until the controller fences it,
        seconds later, while one restarting listens before it answers (recovering its logs): one that cannot be
        reached makes the request go to the next broker known, each once, so that one broker down never fails a
        request the others can answer. After a timeout, the request goes to one other broker only: the whole
        cluster dark costs two timeouts, not one per broker. What goes to any broker is a read, or a write whose
        repeat changes nothing (a preferred election, a reorder to the same replicas)."""
        tried: set[Any] = set()
        timed_out = False
        node = self._manager.least_loaded_node()
        while True:
            try:
                return await self._start(request, node, timeout_ms)
            except (*_UNREACHABLE, *_TIMED_OUT) as exc:
                if isinstance(exc, _TIMED_OUT):
                    if timed_out:
                        raise
                    timed_out = True
                tried.add(node)
                node = self._next_broker(tried)
                if node is None:
                    raise

    def _next_broker(self, tried: set[Any]) -> int | None:
        """A broker not tried yet: one already connected first (it answered a moment ago)."""
        left = [b.node_id for b in self._manager.cluster.brokers() if b.node_id not in tried]
        connected = [n for n in left if getattr(self._manager._conns.get(n), "connected", False)]
        return (connected or left or [None])[0]

    def _run_or_raise(self, fn: Callable[..., Any], what: str, *args: Any) -> Any:
        try:
            return self._run(fn, *args)
        except kerrors.IncompatibleBrokerVersion as exc:
            # Not a network fault: the broker does not offer the request at all.
            raise MissingApi(api_of(exc), f"the broker does not support the request to {what} ({exc})") from None
        except kerrors.KafkaTimeoutError:
            from kafka_txn_tools.durations import format_duration_ms

            # Connected a moment ago, so the brokers are reachable: say what the timeout was, not that they are down.
            raise ConnectionFailed(f"{what}: no answer within the {format_duration_ms(self.timeout_ms)} timeout (the "
                                   "cluster answered when connecting just before)",
                                   "give a longer --timeout, e.g. --timeout 30s") from None
        except kerrors.KafkaError as exc:
            err = transport_error(exc, None, what)
            raise ConnectionFailed(err.message, "check that the brokers are up and reachable",
                                   cause=err.error) from None
