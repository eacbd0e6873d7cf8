"""Helpers for the CLI end-to-end tests: run `kafka-txn` / `kafka-transactions` in-process."""

from __future__ import annotations

import io
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as CTopicPartition
from typer.testing import CliRunner

from kafka_txn_tools.cli.app import app
from kafka_txn_tools.cli.upstream import run as upstream_run

# The zombie scenario's transaction.timeout.ms in tests. Its client must add a partition and produce to it
# before the timeout fires; a few hundred milliseconds was not always enough on a loaded 2-core machine.
ZOMBIE_TIMEOUT_MS = 2_000


@dataclass
class Result:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


def kafka_txn(bootstrap: str, *args: str, env: dict[str, str] | None = None) -> Result:
    runner = CliRunner()
    r = runner.invoke(app, [*args, "--bootstrap-server", bootstrap, "--timeout", "20s"], env=env)
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise r.exception
    return Result(r.exit_code, r.stdout, r.stderr)


def invoke_printed(command_line: str, *extra: str) -> Result:
    """A `kafka-txn ...` command line exactly as the tool printed it (plus `extra`, e.g. --yes where no
    terminal can confirm), run in-process: advice is a promise, so it must be accepted as printed."""
    import shlex

    argv = shlex.split(command_line)
    assert argv[0] == "kafka-txn", command_line
    r = CliRunner().invoke(app, [*argv[1:], *extra])
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise r.exception
    return Result(r.exit_code, r.stdout, r.stderr)


def kafka_transactions(bootstrap: str, *args: str) -> Result:
    out, err = io.StringIO(), io.StringIO()
    code = upstream_run(["--bootstrap-server", bootstrap, *args], out, err)
    return Result(code, out.getvalue(), err.getvalue())


def open_transaction(bootstrap: str, txn_id: str, topic: str, partitions: list[int], records: int = 3,
                     timeout_ms: int = 600_000) -> Producer:
    """A transactional producer left with an open transaction on `partitions` (caller commits/aborts)."""
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id, "transaction.timeout.ms": timeout_ms,
                  "log_level": 0})
    p.init_transactions(30)
    p.begin_transaction()
    for part in partitions:
        for i in range(records):
            p.produce(topic, key=b"k", value=b"%s-%d" % (txn_id.encode(), i), partition=part)
    p.flush(30)
    return p


def header(text: str) -> list[str]:
    return [cell.rstrip() for cell in text.splitlines()[0].rstrip("\t").split("\t")]


def leader_of(bootstrap: str, topic: str, partition: int) -> int:
    from kafka_txn_tools.connection.client import AdminClient
    from kafka_txn_tools.connection.config import ClientSettings
    from kafka_txn_tools.models import TopicPartition

    with AdminClient(ClientSettings(bootstrap_servers=bootstrap)) as admin:
        info = admin.metadata([topic]).partition(TopicPartition(topic, partition))
    assert info is not None
    return info.leader


def log_offsets(bootstrap: str, topic: str, partition: int) -> tuple[int, int]:
    """(log end offset, last stable offset) of a partition, as librdkafka reads them (ListOffsets latest with
    READ_UNCOMMITTED and READ_COMMITTED). On a replication-factor-1 topic the first is the leader's log end
    offset, so a marker written by mistake shows at once: "nothing was written" means both are unchanged."""
    return many_log_offsets(bootstrap, [(topic, partition)])[0]


