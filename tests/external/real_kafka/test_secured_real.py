"""The CLI against Apache Kafka secured by Kafka's own classes: one KRaft broker whose SASL_PLAINTEXT listener
takes SASL/GSSAPI (the JDK's Krb5LoginModule, a keytab from a real MIT KDC) and SASL/OAUTHBEARER (Kafka's
OAuthBearerValidatorCallbackHandler, checking tokens of panva's oidc-provider against its JWKS, issuer and
audience), with ACLs on (StandardAuthorizer): only the principals Kafka should map the credentials to may act.

For each mechanism, with the client properties users write (`--command-config`):
- a partition-side hang (a late write after an abort) is reported by `kafka-txn find-hanging`, and by
  upstream's `TransactionsCommand` and our `kafka-transactions` given the same file;
- a wrong credential, refused by the broker itself, is one `error:` line naming the problem, no traceback, and
  writes nothing (log end offset and LSO unchanged);
- the printed abort command, run verbatim plus --yes, clears the hang (LSO == high watermark).

The hang is staged, and the offsets read with librdkafka, through the broker's PLAINTEXT listener (the harness's
own, also the inter-broker one): only the commands under test go through the secured listener.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from kafka_txn_broker.testing.scenarios import HANGING_PARTITION
from kafka_txn_tools.cli import exit_codes
from tests.broker.security.kerberos import REALM, Realm
from tests.broker.security.oidc import Provider
from tests.e2e.cli_support import ROOT, run_printed
from tests.external.real_kafka.conftest import RELEASE
from tests.support.real_kafka import KafkaCluster, UpstreamTool
from tests.support.real_kafka.cluster import EXTRA_LISTENER_HOST
from tests.support.real_kafka.staging import Release, offsets, stage

pytestmark = pytest.mark.needs("gssapi")

LISTENER = "SASL"  # the secured listener's name: its settings are listener.name.sasl.*
BACKDATE_MS = 30 * 60_000
FAST_S = 60.0  # a refused login is named at once, never after --timeout (120 s here; a loaded 2-core machine)
# The broker's Kerberos service: <sasl.kerberos.service.name>/<the host clients connect to>. A name of this module's
# own: the session's KDC may hold other tests' kafka/127.0.0.1.
SERVICE = "kafka-real"
BROKER_SERVICE = f"{SERVICE}/{EXTRA_LISTENER_HOST}"
OTHER_SERVICE = f"real-other/{EXTRA_LISTENER_HOST}"  # a service the KDC knows and the broker is not
# Kafka's OAuth callback handlers (KIP-768): 3.3.2 has them under ...oauthbearer.secured only; 3.9.2 and 4.4.0 under
# ...oauthbearer (3.9.2 keeps deprecated aliases under .secured).
OAUTH = "org.apache.kafka.common.security.oauthbearer" + ("" if Release(RELEASE).at_least(3, 4) else ".secured")


@dataclass(frozen=True)
class Secured:
    """The secured cluster, and what clients need beside their properties: the JVM options a user puts in
    KAFKA_OPTS for upstream's tool (the krb5.conf, the OAuth URLs Kafka may fetch)."""

    cluster: KafkaCluster
    upstream: UpstreamTool
    properties: dict[str, Path]  # "gssapi", "oauthbearer", "gssapi-reader", the wrong ones "<mechanism>-wrong"

    @property
    def bootstrap(self) -> str:
        return self.cluster.bootstrap(LISTENER)


