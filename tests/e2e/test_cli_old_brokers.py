"""Brokers without the KIP-664 admin APIs: Tansu (a Rust broker nobody here wrote), and the embedded broker
advertising the API versions of older and newer Apache Kafka releases (`kafka.version.emulate`).

Which command works where follows from when Kafka added each API (KIP-664: DescribeProducers in 2.8,
ListTransactions and DescribeTransactions in 3.0; ListTransactions v1 with the duration filter in 3.8
(KIP-994) and v2 with the id pattern in 4.1 (KIP-1152)), not from the broker's own tables. A missing
API is one exit code (6) and a message naming it, at once; writes that cannot be validated are
refused unless forced, and a refusal writes nothing.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from kafka_txn_broker import EmbeddedCluster
from kafka_txn_broker.testing.scenarios import ScenarioOptions, run_scenario
from kafka_txn_tools.cli import exit_codes
from tests.e2e.cli_support import invoke_printed, kafka_transactions, kafka_txn, log_offsets, open_transaction
from tests.e2e.tansu import Tansu

# Apache Kafka facts: the release that added each API.
SINCE = {"DescribeProducers": (2, 8), "ListTransactions": (3, 0), "DescribeTransactions": (3, 0)}
# (command, the APIs it needs)
COMMANDS = [
    (["list"], ["ListTransactions"]),
    (["describe", "--all"], ["DescribeTransactions", "ListTransactions"]),
    (["describe-producers", "--all"], ["DescribeProducers"]),
    (["find-hanging", "--all"], ["DescribeProducers", "ListTransactions", "DescribeTransactions"]),
]


def release_tuple(release: str) -> tuple[int, int]:
    major, minor = release.split(".")
    return int(major), int(minor)


# ---- Tansu -------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tansu_topic(tansu: Tansu) -> Iterator[str]:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": tansu.bootstrap_servers})
    for future in admin.create_topics([NewTopic("orders", 1, 1)]).values():
        future.result(30)
    producer = open_transaction(tansu.bootstrap_servers, "app", "orders", [0])
    yield tansu.bootstrap_servers
    del producer


@pytest.mark.parametrize("args, api", [
    (["list"], "ListTransactions"),
    (["describe", "-t", "app"], "DescribeTransactions"),
    (["describe", "--all"], "DescribeTransactions"),
    (["describe-producers", "--topic", "orders"], "DescribeProducers"),
    (["find-hanging", "--all"], "DescribeProducers"),
    (["dump", "--all", "--out", "{tmp}/dump"], "DescribeProducers"),
    (["abort", "--topic", "orders", "--partition", "0", "--start-offset", "0", "--yes"], "WriteTxnMarkers"),
    (["abort", "--topic", "orders", "--partition", "0", "--producer-id", "0", "--producer-epoch", "0",
      "--coordinator-epoch", "0", "--yes", "--force"], "WriteTxnMarkers"),
    (["force-terminate", "-t", "app", "--yes"], "DescribeTransactions"),
])
def test_tansu_every_command_names_the_missing_api_at_once(tansu_topic: str, tmp_path: Path, args: list[str],
                                                           api: str) -> None:
    before = log_offsets(tansu_topic, "orders", 0)
    started = time.monotonic()
    r = kafka_txn(tansu_topic, *[a.replace("{tmp}", str(tmp_path)) for a in args])
    assert r.code == exit_codes.UNSUPPORTED, r.err
    assert f"the cluster does not support {api}" in r.err and r.err.count("error:") == 1
    assert time.monotonic() - started < 15  # never a wait for the 20 s --timeout, never "stopped answering"
    assert "stopped answering" not in r.err and "scanned" not in r.out and r.out == ""
    assert log_offsets(tansu_topic, "orders", 0) == before


@pytest.mark.parametrize("args, message", [
    (["list"], "Failed to list transactions: The broker does not support ListTransactions."),
    (["describe-producers", "--topic", "orders", "--partition", "0"],
     "Failed to describe producers for partition orders-0 on leader: The broker does not support DescribeProducers."),
    (["find-hanging", "--topic", "orders"],
     "Failed to find hanging transactions: The broker does not support DescribeProducers."),
    (["abort", "--topic", "orders", "--partition", "0", "--start-offset", "0"],
     "Failed to validate producer state for partition orders-0: The broker does not support WriteTxnMarkers."),
    (["forceTerminateTransaction", "--transactionalId", "app"],
     "Refusing to force terminate transactionalId `app`: it cannot be validated: the broker does not support "
     "DescribeTransactions. To fence it anyway: kafka-txn force-terminate --transactional-id app --force"),
])
def test_tansu_kafka_transactions_fails_in_upstream_style(tansu_topic: str, args: list[str], message: str) -> None:
    r = kafka_transactions(tansu_topic, *args)
    assert (r.code, r.out) == (1, "")
    assert r.err.startswith(message), r.err


def test_tansu_force_terminate_has_a_forced_path(tansu_topic: str) -> None:
    r = kafka_txn(tansu_topic, "force-terminate", "-t", "app", "--force", "--yes", "-o", "json")
    assert r.code == 0, r.err
    assert "not validated: the cluster does not support DescribeTransactions" in r.err
    assert r.json()["fenced"][0]["result"] == "fenced"


def test_tansu_proves_no_acls_so_no_acl_warning_is_claimed(tansu_topic: str) -> None:
    from kafka_txn_tools.admin.acl_probe import acls_enforced
    from kafka_txn_tools.connection.client import AdminClient
    from kafka_txn_tools.connection.config import ClientSettings

    with AdminClient(ClientSettings(bootstrap_servers=tansu_topic)) as client:
        assert acls_enforced(client) is not True


# ---- emulated Apache Kafka releases ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(nodes=1, data_dir=tmp_path_factory.mktemp("kafka"),
                         config={"transaction.partition.verification.enable": False}) as c:
        yield c


@contextmanager
def emulating(cluster: EmbeddedCluster, release: str) -> Iterator[str]:
    """The node advertises `release`'s API versions to every new connection, then everything again."""
    assert cluster.cluster is not None
    node = cluster.cluster.live_node(0)
    assert node is not None
    cluster.call_soon(node.config.set, "kafka.version.emulate", release)  # on the loop that owns the node
    try:
        yield cluster.bootstrap_servers
    finally:
        cluster.call_soon(node.config.set, "kafka.version.emulate", "")


