"""Authenticated clusters with real incidents, for the GSSAPI and OAUTHBEARER end-to-end tests.

`incident_on_disk` makes hanging transactions the way they happen (kafka_txn_broker.testing.scenarios, on a
plaintext cluster), then the cluster is started again from the same log dirs with SASL_SSL: the operator
meets an incident on an authenticated cluster. The broker also enables SCRAM-SHA-512 for `admin`, which
the test's own checks use (confluent-kafka has no GSSAPI here).

The CLI runs in-process (`cli`) with the environment restored afterwards: a Kerberos login sets
KRB5CCNAME/KRB5_CLIENT_KTNAME in the process, as it would in a real run of the command.
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from kafka_txn_broker import EmbeddedCluster
from kafka_txn_broker.testing.scenarios import HangingTransaction, ScenarioOptions, run_scenario
from tests.broker.security.support import USERS, certificates, confluent_config
from tests.e2e.cli_support import ZOMBIE_TIMEOUT_MS, Result

BACKDATE_MS = 30 * 60_000
# As Kafka before 3.6 (no partition verification): the only way these incidents happen.
BASE = {"transaction.partition.verification.enable": False, "offsets.topic.num.partitions": 1,
        "transaction.state.log.num.partitions": 1}


def incident_on_disk(data_dir: Path, count: int) -> list[HangingTransaction]:
    """`count` hanging transactions (a client wrote to a partition it never added, then committed), each on a
    topic of its own, left in `data_dir` by a plaintext one-node cluster that is then stopped."""
    hanging: list[HangingTransaction] = []
    with EmbeddedCluster(nodes=1, data_dir=data_dir, config=BASE) as c:
        for i in range(count):
            options = ScenarioOptions(topic_prefix=f"orders{i}", backdate_ms=BACKDATE_MS, healthy=False,
                                      zombie_timeout_ms=ZOMBIE_TIMEOUT_MS, replication_factor=1)
            [result] = run_scenario("unregistered-partition-commit", c.bootstrap_servers, options)
            hanging += result.hanging
    return hanging


def secure_config(**extra: Any) -> dict[str, Any]:
    """SASL_SSL with the test certificates; SCRAM-SHA-512 for `admin` besides the mechanism under test."""
    return {**BASE, "security.protocol": "SASL_SSL", "ssl.keystore.location": str(certificates().server),
            "sasl.users": [f"admin:{USERS['admin']}"], "authorizer.class.name": "acl", **extra}


def cli(front: str, bootstrap: str, *args: str, config: Path | None = None) -> Result:
    """`kafka-txn ...` or `kafka-transactions ...` with --bootstrap-server and --command-config, in-process."""
    saved = dict(os.environ)
    try:
        if front == "kafka-txn":
            from kafka_txn_tools.cli.app import app

            extra = ["--command-config", str(config)] if config else []
            r = CliRunner().invoke(app, [*args, "--bootstrap-server", bootstrap, *extra, "--timeout", "30s"])
            if r.exception is not None and not isinstance(r.exception, SystemExit):
                raise r.exception
            return Result(r.exit_code, r.stdout, r.stderr)
        from kafka_txn_tools.cli.upstream import run

        out, err = io.StringIO(), io.StringIO()
        extra = ["--command-config", str(config)] if config else []
        code = run(["--bootstrap-server", bootstrap, *extra, *args], out, err)
        return Result(code, out.getvalue(), err.getvalue())
    finally:
        os.environ.clear()
        os.environ.update(saved)


def offsets(bootstrap: str, h: HangingTransaction) -> tuple[int, int]:
    """(log end offset, last stable offset) of the hanging transaction's partition, read as `admin` (SCRAM):
    the high watermark as a read_uncommitted and as a read_committed consumer see it (ListOffsets)."""
    from confluent_kafka import Consumer
    from confluent_kafka import TopicPartition as CTopicPartition

    ends = []
    for isolation in ("read_uncommitted", "read_committed"):
        c = Consumer(confluent_config(bootstrap, "SASL_SSL", "admin", **{
            "group.id": "offsets", "isolation.level": isolation, "log_level": 0}))
        try:
            ends.append(c.get_watermark_offsets(CTopicPartition(h.topic, h.partition), timeout=30)[1])
        finally:
            c.close()
    return ends[0], ends[1]


def audit_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


DOC = Path(__file__).resolve().parents[2] / "docs" / "security-auth.md"


def doc_block(name: str, replacements: dict[str, str]) -> str:
    """The code block of docs/security-auth.md marked `<!-- test: name -->`, with its placeholders replaced:
    the tests run exactly what the page tells users to write."""
    text = DOC.read_text()
    marker = f"<!-- test: {name} -->\n```"
    start = text.index(marker) + len(marker)
    body = text[text.index("\n", start) + 1:text.index("\n```", start)] + "\n"
    for placeholder, value in replacements.items():
        assert placeholder in body, f"{placeholder!r} is not in the block {name} of {DOC.name}"
        body = body.replace(placeholder, value)
    return body


def broker_block(name: str, replacements: dict[str, str]) -> dict[str, Any]:
    import yaml

    data = yaml.safe_load(doc_block(name, replacements))
    assert isinstance(data, dict)
    return data


def every_command(bs: str, config: Path, hangs: list[HangingTransaction], audit: Path, principal: str) -> None:
    """find-hanging, describe and abort with both front ends over one --command-config: each finds, shows and
    clears exactly the real incident, and the audit log names the authenticated principal and the OS user."""
    from kafka_txn_tools.admin.audit import os_user

    truth = {(h.topic, h.partition, h.start_offset) for h in hangs}
    found = cli("kafka-txn", bs, "find-hanging", "--all", "-o", "json", config=config)
    assert found.code == 0, found.err
    assert {(r["topic"], r["partition"], r["start_offset"]) for r in found.json()["hanging"]} == truth
    upstream = cli("kafka-transactions", bs, "find-hanging", "--broker-id", "0", config=config)
    assert upstream.code == 0, upstream.err
    rows = [line.split("\t") for line in upstream.out.splitlines()[1:]]
    assert {(r[0], int(r[1]), int(r[5])) for r in rows} == truth

    first, second = hangs[0], hangs[1]
    described = cli("kafka-txn", bs, "describe", "--transactional-id", first.transactional_id, "-o", "json",
                    config=config)
    assert described.code == 0, described.err
    assert described.json()["transactions"][0]["state"] == first.coordinator_state
    upstream = cli("kafka-transactions", bs, "describe", "--transactional-id", first.transactional_id, config=config)
    assert upstream.code == 0, upstream.err
    assert upstream.out.splitlines()[1].split("\t")[4].strip() == first.coordinator_state

    for front, h in (("kafka-transactions", first), ("kafka-txn", second)):
        end, stable = offsets(bs, h)
        assert stable == h.start_offset < end  # held back by the hanging transaction
        where = ["--topic", h.topic, "--partition", str(h.partition), "--start-offset", str(h.start_offset)]
        aborted = cli(front, bs, "abort", *where, *(["--yes"] if front == "kafka-txn" else []), config=config)
        assert aborted.code == 0, aborted.err
        assert offsets(bs, h) == (end + 1, end + 1)  # one ABORT marker; the LSO passes it
    records = [(r["command"], r["result"], r["user"], r["principal"]) for r in audit_lines(audit)]
    assert records[-2:] == [("kafka-transactions abort", "aborted", os_user(), principal),
                            ("kafka-txn abort", "aborted", os_user(), principal)]


def rehearse(bs: str, config: Path) -> None:
    """A rehearsal on the authenticated cluster itself: `broker scenario` makes a hanging transaction through
    the same --command-config every command takes, find-hanging (as that principal) finds it, and its printed
    command, run exactly as printed plus --yes in a process of its own, frees the partition's LSO."""
    from kafka_txn_tools.cli.app import app
    from tests.e2e.cli_support import run_printed

    saved = dict(os.environ)  # reading the properties points this process's Kerberos library at their keytab
    try:
        made = CliRunner().invoke(app, ["broker", "scenario", "unregistered-partition-commit", "-b", bs,
                                        "--command-config", str(config), "--no-healthy", "--topic-prefix",
                                        "rehearsal", "--backdate-minutes", str(BACKDATE_MS / 60_000)])
    finally:
        os.environ.clear()
        os.environ.update(saved)
    assert made.exit_code == 0, made.stderr
    [hang] = [HangingTransaction(**h) for h in json.loads(made.stdout)["scenarios"][0]["hanging"]]
    found = cli("kafka-txn", bs, "find-hanging", "--topic", hang.topic, "-o", "json", config=config)
    assert found.code == 0, found.err
    [row] = [r for r in json.loads(found.out)["hanging"] if r["start_offset"] == hang.start_offset]
    assert offsets(bs, hang)[1] == hang.start_offset  # held
    for command in row["commands"]:
        run_printed(command)
    end, stable = offsets(bs, hang)
    assert stable == end  # the LSO moved past the hang