def broker_config(keytab: Path, oidc: Provider) -> dict[str, str]:
    """Kafka's broker properties for both mechanisms on the one SASL_PLAINTEXT listener."""
    prefix = f"listener.name.{LISTENER.lower()}"
    return {
        "transaction.partition.verification.enable": "false",  # so that a late write hangs a partition
        "sasl.enabled.mechanisms": "GSSAPI,OAUTHBEARER",
        "sasl.kerberos.service.name": SERVICE,
        f"{prefix}.gssapi.sasl.jaas.config": (
            "com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true storeKey=true "
            f'keyTab="{keytab}" principal="{BROKER_SERVICE}@{REALM}";'),
        f"{prefix}.oauthbearer.sasl.jaas.config":
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;",
        f"{prefix}.oauthbearer.sasl.server.callback.handler.class": f"{OAUTH}.OAuthBearerValidatorCallbackHandler",
        "sasl.oauthbearer.jwks.endpoint.url": oidc.jwks_url,
        "sasl.oauthbearer.expected.issuer": oidc.issuer,  # 4.4.0 requires it (and the audience) with a JWKS URL
        "sasl.oauthbearer.expected.audience": "kafka",
        # ACLs on, and only these principals may do anything: the commands under test work only if Kafka maps the
        # Kerberos principal (real-ops@KAFKA.TEST, by the DEFAULT short-name rule) and the token's subject as
        # users expect. ANONYMOUS is the PLAINTEXT listeners' principal (controller, harness, staging).
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:ANONYMOUS;User:real-ops;User:kafka-admin",
    }


def jvm_options(realm: Realm, oidc: Provider) -> list[str]:
    # 4.4.0 fetches no OAuth URL that this system property does not allow (broker and client alike).
    return [f"-Djava.security.krb5.conf={realm.conf}",
            f"-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls={oidc.jwks_url},{oidc.token_endpoint}"]


def gssapi_properties(keytab: Path, principal: str, service: str = SERVICE) -> str:
    return ("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=GSSAPI\n"
            f"sasl.kerberos.service.name={service}\n"
            "sasl.jaas.config=com.sun.security.auth.module.Krb5LoginModule required \\\n"
            f'    useKeyTab=true storeKey=true keyTab="{keytab}" principal="{principal}";\n')


def oauth_properties(oidc: Provider, client_id: str) -> str:
    return ("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=OAUTHBEARER\n"
            f"sasl.login.callback.handler.class={OAUTH}.OAuthBearerLoginCallbackHandler\n"
            f"sasl.oauthbearer.token.endpoint.url={oidc.token_endpoint}\n"
            "sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required \\\n"
            f'    clientId="{client_id}" clientSecret="{oidc.clients[client_id].client_secret}" scope="kafka";\n')


@pytest.fixture(scope="module")
def secured(kafka_libs: Path, kdc: Realm, oidc: Provider, tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[Secured]:
    base = tmp_path_factory.mktemp("real-kafka-secured")
    broker_keytab = kdc.principal(BROKER_SERVICE)
    ops_keytab = kdc.principal("real-ops")
    reader_keytab = kdc.principal("real-reader")
    kdc.principal(OTHER_SERVICE)
    texts = {"gssapi": gssapi_properties(ops_keytab, f"real-ops@{REALM}"),
             # a ticket for another service: the KDC issues it, the broker cannot read it
             "gssapi-wrong": gssapi_properties(ops_keytab, f"real-ops@{REALM}", OTHER_SERVICE.split("/")[0]),
             "gssapi-reader": gssapi_properties(reader_keytab, f"real-reader@{REALM}"),
             "oauthbearer": oauth_properties(oidc, "kafka-admin"),
             # a token the provider signs for another audience
             "oauthbearer-wrong": oauth_properties(oidc, "other-app")}
    properties = {}
    for name, text in texts.items():
        properties[name] = base / f"{name}.properties"
        properties[name].write_text(text)
    options = jvm_options(kdc, oidc)
    cluster = KafkaCluster(kafka_libs, base / "kafka", nodes=1, config=broker_config(broker_keytab, oidc),
                           version=RELEASE, listeners={LISTENER: "SASL_PLAINTEXT"}, jvm_options=options)
    with cluster:
        yield Secured(cluster, UpstreamTool(kafka_libs, jvm_options=tuple(options)), properties)


def console(*args: str, script: str = "kafka-txn") -> subprocess.CompletedProcess[str]:
    """`kafka-txn ...` (or our `kafka-transactions ...`) as a user types it, in a process of its own (this
    checkout's code; its module where the script is not on PATH)."""
    program = shutil.which(script)
    module = {"kafka-txn": "kafka_txn_tools", "kafka-transactions": "kafka_txn_tools.cli.upstream"}[script]
    prefix = [program] if program else [sys.executable, "-c", f"import {module} as m; m.main()"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "broker")])}
    env.pop("COLUMNS", None)
    return subprocess.run([*prefix, *args], capture_output=True, text=True, env=env, timeout=180,
                          stdin=subprocess.DEVNULL)


