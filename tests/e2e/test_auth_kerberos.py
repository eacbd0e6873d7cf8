"""Kerberos end to end: a real MIT KDC, the embedded broker on SASL_SSL with GSSAPI (docs/security-auth.md's
broker block), and both CLIs with the page's client properties: a keytab, and a ticket cache after kinit.

Every command finds and clears a real incident; ACLs apply to the Kerberos principal's short name; the
audit log records the principal; each Kerberos failure is one `error:` line, at once.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafka_txn_broker import EmbeddedCluster
from kafka_txn_broker.testing.scenarios import HangingTransaction
from kafka_txn_tools.cli import exit_codes
from tests.broker.security.kerberos import REALM, Realm
from tests.broker.security.support import certificates
from tests.e2e.auth_support import (
    audit_lines,
    broker_block,
    cli,
    doc_block,
    every_command,
    incident_on_disk,
    offsets,
    rehearse,
    secure_config,
)

pytestmark = pytest.mark.needs("gssapi")

FAST_S = 20.0  # one round trip to the KDC and one to the broker, on a loaded 2-core machine


@pytest.fixture(scope="module")
def keytabs(kdc: Realm) -> dict[str, Path]:
    # other/127.0.0.1: a service of the broker's host that the KDC knows and the broker is not
    names = ("kafka/127.0.0.1", "alice", "bob", "carol", "ghost", "other/127.0.0.1")
    tabs = {name: kdc.principal(name) for name in names}
    kdc.rekey("carol")   # carol's keytab now holds an old key
    kdc.delete("ghost")  # the KDC no longer knows ghost, whose keytab remains
    return tabs


@pytest.fixture(scope="module")
def incident(tmp_path_factory: pytest.TempPathFactory, keytabs: dict[str, Path]
             ) -> Iterator[tuple[EmbeddedCluster, list[HangingTransaction]]]:
    data = tmp_path_factory.mktemp("kerberos")
    hangs = incident_on_disk(data, 3)
    cfg = secure_config(**broker_block("gssapi-broker", {
        "/etc/kafka/broker.pem": str(certificates().server),
        "/etc/security/keytabs/kafka.keytab": str(keytabs["kafka/127.0.0.1"]),
        "broker1.example.com": "127.0.0.1", "EXAMPLE.COM": REALM, "User:ops": "User:alice"}))
    cfg["sasl.enabled.mechanisms"] += ",SCRAM-SHA-512"  # the tests' own checks log in as admin with SCRAM
    cfg["super.users"] += ";User:admin"
    cfg["authorizer.acls"] = ["User:bob ALLOW Read Topic orders PREFIXED",
                              "User:bob ALLOW Describe TransactionalId orders PREFIXED"]
    with EmbeddedCluster(nodes=1, data_dir=data, config=cfg) as c:
        yield c, hangs


def keytab_properties(tmp_path: Path, keytab: Path, principal: str, service: str = "kafka") -> Path:
    text = doc_block("gssapi-client-keytab", {
        "/etc/security/keytabs/ops.keytab": str(keytab), "ops@EXAMPLE.COM": principal,
        "/etc/kafka/ca.pem": str(certificates().ca)})
    path = tmp_path / f"{principal.split('@')[0]}-{service}.properties"
    path.write_text(text.replace("sasl.kerberos.service.name=kafka", f"sasl.kerberos.service.name={service}"))
    return path


def test_every_command_of_both_front_ends_with_a_keytab(incident: tuple[EmbeddedCluster, list[HangingTransaction]],
                                                        keytabs: dict[str, Path], tmp_path: Path,
                                                        _private_audit_log: Path) -> None:
    cluster, hangs = incident
    config = keytab_properties(tmp_path, keytabs["alice"], f"alice@{REALM}")
    every_command(cluster.bootstrap_servers, config, hangs, _private_audit_log, f"alice@{REALM}")


def test_a_rehearsal_runs_on_the_kerberos_cluster(incident: tuple[EmbeddedCluster, list[HangingTransaction]],
                                                  keytabs: dict[str, Path], tmp_path: Path) -> None:
    cluster, _ = incident
    rehearse(cluster.bootstrap_servers, keytab_properties(tmp_path, keytabs["alice"], f"alice@{REALM}"))


def test_acls_apply_to_the_kerberos_principal(incident: tuple[EmbeddedCluster, list[HangingTransaction]],
                                              keytabs: dict[str, Path], tmp_path: Path,
                                              _private_audit_log: Path) -> None:
    """bob@KAFKA.TEST is User:bob: he may read the topics and see the transactional ids, not write markers (that
    takes ALTER or CLUSTER_ACTION on the cluster). Nothing is written."""
    cluster, hangs = incident
    h, bs = hangs[2], cluster.bootstrap_servers
    config = keytab_properties(tmp_path, keytabs["bob"], f"bob@{REALM}")
    before = offsets(bs, h)
    where = ["--topic", h.topic, "--partition", str(h.partition), "--start-offset", str(h.start_offset)]
    refused = cli("kafka-txn", bs, "abort", *where, "--yes", "-o", "json", config=config)
    assert refused.code == exit_codes.ERROR and "CLUSTER_AUTHORIZATION_FAILED: writing transaction markers needs " \
        "CLUSTER_ACTION (or ALTER) on the cluster resource" in refused.err, refused.err
    upstream = cli("kafka-transactions", bs, "abort", *where, config=config)
    assert upstream.code == 1 and "not authorized to use an inter-broker or administrative API" in upstream.err
    assert offsets(bs, h) == before
    assert [r["principal"] for r in audit_lines(_private_audit_log)[-2:]] == [f"bob@{REALM}"] * 2


def console(script: str, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The console script as a user types it (its module when the script is not on PATH)."""
    path = shutil.which(script)
    module = {"kafka-txn": "kafka_txn_tools", "kafka-transactions": "kafka_txn_tools.cli.upstream"}[script]
    command = [path] if path else [sys.executable, "-c", f"import {module} as m; m.main()"]
    return subprocess.run([*command, *args], capture_output=True, text=True, timeout=120, env=env)


