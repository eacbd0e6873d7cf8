"""The demo on a secured cluster: `kafka-txn demo --config broker.yaml --command-config client.properties` with
docs/security-auth.md's Kerberos and OAuth blocks. The incident is found and cleared with the operator's
properties, every printed command carries them, and the audit log names the operator's principal."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from kafka_txn_tools.cli import exit_codes
from kafka_txn_tools.cli.app import app
from tests.broker.security.kerberos import REALM, Realm
from tests.broker.security.oidc import Provider
from tests.broker.security.support import certificates
from tests.e2e.auth_support import audit_lines, doc_block
from tests.support.tiers import require


def run_demo(tmp_path: Path, broker_yaml: str, client_properties: str) -> tuple[str, Path]:
    broker, client = tmp_path / "broker.yaml", tmp_path / "client.properties"
    broker.write_text(broker_yaml)
    client.write_text(client_properties)
    r = CliRunner().invoke(app, ["demo", "--data-dir", str(tmp_path / "demo"), "--config", str(broker),
                                 "--command-config", str(client), "--no-sweep"])
    assert r.exit_code == 0, r.stdout + r.stderr
    text = r.stdout
    assert "a read_committed consumer got 0 of them: it is stalled" in text
    assert "the consumer resumed and read 10 committed records" in text
    assert "find-hanging again: 0 hanging" in text
    commands = [line for line in text.splitlines() if line.strip().startswith("$ kafka-txn")]
    assert commands and all(f"--command-config {client}" in c for c in commands)
    return text, client


def test_the_demo_with_kerberos(kdc: Realm, tmp_path: Path, _private_audit_log: Path) -> None:
    require("gssapi")
    broker_keytab, ops_keytab = kdc.principal("kafka/127.0.0.1"), kdc.principal("ops")
    broker = doc_block("gssapi-broker", {
        "/etc/kafka/broker.pem": str(certificates().server), "/etc/security/keytabs/kafka.keytab": str(broker_keytab),
        "broker1.example.com": "127.0.0.1", "EXAMPLE.COM": REALM})
    client = doc_block("gssapi-client-keytab", {
        "/etc/security/keytabs/ops.keytab": str(ops_keytab), "EXAMPLE.COM": REALM,
        "/etc/kafka/ca.pem": str(certificates().ca)})
    before = len(audit_lines(_private_audit_log))  # the log is the session's
    run_demo(tmp_path, broker, client)
    aborts = [r for r in audit_lines(_private_audit_log)[before:] if r["command"] == "kafka-txn abort"]
    assert aborts and {r["principal"] for r in aborts} == {f"ops@{REALM}"}


def test_the_demo_with_oauth(oidc: Provider, tmp_path: Path, _private_audit_log: Path) -> None:
    broker = doc_block("oauth-broker", {
        "/etc/kafka/broker.pem": str(certificates().server), "https://idp.example.com/jwks": oidc.jwks_url,
        "https://idp.example.com": oidc.issuer, "User:kafka-ops": "User:kafka-admin"})
    client = doc_block("oauth-client", {
        "https://idp.example.com/token": oidc.token_endpoint, "kafka-ops": "kafka-admin",
        "change-me": oidc.clients["kafka-admin"].client_secret, "/etc/kafka/ca.pem": str(certificates().ca)})
    before = len(audit_lines(_private_audit_log))  # the log is the session's
    run_demo(tmp_path, broker, client)
    aborts = [r for r in audit_lines(_private_audit_log)[before:] if r["command"] == "kafka-txn abort"]
    assert aborts and {r["principal"] for r in aborts} == {"kafka-admin"}


def test_config_and_command_config_go_together_and_are_checked_first(tmp_path: Path) -> None:
    r = CliRunner().invoke(app, ["demo", "--command-config", str(tmp_path / "client.properties")])
    assert r.exit_code == exit_codes.USAGE and "--config and --command-config go together" in r.stderr
    broker, client = tmp_path / "broker.yaml", tmp_path / "client.properties"
    broker.write_text(doc_block("gssapi-broker", {"/etc/security/keytabs/kafka.keytab": str(tmp_path / "gone"),
                                                  "/etc/kafka/broker.pem": str(certificates().server)}))
    client.write_text("security.protocol=SASL_SSL\n")
    r = CliRunner().invoke(app, ["demo", "--config", str(broker), "--command-config", str(client)])
    assert r.exit_code == exit_codes.USAGE, r.stdout + r.stderr
    assert r.stderr == (f"error: {broker}: listener.name.sasl_ssl.gssapi.sasl.jaas.config: keyTab {tmp_path / 'gone'} "
                        "does not exist\n")
    assert r.stdout == ""  # nothing started