# What Kafka's own classes answer (the CLI passes it on, and names what to check).
WRONG = {
    # Its GSSAPI server cannot decrypt a ticket for another service.
    "gssapi": "(Authentication failed during authentication due to invalid credentials with SASL mechanism GSSAPI): "
              "check the Kerberos settings: sasl.kerberos.service.name, keyTab and principal",
    # Its validator answers RFC 7628's error only; the reason (the audience) is in the broker's log.
    "oauthbearer": '({"status":"invalid_token"}): check the token\'s issuer, audience and lifetime',
}


@pytest.mark.parametrize("mechanism", ["gssapi", "oauthbearer"])
def test_a_hang_is_found_refused_with_a_wrong_credential_and_cleared_on_a_secured_broker(
        secured: Secured, mechanism: str) -> None:
    plain, bs = secured.cluster.bootstrap_servers, secured.bootstrap
    config = str(secured.properties[mechanism])
    truth = stage(plain, "late-write-after-abort", backdate_ms=BACKDATE_MS).hanging[0]
    assert truth.partition == HANGING_PARTITION

    found = console("find-hanging", "--topic", truth.topic, "-b", bs, "--command-config", config, "-o", "json")
    assert found.returncode == 0, found.stderr
    doc = json.loads(found.stdout)
    assert doc["errors"] == [] and not doc["partial"], doc
    [row] = doc["hanging"]
    assert (row["kind"], row["reason"], row["partition"], row["producer_id"], row["start_offset"]) == (
        "partition", "transaction-not-ongoing", truth.partition, truth.producer_id, truth.start_offset)
    [command] = row["commands"]
    assert f"--bootstrap-server {bs}" in command and f"--command-config {config}" in command, command

    # Upstream's own tool and our front end for its command lines take the same file, and name the same producer
    # and offset.
    line = ("--bootstrap-server", bs, "--command-config", config, "find-hanging", "--topic", truth.topic)
    for front in (secured.upstream.run(*line), console(*line, script="kafka-transactions")):
        assert front.returncode == 0, front.stderr
        rows = [row.split("\t") for row in front.stdout.splitlines()[1:] if row.strip()]
        assert [(r[0], int(r[1]), int(r[2]), int(r[5])) for r in rows] == [
            (truth.topic, truth.partition, truth.producer_id, truth.start_offset)], front.stdout

    # A wrong credential, for a read and for a write: one line naming the refusal, at once, and nothing written.
    before = offsets(plain, truth.topic, truth.partition)
    assert before.lso == truth.start_offset < before.high_watermark
    wrong = ["-b", bs, "--command-config", str(secured.properties[f"{mechanism}-wrong"]), "--timeout", "120s"]
    where = ["--topic", truth.topic, "--partition", str(truth.partition), "--start-offset", str(truth.start_offset)]
    for args in (["find-hanging", "--topic", truth.topic, *wrong], ["abort", *where, *wrong, "--yes"]):
        started = time.monotonic()
        refused = console(*args)
        took = time.monotonic() - started
        assert refused.returncode == exit_codes.ERROR, (args, refused.stdout, refused.stderr)
        assert took < FAST_S, (args, took, refused.stderr)  # the broker's answer, not --timeout running out
        assert refused.stderr.count("error: ") == 1 and "Traceback" not in refused.stdout + refused.stderr
        assert f"refused SASL/{mechanism.upper()} authentication {WRONG[mechanism]}" in refused.stderr, refused.stderr
    assert offsets(plain, truth.topic, truth.partition) == before

    # The printed command, verbatim plus --yes: one abort marker, and the LSO reaches the high watermark.
    run_printed(command)
    after = offsets(plain, truth.topic, truth.partition)
    assert after.lso == after.high_watermark == before.high_watermark + 1