def hanging(cluster: EmbeddedCluster) -> tuple[str, int, int, int, int]:
    """A fresh hanging transaction, made before emulation: (topic, partition, producer id, epoch, start offset)."""
    [result] = run_scenario("late-write-after-abort", cluster.bootstrap_servers,
                            ScenarioOptions(backdate_ms=30 * 60_000, healthy=False, replication_factor=1))
    h = result.hanging[0]
    return h.topic, h.partition, h.producer_id, h.producer_epoch, h.start_offset


RELEASES = ["2.7", "2.8", "3.0", "3.8", "4.0", "4.1"]


@pytest.mark.parametrize("release", RELEASES)
def test_each_command_works_exactly_where_its_apis_exist(cluster: EmbeddedCluster, release: str) -> None:
    with emulating(cluster, release) as bs:
        for args, apis in COMMANDS:
            missing = [a for a in apis if release_tuple(release) < SINCE[a]]
            r = kafka_txn(bs, *args, "-o", "json")
            if missing:
                assert r.code == exit_codes.UNSUPPORTED, (args, r.err)
                assert f"does not support {missing[0]}" in r.err or f"does not support {missing[-1]}" in r.err
            else:
                assert r.code == exit_codes.OK, (args, r.err)


@pytest.mark.parametrize("release, warned", [("3.0", "duration, pattern"), ("3.8", "pattern"), ("4.1", None)])
def test_list_filters_fall_back_on_brokers_without_them(cluster: EmbeddedCluster, release: str,
                                                        warned: str | None) -> None:
    with emulating(cluster, release) as bs:
        r = kafka_txn(bs, "list", "--min-duration", "1s", "--transactional-id-pattern", "scenario-.*", "-o", "json")
    assert r.code == exit_codes.OK, r.err
    if warned:
        assert f"filtered client-side ({warned})" in r.err
    else:
        assert "client-side" not in r.err


@pytest.mark.parametrize("release", ["2.7", "2.8"])
def test_an_abort_that_cannot_be_validated_needs_force_and_a_refusal_writes_nothing(
        cluster: EmbeddedCluster, release: str) -> None:
    topic, part, pid, epoch, start = hanging(cluster)
    legacy = ["abort", "--topic", topic, "--partition", str(part), "--producer-id", str(pid), "--producer-epoch",
              str(epoch), "--coordinator-epoch", "-1"]
    by_offset = ["abort", "--topic", topic, "--partition", str(part), "--start-offset", str(start)]
    with emulating(cluster, release) as bs:
        before = log_offsets(bs, topic, part)
        assert before[1] == start  # the hang holds the LSO
        if release == "2.7":  # no DescribeProducers: the start offset cannot even be found
            r = kafka_txn(bs, *by_offset, "--yes")
            assert r.code == exit_codes.UNSUPPORTED
            assert "--producer-id, --producer-epoch and --coordinator-epoch" in r.err
        args = legacy if release == "2.7" else by_offset
        refused = kafka_txn(bs, *args, "--yes")  # --yes is not a person's confirmation
        assert refused.code == exit_codes.ERROR, refused.err
        assert "cannot be validated" in refused.err and "pass --force" in refused.err
        upstream = kafka_transactions(bs, *args)
        assert upstream.code == 1 and "To abort it anyway: kafka-txn abort" in upstream.err
        override = upstream.err.rstrip().split("To abort it anyway: ", 1)[1]
        assert override.endswith(f"--force --bootstrap-server {bs}")
        assert log_offsets(bs, topic, part) == before
        # The override as printed (plus --yes: no terminal here) is accepted and aborts it.
        forced = invoke_printed(override, "--yes", "-o", "json")
        assert forced.code == 0, forced.err
        assert "not validated" in forced.err and forced.json()["aborts"][0]["result"] == "aborted"
        end, stable = log_offsets(bs, topic, part)
    assert end == before[0] + 1 and stable == end  # exactly one marker, and the LSO moved past the hang


@pytest.mark.parametrize("release", ["3.0", "3.8", "4.0", "4.1"])
def test_a_validated_abort_goes_through_on_releases_with_the_apis(cluster: EmbeddedCluster, release: str) -> None:
    topic, part, _pid, _epoch, start = hanging(cluster)
    with emulating(cluster, release) as bs:
        before = log_offsets(bs, topic, part)
        r = kafka_transactions(bs, "abort", "--topic", topic, "--partition", str(part), "--start-offset", str(start))
        assert (r.code, r.out, r.err) == (0, "", "")  # upstream's silence for a hanging transaction
        end, stable = log_offsets(bs, topic, part)
    assert end == before[0] + 1 and stable == end
