"""Connecting, and saying why not: the bootstrap addresses probed first (connection/bootstrap.py), each
problem named with its fix (a refused SASL mechanism, a Kerberos or OAuth credential, a timeout too short to
connect), and kafka-python's admin client built only once a broker has answered as Kafka.

Threading: called from the caller's thread before any I/O thread exists; the admin client it returns owns one.
"""

from __future__ import annotations

import logging
from typing import Any

import kafka.errors as kerrors
from kafka.admin import KafkaAdminClient

from kafka_txn_tools.connection.config import ClientSettings
from kafka_txn_tools.connection.security.redact import protect
from kafka_txn_tools.errors import ConnectionFailed, UsageError

log = logging.getLogger(__name__)


def _keep_bytes_read_before_eof() -> None:
    """kafka-python 3.0.12 drops what it read together with the end of the stream: its transports' `_sock_recv`
    returns the bytes and the disconnect at once, and the read loop aborts without handing the bytes over. Apache
    Kafka answers a refused SASL token (SaslAuthenticate's error and message) and then closes the connection
    (after connection.failed.authentication.delay.ms): read together, the refusal was lost and the bootstrap
    retried until --timeout. Here the bytes go first; the read loop's next turn finds the end of the stream
    again (a closed socket stays readable) and aborts then, with the same error."""
    from kafka.net.transport import KafkaSSLTransport, KafkaTCPTransport

    for cls in (KafkaTCPTransport, KafkaSSLTransport):
        original = cls.__dict__["_sock_recv"]
        if getattr(original, "keeps_bytes_before_eof", False):
            continue

        def sock_recv(self: Any, _original: Any = original) -> tuple[bytes, BaseException | None]:
            data, err = _original(self)
            return (data, None) if data and err is not None else (data, err)

        sock_recv.keeps_bytes_before_eof = True  # type: ignore[attr-defined]
        cls._sock_recv = sock_recv


_keep_bytes_read_before_eof()


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


def connect(settings: ClientSettings, timeout_ms: int, client_id: str) -> Any:
    """A connected KafkaAdminClient, or ConnectionFailed / UsageError naming the problem and its fix."""
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