def test_a_ticket_cache_after_kinit(incident: tuple[EmbeddedCluster, list[HangingTransaction]], kdc: Realm,
                                    keytabs: dict[str, Path], tmp_path: Path) -> None:
    cluster, hangs = incident
    bs = cluster.bootstrap_servers
    config = tmp_path / "kinit.properties"
    config.write_text(doc_block("gssapi-client-ticket-cache", {"/etc/kafka/ca.pem": str(certificates().ca)}))
    ccache = tmp_path / "alice.ccache"
    env = {**os.environ, "KRB5CCNAME": f"FILE:{ccache}"}
    none = console("kafka-transactions", "--bootstrap-server", bs, "--command-config", str(config), "find-hanging",
                   "--broker-id", "0", env=env)
    assert none.returncode == 1 and f"no Kerberos ticket in FILE:{ccache}" in none.stderr, none.stderr
    assert "Traceback" not in none.stderr
    kdc.kinit("alice", keytabs["alice"], ccache)
    found = console("kafka-transactions", "--bootstrap-server", bs, "--command-config", str(config), "find-hanging",
                    "--broker-id", "0", env=env)
    assert found.returncode == 0, found.stderr
    assert hangs[2].topic in found.stdout  # the one the tests above leave hanging
    described = console("kafka-txn", "describe", "--all", "-b", bs, "--command-config", str(config), "-o", "json",
                        env=env)
    assert described.returncode == 0 and hangs[2].transactional_id in described.stdout, described.stderr


def failing(bs: str, config: Path) -> tuple[str, float]:
    """find-hanging's error and how long it took."""
    started = time.monotonic()
    r = cli("kafka-txn", bs, "find-hanging", "--all", config=config)
    took = time.monotonic() - started
    assert r.code in (exit_codes.ERROR, exit_codes.USAGE), (r.code, r.err)
    assert r.err.count("error: ") == 1 and "Traceback" not in r.err + r.out, r.err
    return r.err, took


@pytest.mark.parametrize("case, expected", [
    ("wrong keytab", "keyTab {keytab} holds no key for alice@KAFKA.TEST (it holds: bob@KAFKA.TEST)"),
    ("stale keytab", "the KDC refused the key of carol@KAFKA.TEST in keyTab {keytab}: the keytab is out of date"),
    ("unknown principal", "the KDC does not know principal ghost@KAFKA.TEST"),
    ("service the KDC lacks", "the KDC has no service principal kafka-prod/127.0.0.1 "
                              "(sasl.kerberos.service.name=kafka-prod, broker host 127.0.0.1)"),
    ("service the broker lacks", "refused SASL/GSSAPI authentication (Authentication failed: the client's ticket "
                                 "is for other/127.0.0.1@KAFKA.TEST, but this broker is kafka/127.0.0.1@KAFKA.TEST"),
])
def test_each_kerberos_failure_is_one_line_at_once(incident: tuple[EmbeddedCluster, list[HangingTransaction]],
                                                   keytabs: dict[str, Path], tmp_path: Path, case: str,
                                                   expected: str) -> None:
    principal, keytab, service = {
        "wrong keytab": ("alice", "bob", "kafka"), "stale keytab": ("carol", "carol", "kafka"),
        "unknown principal": ("ghost", "ghost", "kafka"), "service the KDC lacks": ("alice", "alice", "kafka-prod"),
        "service the broker lacks": ("alice", "alice", "other"),
    }[case]
    config = keytab_properties(tmp_path, keytabs[keytab], f"{principal}@{REALM}", service)
    err, took = failing(incident[0].bootstrap_servers, config)
    assert expected.format(keytab=keytabs[keytab]) in err and took < FAST_S


@pytest.mark.needs("faketime")  # shifts the KDC's clock
def test_clock_skew_is_named(incident: tuple[EmbeddedCluster, list[HangingTransaction]], kdc: Realm,
                             keytabs: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A KDC 10 minutes behind: MIT's client sets its clock by the KDC's, so its authenticator is 10 minutes old
    by the broker's clock, beyond Kerberos' 5 minutes; the broker says so and the CLI passes it on."""
    proc, conf = kdc.shifted_kdc("-10m")
    try:
        monkeypatch.setenv("KRB5_CONFIG", str(conf))
        config = keytab_properties(tmp_path, keytabs["alice"], f"alice@{REALM}")
        err, took = failing(incident[0].bootstrap_servers, config)
    finally:
        proc.terminate()
        proc.wait(10)
    assert "clock skew too great between the client and the broker" in err and took < FAST_S