def test_a_broker_given_by_its_address_is_known_by_its_host_name_to_kerberos(secured: Secured) -> None:
    """A difference: Kafka's Java client asks for the Kerberos service of the name a broker's address resolves back
    to (127.0.0.1 is localhost: the broker's own principal), so upstream's tool works given the address;
    `kafka-txn` takes the address as given, finds no such service principal, and says which name to give."""
    [port] = [node.extra_ports[LISTENER] for node in secured.cluster.nodes.values()]
    by_address, config = f"127.0.0.1:{port}", str(secured.properties["gssapi"])
    up = secured.upstream.run("--bootstrap-server", by_address, "--command-config", config, "list")
    assert up.returncode == 0, up.stderr
    ours = console("list", "-b", by_address, "--command-config", config)
    assert ours.returncode == exit_codes.ERROR and "Traceback" not in ours.stderr, ours.stderr
    assert (f"the KDC has no service principal {SERVICE}/127.0.0.1" in ours.stderr
            and "give --bootstrap-server by the name 127.0.0.1 resolves to (localhost)" in ours.stderr), ours.stderr
    assert console("list", "-b", f"localhost:{port}", "--command-config", config).returncode == 0


def grant_reader(plain: str, prefix: str) -> None:
    """real-reader may read the topics and see the transactional ids under `prefix`: not write markers (that takes
    CLUSTER_ACTION or ALTER on the cluster). Granted through the PLAINTEXT listener, with librdkafka."""
    from confluent_kafka.admin import (
        AclBinding,
        AclOperation,
        AclPermissionType,
        AdminClient,
        ResourcePatternType,
        ResourceType,
    )

    acls = [AclBinding(kind, prefix, ResourcePatternType.PREFIXED, "User:real-reader", "*", operation,
                       AclPermissionType.ALLOW)
            for kind, operation in ((ResourceType.TOPIC, AclOperation.READ),
                                    (ResourceType.TRANSACTIONAL_ID, AclOperation.DESCRIBE))]
    admin = AdminClient({"bootstrap.servers": plain})  # held until the answers are in
    for future in admin.create_acls(acls).values():
        future.result(30)


def test_acls_apply_to_the_kerberos_principals_short_name(secured: Secured) -> None:
    """real-reader@KAFKA.TEST is User:real-reader to Kafka (DEFAULT rule): with Read and Describe it finds the hang;
    its abort is refused by the broker (CLUSTER_AUTHORIZATION_FAILED), named with what it needs, and writes nothing."""
    plain, bs = secured.cluster.bootstrap_servers, secured.bootstrap
    config = str(secured.properties["gssapi-reader"])
    truth = stage(plain, "late-write-after-abort", backdate_ms=BACKDATE_MS).hanging[0]
    grant_reader(plain, "-".join(truth.topic.split("-")[:2]))  # stage()'s "real-<hex>", its txn id's start too
    found = console("find-hanging", "--topic", truth.topic, "-b", bs, "--command-config", config, "-o", "json")
    assert found.returncode == 0, found.stderr
    [row] = json.loads(found.stdout)["hanging"]
    assert (row["reason"], row["start_offset"]) == ("transaction-not-ongoing", truth.start_offset)
    before = offsets(plain, truth.topic, truth.partition)
    refused = console("abort", "--topic", truth.topic, "--partition", str(truth.partition), "--start-offset",
                      str(truth.start_offset), "-b", bs, "--command-config", config, "--yes")
    assert refused.returncode == exit_codes.ERROR and "Traceback" not in refused.stderr, refused.stderr
    assert ("CLUSTER_AUTHORIZATION_FAILED: writing transaction markers needs CLUSTER_ACTION (or ALTER) on the "
            "cluster resource") in refused.stderr, refused.stderr
    assert offsets(plain, truth.topic, truth.partition) == before