def many_log_offsets(bootstrap: str, partitions: list[tuple[str, int]], admin: Any = None) -> list[tuple[int, int]]:
    """log_offsets of several partitions with one client (`admin`: a confluent_kafka AdminClient to reuse)."""
    from confluent_kafka import IsolationLevel
    from confluent_kafka import TopicPartition as CTopicPartition
    from confluent_kafka.admin import AdminClient as CAdminClient
    from confluent_kafka.admin import OffsetSpec

    admin = admin or CAdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    tps = [CTopicPartition(t, p) for t, p in partitions]
    levels = {}
    for level in (IsolationLevel.READ_UNCOMMITTED, IsolationLevel.READ_COMMITTED):
        futures = admin.list_offsets({tp: OffsetSpec.latest() for tp in tps}, isolation_level=level,
                                     request_timeout=20)
        levels[level] = [futures[tp].result(30).offset for tp in tps]
    return list(zip(levels[IsolationLevel.READ_UNCOMMITTED], levels[IsolationLevel.READ_COMMITTED], strict=True))


ROOT = Path(__file__).resolve().parents[2]


def until(done: Callable[[], Any], what: str, seconds: float = 20.0) -> Any:
    """What `done` returns once it is true, asked every 0.1 s; fail after `seconds` (state that settles
    through the brokers: markers landing, a leader moving)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        got = done()
        if got:
            return got
        time.sleep(0.1)
    raise AssertionError(f"gave up waiting for {what}")


def run_printed(command: str, timeout_s: float = 120.0) -> subprocess.CompletedProcess[str]:
    """Run one command a finding printed, exactly as printed plus --yes, in a process of its own (the
    `kafka-txn` console script, importing this checkout); its output is kept for the assertion message."""
    argv = shlex.split(command)
    assert argv[0] == "kafka-txn", command
    program = shutil.which("kafka-txn")
    prefix = [program] if program else [sys.executable, "-m", "kafka_txn_tools"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "broker")])}
    env.pop("COLUMNS", None)
    done = subprocess.run([*prefix, *argv[1:], "--yes"], capture_output=True, text=True, env=env, timeout=timeout_s,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, f"{command} --yes exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done


def hold_group(bs: str, topic: str, partition: int, group: str) -> None:
    """A read_committed group that has read everything up to the LSO and committed there: held back."""
    _end, lso = log_offsets(bs, topic, partition)
    c = Consumer({"bootstrap.servers": bs, "group.id": group, "enable.auto.commit": False, "log_level": 0})
    c.commit(offsets=[CTopicPartition(topic, partition, lso)], asynchronous=False)
    c.close()


def group_reads_to_the_end(bs: str, topic: str, partition: int, group: str) -> None:
    """The held-back group moves on: read_committed from its committed offset up to the high watermark."""
    end, _lso = log_offsets(bs, topic, partition)
    c = Consumer({"bootstrap.servers": bs, "group.id": group, "enable.auto.commit": False,
                  "isolation.level": "read_committed", "auto.offset.reset": "earliest", "log_level": 0})
    c.assign([CTopicPartition(topic, partition)])
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        c.consume(100, 0.2)
        position = c.position([CTopicPartition(topic, partition)])[0].offset
        if position >= end:
            break
    assert position >= end, f"group {group} is still at {position}, the high watermark is {end}"
    c.commit(offsets=[CTopicPartition(topic, partition, position)], asynchronous=False)
    c.close()


def read_committed(bs: str, topic: str, partition: int) -> list[bytes]:
    """What a read_committed librdkafka consumer gets from offset 0 up to the LSO (its partition EOF)."""
    import uuid

    from confluent_kafka import KafkaError

    c = Consumer({"bootstrap.servers": bs, "group.id": f"check-{uuid.uuid4().hex[:6]}", "log_level": 0,
                  "isolation.level": "read_committed", "enable.auto.commit": False, "enable.partition.eof": True})
    try:
        c.assign([CTopicPartition(topic, partition, 0)])
        got: list[bytes] = []
        for _ in range(120):
            m = c.poll(0.5)
            if m is None:
                continue
            error = m.error()
            if error is not None:
                assert error.code() == KafkaError._PARTITION_EOF, error
                return got  # the end of what read_committed may read: the LSO
            got.append(m.value() or b"")
        raise AssertionError(f"no end of {topic}-{partition} for a read_committed consumer within 60 s")
    finally:
        c.close()
