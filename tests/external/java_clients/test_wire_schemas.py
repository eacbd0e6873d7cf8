"""The broker's own JSON message definitions (the APIs kafka-python lacks: share groups, KIP-848's
consumer-group APIs) against the newest release's Java client: every version's wire layout, field by field, as
the client's generated `XxxData.SCHEMAS[v]` prints it (read through jshell from the release's jars; no Java
file is ours). ShareFetch v2 lacked IsRenewAck until this compared them."""

from __future__ import annotations

import shutil
import subprocess

import pytest

import kafka_txn_broker.formats.messages as messages
from tests.external.java_clients.conftest import SUPPORTED, libs_of
from tests.external.java_clients.schemas import layout, render

# The newest release the suite knows, whatever KAFKA_TXN_KAFKA_RELEASE says: the layouts of its client are the
# newest versions of each message, which the broker advertises.
NEWEST = SUPPORTED[0]

# Ours, minus KIP-1289's TxnShareAcknowledge (no release has it yet).
MESSAGES = [f"{api}{kind}" for api in ("ShareGroupHeartbeat", "ShareGroupDescribe", "ShareFetch", "ShareAcknowledge",
                                       "DescribeShareGroupOffsets", "AlterShareGroupOffsets",
                                       "DeleteShareGroupOffsets", "ConsumerGroupHeartbeat", "ConsumerGroupDescribe")
            for kind in ("Request", "Response")]


def java_schemas(release: str, names: list[str]) -> dict[tuple[str, int], str | None]:
    jshell = shutil.which("jshell")
    if jshell is None:
        pytest.fail("jshell (JDK 17) not found: run `bash scripts/dev.sh setup`")
    classpath = ":".join(str(p) for p in sorted(libs_of(release).glob("*.jar")))
    lines = ["import org.apache.kafka.common.message.*;"]
    lines += [f'for (int i = 0; i < {n}Data.SCHEMAS.length; i++) System.out.println("{n} " + i + " " + '
              f'{n}Data.SCHEMAS[i]);' for n in names]
    run = subprocess.run([jshell, "-R-Xmx256m", "--class-path", classpath, "-"], input="\n".join(lines) + "\n/exit\n",
                         capture_output=True, text=True, timeout=300)
    found: dict[tuple[str, int], str | None] = {}
    for line in run.stdout.splitlines():
        parts = line.split(" ", 2)
        if len(parts) == 3 and parts[0] in names and parts[1].isdigit():
            found[(parts[0], int(parts[1]))] = None if parts[2] == "null" else parts[2]
    assert found, f"jshell printed no schema:\n{run.stdout}\n{run.stderr}"
    return found


# The messages whose classes come from kafka-python (its own JSON definitions, generated the same way).
KAFKA_PYTHON = [f"{api}{kind}" for api in messages.KAFKA_PYTHON for kind in ("Request", "Response")]


@pytest.fixture(scope="module")
def schemas() -> dict[tuple[str, int], str | None]:
    """The newest release's schemas (older releases' messages are the same or fewer versions of them)."""
    return java_schemas(NEWEST, (MESSAGES if NEWEST.startswith("4.") else []) + KAFKA_PYTHON)


def test_kafka_pythons_message_layouts_match_the_java_clients(schemas: dict[tuple[str, int], str | None]) -> None:
    """Every version both know, byte layout only (kafka-python may name a field as an older release did)."""
    compared = differences = 0
    report = []
    for (name, version), schema in sorted(schemas.items()):
        if name not in KAFKA_PYTHON or schema is None:
            continue
        ours = render(name, version, getattr(messages, name)._json)
        if ours is None:
            continue
        compared += 1
        if layout(ours) != layout(schema):
            differences += 1
            report.append(f"{name} v{version}:\n  java {schema}\n  ours {ours}")
    assert compared > 300 and not differences, "\n".join(report)


def test_our_message_definitions_match_the_java_clients(schemas: dict[tuple[str, int], str | None]) -> None:
    if NEWEST.startswith("3."):
        pytest.xfail(f"Apache Kafka {NEWEST}'s share-group messages were an early access draft (KIP-932 in 4.x)")
    java = {key: schema for key, schema in schemas.items() if key[0] in MESSAGES}
    assert {name for name, _ in java} == set(MESSAGES)
    differences = [f"{name} v{version}:\n  java {schema}\n  ours {render(name, version)}"
                   for (name, version), schema in sorted(java.items()) if render(name, version) != schema]
    assert not differences, "\n".join(differences)
