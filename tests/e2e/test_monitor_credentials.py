"""`kafka-txn monitor` across many expiries of its credentials: three monitors (child processes) side by side on
one embedded broker that enforces each SASL session's lifetime (KIP-368), against the real OpenID provider and
MIT KDC of the tests:

- OAuth: panva's oidc-provider hands out 6-second tokens. The broker ends each session at its token's exp, so the
  monitor must fetch a new token before each expires and re-authenticate its connections with it.
- Kerberos from a keytab: the principal's tickets last 6 s; the Kerberos library gets new ones from the keytab.
- Kerberos from a ticket cache `kinit` filled with a 6-second renewable ticket: the monitor renews it with
  `kinit -R`, as Kafka's Java login does.
  The broker's connections.max.reauth.ms (3 s) makes the GSSAPI monitors re-authenticate every few seconds.

Every scan is complete and reports the staged hanging transaction across EXPIRIES lifetimes. Then each
credential stops being renewable: the token endpoint goes away, the keytab is removed, the cache gets a ticket
whose renew limit comes 7 s later. Each monitor's scans then fail, counted as LOGIN_FAILED with a message naming
the cause; the monitors live on, keep the finding (stale), and scan again once the endpoint is back, the keytab
restored, and `kinit` run again (what the failure message says to do).
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import subprocess
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kafka_txn_broker import EmbeddedCluster
from kafka_txn_broker.testing.scenarios import HangingTransaction
from tests.broker.security.kerberos import REALM, Realm
from tests.broker.security.oidc import CLIENTS, Provider
from tests.broker.security.support import certificates
from tests.e2e.auth_support import broker_block, doc_block, incident_on_disk
from tests.e2e.monitor_support import MonitorProcess, wait_for
from tests.e2e.test_auth_oauth import broker_config, client_properties
from tests.e2e.test_monitor import metric
from tests.support.tcp_proxy import TcpProxy

TOKEN_TTL_S = TICKET_S = 6
EXPIRIES = 4  # token (and ticket) lifetimes each monitor runs through before its credential breaks


def watch_sessions(caplog: pytest.LogCaptureFixture) -> None:
    """The broker's log of (re-)authentications (DEBUG) and of sessions closed as expired (INFO); the handler's
    level is the last one set, so DEBUG comes last."""
    caplog.set_level(logging.INFO, logger="kafka_txn_broker.server")
    caplog.set_level(logging.DEBUG, logger="kafka_txn_broker.security.auth")


@contextlib.contextmanager
def diagnosed(monitor: MonitorProcess) -> Iterator[None]:
    """A failed assertion about `monitor` carries its scan counts and what it printed."""
    try:
        yield
    except AssertionError as exc:
        lines = [line for line in monitor.get("/metrics")[1].splitlines() if "scan" in line and "{" in line]
        raise AssertionError(f"{exc}: {lines}; {monitor.terminate()[1]}") from None


def scans(monitor: MonitorProcess, result: str) -> float:
    return metric(monitor.get("/metrics")[1], "kafka_txn_scans_total", result=result) or 0


def reauthentications(caplog: pytest.LogCaptureFixture, principal: str, since: int = 0) -> int:
    return sum(1 for r in caplog.records[since:] if f"re-authenticated as {principal} " in r.getMessage())


def expired_sessions(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "expired without re-authentication" in r.getMessage()]


def counts(monitor: MonitorProcess) -> tuple[float, float, float]:
    return scans(monitor, "complete"), scans(monitor, "partial"), scans(monitor, "failed")


def all_scans_complete_with_the_hang(monitor: MonitorProcess, truth: HangingTransaction,
                                     before: tuple[float, float, float]) -> None:
    """Since `before` (counts()), every scan was complete, and there were many (1 s interval, slow scans on a
    loaded machine); the hang is reported."""
    complete, partial, failed = counts(monitor)
    assert (partial, failed) == before[1:]
    assert complete - before[0] >= EXPIRIES * TOKEN_TTL_S / 2
    doc = monitor.findings()
    assert doc is not None and [(h["topic"], h["producer_id"]) for h in doc["hanging"]] == [
        (truth.topic, truth.producer_id)]


def failed_with(monitor: MonitorProcess, cause: str) -> str:
    """/metrics once a scan has failed for `cause`; the monitor is alive and says so on /healthz."""
    def failed() -> str | None:
        text = monitor.get("/metrics")[1]
        return text if metric(text, "kafka_txn_scan_success") == 0 and (
            metric(text, "kafka_txn_scan_errors_total", cause=cause) or 0) >= 1 else None

    with diagnosed(monitor):
        text = wait_for(f"a scan failed for {cause}", failed, timeout=60)
    assert monitor.proc is not None and monitor.proc.poll() is None
    status, body = monitor.get("/healthz")
    assert status == 200 and json.loads(body)["last_scan"] == "failed" and json.loads(body)["stale"] is True
    assert metric(text, "kafka_txn_stale_findings") == 1  # the hang is kept, flagged stale
    return text


def recovers(monitor: MonitorProcess) -> None:
    def complete() -> bool:
        text = monitor.get("/metrics")[1]
        return metric(text, "kafka_txn_scan_success") == 1 and metric(text, "kafka_txn_scan_stale") == 0

    wait_for("a complete scan again, same process", complete, timeout=60)


def clean_exit(monitor: MonitorProcess) -> str:
    code, log = monitor.terminate()
    assert code == 0 and "Traceback" not in log, log
    return log


@pytest.fixture
def short_tokens() -> Iterator[Provider]:
    provider = Provider(CLIENTS, ttl_s=TOKEN_TTL_S).start()
    try:
        yield provider
    finally:
        provider.stop()


SERVICE = "kafkamon"  # a service of its own: the other Kerberos tests' keys stay as they are
REAUTH_MS = 3000


@pytest.fixture(scope="module")
def principals(kdc: Realm) -> dict[str, Path]:
    tabs = {name: kdc.principal(name) for name in (f"{SERVICE}/127.0.0.1", "mon-keytab", "mon-kinit")}
    kdc.kadmin(f'modprinc -maxlife "{TICKET_S} seconds" mon-keytab',
               f'modprinc -maxlife "{TICKET_S} seconds" -maxrenewlife "10 minutes" mon-kinit',
               f'modprinc -maxrenewlife "1 hour" krbtgt/{REALM}@{REALM}')
    return tabs


def cluster_config(oidc: Provider, service_keytab: Path) -> dict[str, Any]:
    """The OAuth broker block and the GSSAPI broker block of docs/security-auth.md, on one listener."""
    cfg = broker_config(oidc)
    kerberos = broker_block("gssapi-broker", {
        "/etc/kafka/broker.pem": str(certificates().server),
        "/etc/security/keytabs/kafka.keytab": str(service_keytab),
        "kafka/broker1.example.com@EXAMPLE.COM": f"{SERVICE}/127.0.0.1@{REALM}",
        "sasl.kerberos.service.name: kafka": f"sasl.kerberos.service.name: {SERVICE}",
        "User:ops": "User:mon-keytab;User:mon-kinit"})
    for key in ("sasl.kerberos.service.name", "listener.name.sasl_ssl.gssapi.sasl.jaas.config"):
        cfg[key] = kerberos[key]
    cfg["sasl.enabled.mechanisms"] = f"GSSAPI,{cfg['sasl.enabled.mechanisms']}"
    cfg["super.users"] += f";{kerberos['super.users']}"
    cfg["connections.max.reauth.ms"] = REAUTH_MS  # GSSAPI sessions last this long (Kafka reads no ticket end)
    return cfg


def kerberos_properties(tmp_path: Path, block: str, replacements: dict[str, str], name: str) -> Path:
    text = doc_block(block, {**replacements, "/etc/kafka/ca.pem": str(certificates().ca)})
    path = tmp_path / f"{name}.properties"
    path.write_text(text.replace("sasl.kerberos.service.name=kafka", f"sasl.kerberos.service.name={SERVICE}"))
    return path


def kinit(keytab: Path, ccache: Path, lifetime_s: int, renewable_s: int) -> None:
    subprocess.run(["kinit", "-k", "-t", str(keytab), "-l", f"{lifetime_s}s", "-r", f"{renewable_s}s", "-c",
                    f"FILE:{ccache}", f"mon-kinit@{REALM}"], check=True, capture_output=True, timeout=30)


def ticket_left(ccache: Path) -> int:
    """Seconds the cache's ticket has left, as the Kerberos library reads it (0 once expired)."""
    import gssapi

    try:
        return int(gssapi.Credentials(usage="initiate", store={"ccache": f"FILE:{ccache}"}).lifetime or 0)
    except gssapi.raw.GSSError:
        return 0


