"""Security end to end: confluent-kafka over SSL / SASL_PLAINTEXT / SASL_SSL, the kafka-txn CLI over
SASL_SSL with --command-config and profiles, secrets kept out of every output, and find-hanging's
warning when ACLs may hide transactional ids (the false "no-transactional-id" report it explains).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from typer.testing import CliRunner

from kafka_txn_broker.embedded import EmbeddedCluster
from kafka_txn_tools.cli import exit_codes
from kafka_txn_tools.cli.app import app
from tests.broker.security.support import USERS, broker_config, certificates, confluent_config
from tests.e2e.cli_support import Result

ALICE_ACLS = ["User:alice ALLOW Read Topic orders",
              "User:alice ALLOW Describe TransactionalId app- PREFIXED",
              "User:alice ALLOW Describe Cluster kafka-cluster"]


@pytest.fixture(scope="module")
def secure(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedCluster]:
    """Two SASL_SSL nodes with ACLs: admin is a super user, alice may read `orders` and see `app-*` ids."""
    cfg = broker_config("SASL_SSL", **{"authorizer.class.name": "acl", "super.users": "User:admin",
                                       "authorizer.acls": ALICE_ACLS})
    with EmbeddedCluster(nodes=2, data_dir=tmp_path_factory.mktemp("secure"), config=cfg) as c:
        c.create_topic("orders", 2, 2)
        yield c


def roundtrip(bs: str, protocol: str, user: str | None, mechanism: str, topic: str, transactional: bool) -> list[bytes]:
    extra: dict[str, Any] = {"log_level": 0}
    if transactional:
        extra["transactional.id"] = f"{topic}-txn"
    p = Producer(confluent_config(bs, protocol, user, mechanism=mechanism, **extra))
    if transactional:
        p.init_transactions(30)
        p.begin_transaction()
    for i in range(5):
        p.produce(topic, value=b"m%d" % i, partition=0)
    if transactional:
        p.commit_transaction(30)
    assert p.flush(30) == 0
    c = Consumer(confluent_config(bs, protocol, user, mechanism=mechanism, **{
        "group.id": f"{topic}-readers", "auto.offset.reset": "earliest", "isolation.level": "read_committed",
        "log_level": 0}))
    c.assign([TopicPartition(topic, 0, 0)])
    got: list[bytes] = []
    deadline = time.monotonic() + 30
    while len(got) < 5 and time.monotonic() < deadline:
        got += [m.value() for m in c.consume(10, 0.5) if m.error() is None]
    c.commit(asynchronous=False)
    c.close()
    return got


# ---- real clients ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("protocol, mechanism", [("SSL", ""), ("SASL_PLAINTEXT", "PLAIN")])
def test_confluent_kafka_over_ssl_and_sasl_plaintext(tmp_path: Path, protocol: str, mechanism: str) -> None:
    with EmbeddedCluster(nodes=1, data_dir=tmp_path, config=broker_config(protocol)) as c:
        c.create_topic("plain", 1, 1)
        user = "alice" if mechanism else None
        assert roundtrip(c.bootstrap_servers, protocol, user, mechanism, "plain", False) == [b"m%d" % i
                                                                                            for i in range(5)]


def test_confluent_kafka_transactions_over_sasl_ssl_scram_512(secure: EmbeddedCluster) -> None:
    secure.create_topic("payments", 1, 2)
    got = roundtrip(secure.bootstrap_servers, "SASL_SSL", "admin", "SCRAM-SHA-512", "payments", True)
    assert got == [b"m%d" % i for i in range(5)]


def test_confluent_kafka_wrong_password_is_rejected_clearly(secure: EmbeddedCluster) -> None:
    errors: list[Any] = []
    p = Producer(confluent_config(secure.bootstrap_servers, "SASL_SSL", "alice", "wrong-Pw1", "SCRAM-SHA-512",
                                  error_cb=errors.append, log_level=0))
    with pytest.raises(KafkaException):
        p.list_topics(timeout=2)
    p.poll(1)  # error callbacks are served by poll()
    assert errors, "librdkafka reported no error"
    text = str(errors[0])
    assert "Authentication failed: invalid credentials for SASL mechanism SCRAM-SHA-512" in text
    assert "wrong-Pw1" not in text


def test_alice_is_refused_what_her_acls_do_not_grant(secure: EmbeddedCluster) -> None:
    errors: list[Any] = []
    p = Producer(confluent_config(secure.bootstrap_servers, "SASL_SSL", "alice", error_cb=errors.append,
                                  log_level=0))
    reports: list[Any] = []
    p.produce("orders", b"x", partition=0, on_delivery=lambda err, msg: reports.append(err))
    p.flush(15)
    assert reports and reports[0] is not None and reports[0].name() == "TOPIC_AUTHORIZATION_FAILED"


# ---- the CLI ---------------------------------------------------------------------------------------------
def properties(tmp_path: Path, user: str, password: str) -> Path:
    path = tmp_path / f"{user}.properties"
    path.write_text(
        "security.protocol=SASL_SSL\n"
        "sasl.mechanism=SCRAM-SHA-512\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="{user}" password="{password}";\n'
        f"ssl.truststore.location={certificates().ca}\n")
    return path


def cli(*args: str, env: dict[str, str] | None = None) -> Result:
    r = CliRunner().invoke(app, list(args), env=env)
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise r.exception
    return Result(r.exit_code, r.stdout, r.stderr)


@pytest.fixture
def open_app_txn(secure: EmbeddedCluster) -> Iterator[Producer]:
    p = Producer(confluent_config(secure.bootstrap_servers, "SASL_SSL", "admin", **{
        "transactional.id": "app-live", "log_level": 0}))
    p.init_transactions(30)
    p.begin_transaction()
    p.produce("orders", b"open", partition=0)
    p.flush(30)
    yield p
    p.abort_transaction(30)


def test_cli_over_sasl_ssl_with_command_config(secure: EmbeddedCluster, open_app_txn: Producer,
                                               tmp_path: Path) -> None:
    bs = secure.bootstrap_servers
    admin = properties(tmp_path, "admin", USERS["admin"])
    listed = cli("list", "-b", bs, "--command-config", str(admin), "-o", "json")
    assert listed.code == 0, listed.err
    assert "app-live" in {t["transactional_id"] for t in listed.json()["transactions"]}
    producers = cli("describe-producers", "-b", bs, "--command-config", str(admin), "--topic", "orders",
                    "--partition", "0", "-o", "json")
    assert producers.code == 0, producers.err
    assert any(p["current_txn_start_offset"] >= 0 for p in producers.json()["producers"])


def test_cli_profile_reads_the_password_from_the_environment(secure: EmbeddedCluster, tmp_path: Path) -> None:
    profiles = tmp_path / "profiles.yaml"
    profiles.write_text(yaml.safe_dump({"profiles": {"secure": {
        "bootstrap_servers": secure.bootstrap_servers,
        "properties": {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-256",
                       "sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule required '
                                           'username="alice" password="${ALICE_PW}";',
                       "ssl.truststore.location": str(certificates().ca)}}}}))
    r = cli("list", "--profile", "secure", "-o", "json",
            env={"KAFKA_TXN_PROFILES": str(profiles), "ALICE_PW": USERS["alice"]})
    assert r.code == 0, r.err


def test_cli_keeps_secrets_out_of_output_and_logs(secure: EmbeddedCluster, tmp_path: Path,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    bs = secure.bootstrap_servers
    wrong = "Wrong-Secret-7f3"
    bad = cli("list", "-b", bs, "--command-config", str(properties(tmp_path, "alice", wrong)), "--timeout", "2s")
    assert bad.code == exit_codes.ERROR and bad.err.startswith("error: ")
    assert "refused SASL/SCRAM-SHA-512 authentication" in bad.err, bad.err  # says why, not just "no connection"
    assert "sasl.jaas.config" in bad.err
    good = cli("describe-producers", "-b", bs, "--command-config",
               str(properties(tmp_path, "alice", USERS["alice"])), "--topic", "orders", "-o", "json")
    assert good.code == 0, good.err
    # Passwords, and the secrets derived from them, never show.
    for secret in (wrong, USERS["alice"]):
        for where, text in (("stdout", bad.out + good.out), ("stderr", bad.err + good.err), ("logs", caplog.text)):
            assert secret not in text, f"{secret} leaked to {where}"
    assert "Authentication failed" in caplog.text  # the broker's reason reaches the client's log


def test_find_hanging_warns_that_acls_may_hide_transactional_ids(secure: EmbeddedCluster, tmp_path: Path) -> None:
    """`secret-1` is a live transaction; alice cannot DESCRIBE its id, so ListTransactions hides it and
    find-hanging (as upstream's) calls it hanging. The warning says why; the admin sees it is live."""
    p = Producer(confluent_config(secure.bootstrap_servers, "SASL_SSL", "admin", **{
        "transactional.id": "secret-1", "log_level": 0}))
    p.init_transactions(30)
    p.begin_transaction()
    p.produce("orders", b"open", partition=1)
    p.flush(30)
    time.sleep(0.05)  # the batch's timestamp must be older than --max-transaction-timeout 0
    try:
        args = ["find-hanging", "-b", secure.bootstrap_servers, "--topic", "orders", "--max-transaction-timeout",
                "0", "-o", "json"]
        as_alice = cli(*args, "--command-config", str(properties(tmp_path, "alice", USERS["alice"])))
        reasons = {(h["topic"], h["partition"]): h["reason"] for h in as_alice.json()["hanging"]}
        assert reasons.get(("orders", 1)) == "no-transactional-id"
        assert "results may be incomplete: the cluster enforces ACLs" in as_alice.err
        as_admin = cli(*args, "--command-config", str(properties(tmp_path, "admin", USERS["admin"])))
        assert as_admin.code == 0, as_admin.err
        # The admin sees it live: named as late (it holds the LSO past --max-transaction-timeout); no write, only
        # the watch that waits for it, with the admin's own connection options.
        [late] = [h for h in as_admin.json()["hanging"] if (h["topic"], h["partition"]) == ("orders", 1)]
        assert late["reason"] == "late" and len(late["commands"]) == 1
        watch = "kafka-txn find-hanging --topic orders --partition 1 --max-transaction-timeout 0ms --watch --count-held"
        assert late["commands"][0].startswith(watch)
        assert "results may be incomplete" not in as_admin.err
    finally:
        p.abort_transaction(30)


def test_the_acl_warning_is_given_only_without_evidence_that_nothing_is_hidden(secure: EmbeddedCluster,
                                                                               tmp_path: Path) -> None:
    """A whole-cluster scan could be hidden from by ACLs. The super user (in super.users, which these brokers
    reveal through DescribeConfigs) sees everything: no warning. Alice, allowed only some topics and ids, gets
    it. Neither scan finds anything, so the answer alone would not tell them apart."""
    args = ["find-hanging", "-b", secure.bootstrap_servers, "--all"]
    as_admin = cli(*args, "--command-config", str(properties(tmp_path, "admin", USERS["admin"])))
    assert as_admin.code == 0, as_admin.err
    assert "results may be incomplete" not in as_admin.err and "super user" not in as_admin.err
    as_alice = cli(*args, "--command-config", str(properties(tmp_path, "alice", USERS["alice"])))
    assert "results may be incomplete: the cluster enforces ACLs" in as_alice.err


def test_a_scenario_reaches_a_sasl_cluster_and_its_printed_command_carries_the_command_config(
        secure: EmbeddedCluster, tmp_path: Path) -> None:
    # Rehearsing on a secured cluster: `broker scenario --command-config` goes through kafka-python's TLS and SASL
    # (the properties every command takes); the finding's command names the same file, never its secret, and
    # works as printed in a process of its own.
    import json
    import shlex

    from kafka_txn_broker.testing.raw_client import RawKafkaClient
    from kafka_txn_tools.cli.commands.broker import _transport
    from tests.e2e.cli_support import run_printed

    bs = secure.bootstrap_servers
    admin = properties(tmp_path, "admin", USERS["admin"])
    unauthenticated = cli("broker", "scenario", "marker-retry-rejected", "-b", bs, "--no-healthy")
    assert unauthenticated.code == exit_codes.ERROR and "error: scenario marker-retry-rejected" in unauthenticated.err
    made = cli("broker", "scenario", "marker-retry-rejected", "-b", bs, "--command-config", str(admin),
               "--no-healthy", "--wait-seconds", "20")
    assert made.code == 0, made.err
    [truth] = json.loads(made.out)["scenarios"][0]["stuck"]
    found = cli("find-hanging", "--all", "-b", bs, "--command-config", str(admin), "--max-prepare-time", "0",
                "-o", "json")
    [row] = [r for r in found.json()["hanging"] if r.get("transactional_id") == truth["transactional_id"]]
    [command] = row["commands"]
    assert shlex.split(command) == ["kafka-txn", "move-coordinator", "--transactional-id", truth["transactional_id"],
                                    "--bootstrap-server", bs, "--command-config", str(admin.resolve())]
    assert USERS["admin"] not in found.out + found.err
    # Switched off as an upgrade would (over SASL_SSL too), the printed command clears it.
    with RawKafkaClient(bs, transport=_transport(bs, admin)) as raw:
        assert raw.set_broker_configs({"fault.injection": ""})[0] == 0
    assert run_printed(command).returncode == 0
    again = cli("find-hanging", "--all", "-b", bs, "--command-config", str(admin), "--max-prepare-time", "0",
                "-o", "json")
    assert [r for r in again.json()["hanging"] if r.get("transactional_id") == truth["transactional_id"]] == []