def as_requests(kdc_log: Path, principal: str) -> int:
    """Initial tickets the KDC issued to `principal` (its log's AS_REQ lines)."""
    return len(re.findall(rf"AS_REQ .*ISSUE: .* {re.escape(principal)} for krbtgt", kdc_log.read_text()))


@pytest.mark.needs("gssapi")
def test_three_monitors_across_many_expiries_of_their_credentials(
        short_tokens: Provider, kdc: Realm, principals: dict[str, Path], tmp_path: Path,
        caplog: pytest.LogCaptureFixture) -> None:
    watch_sessions(caplog)
    data = tmp_path / "kafka"
    [truth] = incident_on_disk(data, 1)
    # The OAuth monitor reaches the token endpoint through a proxy the test closes; the broker reads the JWKS
    # directly.
    issuer = urllib.parse.urlparse(short_tokens.issuer)
    target = (issuer.hostname or "127.0.0.1", issuer.port or 80)
    proxy = TcpProxy(("127.0.0.1", 0), target).__enter__()
    port = int(proxy.address.rsplit(":", 1)[1])
    endpoint = f"http://{proxy.address}/token"
    oauth = client_properties(tmp_path, short_tokens, "kafka-admin", endpoint=endpoint)
    keytab = tmp_path / "mon-keytab.keytab"
    keytab.write_bytes(principals["mon-keytab"].read_bytes())
    by_keytab = kerberos_properties(tmp_path, "gssapi-client-keytab", {
        "/etc/security/keytabs/ops.keytab": str(keytab), "ops@EXAMPLE.COM": f"mon-keytab@{REALM}"}, "keytab")
    by_cache = kerberos_properties(tmp_path, "gssapi-client-ticket-cache", {}, "cache")
    ccache, kdc_log = tmp_path / "mon-kinit.ccache", kdc.dir / "kdc.log"
    tickets_before = as_requests(kdc_log, f"mon-keytab@{REALM}")
    history = tmp_path / "history"
    history.mkdir()
    try:
        with EmbeddedCluster(nodes=1, data_dir=data, config=cluster_config(
                short_tokens, principals[f"{SERVICE}/127.0.0.1"])) as cluster, contextlib.ExitStack() as stack:
            def monitor(name: str, config: Path, **env: str) -> MonitorProcess:
                return stack.enter_context(MonitorProcess(cluster.bootstrap_servers, history / f"{name}.db",
                                                          "--command-config", str(config), env=env))

            from_cache = monitor("cache", by_cache, KRB5CCNAME=f"FILE:{ccache}")
            # kinit once that monitor runs: a slow start on a loaded machine must not outlast the first ticket.
            kinit(principals["mon-kinit"], ccache, TICKET_S, 600)
            first_end = time.time() + TICKET_S
            monitors = [from_cache, monitor("keytab", by_keytab), monitor("oauth", oauth)]
            for m in monitors:
                with diagnosed(m):
                    wait_for("the hang", lambda m=m: (m.findings() or {}).get("hanging"))  # type: ignore[misc]
            before, since, began = {m: counts(m) for m in monitors}, len(caplog.records), time.monotonic()
            principals_seen = ("User:mon-kinit", "User:mon-keytab", "User:kafka-admin")
            wait_for(f"{EXPIRIES} lifetimes and re-authentications of each",
                     lambda: time.monotonic() - began >= EXPIRIES * TICKET_S
                     and all(reauthentications(caplog, p, since) >= EXPIRIES for p in principals_seen), timeout=120)
            for m in monitors:
                with diagnosed(m):
                    all_scans_complete_with_the_hang(m, truth, before[m])
            assert expired_sessions(caplog) == []  # every session re-authenticated before it ended
            # New tickets came from the keytab, about one per lifetime; the cache's ticket was renewed past its
            # first end, more than once.
            assert as_requests(kdc_log, f"mon-keytab@{REALM}") - tickets_before >= EXPIRIES - 1
            assert time.time() > first_end + 2 * TICKET_S and ticket_left(ccache) > 0

            # Each credential stops being renewable.
            proxy.__exit__()  # the token endpoint refuses connections
            keytab.rename(tmp_path / "elsewhere.keytab")
            kinit(principals["mon-kinit"], ccache, 4, 7)  # renewable once, up to 7 s from now
            for m in monitors:
                failed_with(m, "LOGIN_FAILED")
            assert ticket_left(ccache) == 0

            # ... and again (the fix each failure message names): each monitor scans again, same process.
            proxy = TcpProxy(("127.0.0.1", port), target).__enter__()
            (tmp_path / "elsewhere.keytab").rename(keytab)
            kinit(principals["mon-kinit"], ccache, TICKET_S, 600)
            for m in monitors:
                with diagnosed(m):
                    recovers(m)
            logs = [clean_exit(m) for m in monitors]
    finally:
        proxy.__exit__()
    cache_log, keytab_log, oauth_log = logs
    assert re.search(rf"the Kerberos ticket in FILE:{re.escape(str(ccache))} expired at \S+ and can no longer be "
                     r"renewed \(its renew limit was \S+\): run kinit", cache_log), cache_log
    assert (f"the Kerberos ticket of mon-keytab@{REALM} has expired and keyTab {keytab} cannot renew it: the file "
            "no longer exists" in keytab_log), keytab_log
    assert f"could not get a token from the OAuth token endpoint {endpoint}: [Errno 111] Connection refused" in \
        oauth_log, oauth_log
    assert "eyJ" not in oauth_log  # no token in what it printed
