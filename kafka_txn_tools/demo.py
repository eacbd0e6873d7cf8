"""The README's main job: an incident rehearsed end to end on an embedded 3-node cluster, narrated.

Real clients make the traffic (confluent-kafka transactional producers and a read_committed consumer);
the hanging transactions come from the broker's scenarios, which misbehave through the protocol the way
production clients did. The operator's side is the real `kafka-txn` CLI, run as a subprocess exactly as
a runbook would run it, so every command printed here can be copied.

On a secured cluster (`--config` with the broker's security settings, `--command-config` with the
operator's client properties, e.g. Kerberos or OAuth as docs/security-auth.md gives them), the incident
is staged first, then the cluster restarts from the same log dirs with the security settings: from then
on every client authenticates, the CLI with the operator's properties and the demo's own traffic as a
SCRAM user of its own (`demo-traffic`, a super user; confluent-kafka has no GSSAPI).
"""

from __future__ import annotations

import json
import os
import secrets
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from confluent_kafka import Producer

Say = Callable[[str], None]

TOPIC = "payments"
QUIET = {"log_level": 3}
# A hang looks like this only after transaction.max.timeout.ms (15 min); the scenarios backdate the
# misbehaving writes by this much so the demo does not wait.
BACKDATE_MS = 30 * 60 * 1000


# What the JVM prints on its own when Spark starts; not the sweep's output.
_JVM_NOISE = ("WARNING: Using incubator modules", "Setting default log level", "To adjust logging level")


@dataclass
class Hang:
    topic: str
    partition: int
    start_offset: int
    transactional_id: str
    scenario: str


TRAFFIC_USER = "demo-traffic"


@dataclass(frozen=True)
class Security:
    """The cluster's security (`--config`) and the operator's client properties (`--command-config`)."""

    broker: dict[str, Any]
    command_config: Path
    traffic_password: str

    @classmethod
    def load(cls, broker_config: Path, command_config: Path) -> Security:
        """Both files checked before anything starts; ValueError naming the file and the fix otherwise."""
        from kafka_txn_broker.configs.broker_config import BrokerConfig, ConfigError

        try:
            config = BrokerConfig.from_sources(broker_config)
        except ConfigError as exc:
            raise ValueError(str(exc)) from None
        protocol = config["security.protocol"]
        if not protocol.startswith("SASL_"):
            raise ValueError(f"security.protocol={protocol} in {broker_config}: the demo secures its cluster with SASL "
                             "(SASL_SSL or SASL_PLAINTEXT), see docs/security-auth.md")
        if not command_config.is_file():
            raise ValueError(f"--command-config {command_config} does not exist")
        explicit = {k: config[k] for k in config.as_dict() if config.is_set(k)}
        security = cls(explicit, command_config, secrets.token_urlsafe(18))
        # The secured cluster's settings checked now (keytab, JWKS URL...), not after the incident is staged.
        from kafka_txn_broker.security.auth import ClusterSecurity

        with tempfile.TemporaryDirectory() as scratch:
            try:
                ClusterSecurity.from_config(BrokerConfig(security.cluster_config({})), Path(scratch))
            except ConfigError as exc:
                raise ValueError(f"{broker_config}: {exc}") from None
        return security

    def cluster_config(self, base: dict[str, Any]) -> dict[str, Any]:
        """The demo's settings, the operator's security, and the demo's traffic user (SCRAM-SHA-512, super user)."""
        cfg = {**base, **self.broker}
        mechanisms = [m.strip() for m in str(cfg.get("sasl.enabled.mechanisms", "")).split(",") if m.strip()]
        cfg["sasl.enabled.mechanisms"] = ",".join([*mechanisms, "SCRAM-SHA-512"])
        cfg["sasl.users"] = [*cfg.get("sasl.users", ()), f"{TRAFFIC_USER}:{self.traffic_password}"]
        supers = [u for u in str(cfg.get("super.users", "")).split(";") if u.strip()]
        cfg["super.users"] = ";".join([*supers, f"User:{TRAFFIC_USER}"])
        return cfg

    def client(self) -> dict[str, Any]:
        """librdkafka settings of the demo's own clients; TLS trusts the operator's ssl.truststore.location."""
        from kafka_txn_tools.connection.config import load_properties

        protocol = self.broker["security.protocol"]
        cfg: dict[str, Any] = {"security.protocol": protocol, "sasl.mechanism": "SCRAM-SHA-512",
                               "sasl.username": TRAFFIC_USER, "sasl.password": self.traffic_password}
        trust = load_properties(self.command_config).get("ssl.truststore.location")
        if protocol == "SASL_SSL" and trust:
            cfg["ssl.ca.location"] = trust
        return cfg


class Demo:
    def __init__(self, say: Say, root: Path, bootstrap: str, security: Security | None = None) -> None:
        self.say = say
        self.root = root
        self.bootstrap = bootstrap
        self.security = security
        self.live: Producer | None = None  # the batch job's transaction, open and live throughout

    def client(self, **extra: Any) -> dict[str, Any]:
        """A librdkafka config for the demo's own traffic (authenticated on a secured cluster)."""
        secured = self.security.client() if self.security is not None else {}
        return {"bootstrap.servers": self.bootstrap, **secured, **QUIET, **extra}

    # ---- the operator's commands -------------------------------------------------------------
    def kafka_txn(self, *args: str, show: bool = True) -> subprocess.CompletedProcess[str]:
        # Every command but `sweep` (which reads files) talks to the cluster.
        remote = ["--bootstrap-server", self.bootstrap] if args[0] != "sweep" else []
        shown = " --bootstrap-server $BOOTSTRAP" if remote else ""
        if remote and self.security is not None:
            remote += ["--command-config", str(self.security.command_config)]
            shown += f" --command-config {self.security.command_config}"
        cmd = [sys.executable, "-m", "kafka_txn_tools", *args, *remote]
        self.say("   $ kafka-txn " + " ".join(args) + shown)
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=600,
                             env={**os.environ, "COLUMNS": "160"})
        if show:
            for line in (out.stdout + out.stderr).rstrip().splitlines():
                if not line.startswith(_JVM_NOISE):
                    self.say("     " + line)
        return out

    def run_printed(self, line: str, *extra: str) -> subprocess.CompletedProcess[str]:
        """A command line exactly as the tool printed it (plus `extra`: --yes, as no terminal confirms here)."""
        argv = shlex.split(line)
        self.say("   $ " + " ".join([line, *extra]))
        out = subprocess.run([sys.executable, "-m", "kafka_txn_tools", *argv[1:], *extra], capture_output=True,
                             text=True, timeout=600, env={**os.environ, "COLUMNS": "160"})
        for shown in (out.stdout + out.stderr).rstrip().splitlines():
            self.say("     " + shown)
        return out

    def close(self) -> None:
        if self.live is not None:
            self.live.close()
            self.live = None

    # ---- client traffic ----------------------------------------------------------------------
    def healthy_traffic(self) -> None:
        from confluent_kafka import Producer

        p = Producer(self.client(**{"transactional.id": "payments-app"}))
        p.init_transactions(30)
        for n in range(6):
            p.begin_transaction()
            for i in range(20):
                p.produce(TOPIC, key=b"acct-%d" % i, value=b"payment-%d-%d" % (n, i), partition=i % 3)
            if n == 4:
                p.abort_transaction(30)
            else:
                p.commit_transaction(30)
        # A live transaction, open and within its timeout: it holds an LSO back legitimately.
        self.live = Producer(self.client(**{"transactional.id": "payments-batch-job",
                                            "transaction.timeout.ms": 600000}))
        self.live.init_transactions(30)
        self.live.begin_transaction()
        self.live.produce(TOPIC, value=b"batch-in-progress", partition=2)
        self.live.flush(30)

    def commit_after(self, topic: str, partition: int, count: int) -> None:
        """More committed traffic behind the hang: exactly what read_committed consumers wait for."""
        from confluent_kafka import Producer

        p = Producer(self.client(**{"transactional.id": f"writer-{topic}"}))
        p.init_transactions(30)
        p.begin_transaction()
        for i in range(count):
            p.produce(topic, value=b"after-hang-%d" % i, partition=partition)
        p.commit_transaction(30)

    def offsets(self, topic: str, partition: int) -> tuple[int, int]:
        """(LSO, high watermark) as any client sees them: ListOffsets READ_COMMITTED vs READ_UNCOMMITTED."""
        from confluent_kafka import IsolationLevel, TopicPartition
        from confluent_kafka.admin import AdminClient, OffsetSpec

        admin = AdminClient(self.client())
        tp = TopicPartition(topic, partition)
        result = []
        for level in (IsolationLevel.READ_COMMITTED, IsolationLevel.READ_UNCOMMITTED):
            fut = admin.list_offsets({tp: OffsetSpec.latest()}, isolation_level=level)[tp]
            result.append(fut.result(30).offset)
        return result[0], result[1]

    def read_committed(self, topic: str, partition: int, seconds: float) -> list[bytes]:
        from confluent_kafka import Consumer, TopicPartition

        c = Consumer(self.client(**{"group.id": f"ledger-{topic}", "isolation.level": "read_committed",
                                    "enable.auto.commit": False}))
        c.assign([TopicPartition(topic, partition, 0)])
        got: list[bytes] = []
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            for m in c.consume(100, 0.3):
                value = m.value()
                if m.error() is None and value is not None:
                    got.append(value)
        c.close()
        return got

    def hangs(self) -> list[Hang]:
        from kafka_txn_broker.testing.scenarios import ScenarioOptions, run_scenario

        out = []
        for name in ("late-write-after-abort", "unregistered-partition-commit"):
            for result in run_scenario(name, self.bootstrap, ScenarioOptions(topic_prefix="demo",
                                                                             backdate_ms=BACKDATE_MS)):
                for h in result.hanging:
                    out.append(Hang(h.topic, h.partition, h.start_offset, h.transactional_id, name))
                    self.say(f"   - {name}: {_first_sentence(result.incident)}")
        return out


def _first_sentence(text: str) -> str:
    head = " ".join(text.split()).split(". ")[0]
    return head if head.endswith(".") else head + "."


def _java_available() -> bool:
    return shutil.which("java") is not None or bool(os.environ.get("JAVA_HOME"))


def run(say: Say = print, data_dir: Path | None = None, security: Security | None = None,
        sweep: bool = True) -> bool:
    """The demo; False if a step failed. A cluster that cannot start (its config) raises ValueError."""
    from kafka_txn_broker import EmbeddedCluster

    root = data_dir or Path(tempfile.mkdtemp(prefix="kafka-txn-demo-"))
    say(f"1. A 3-node embedded Kafka cluster (data in {root}), transaction.partition.verification.enable=false:")
    say("   the pre-KIP-890 behaviour that let transactions hang in production.")
    config: dict[str, Any] = {"transaction.partition.verification.enable": False, "num.partitions": 3,
                              "default.replication.factor": 3}
    hangs: list[Hang] = []
    if security is not None:
        with EmbeddedCluster(nodes=3, data_dir=root / "cluster", config=config) as cluster:
            cluster.create_topic(TOPIC, 3, 3)
            say("   First the incident, staged before the cluster is secured: two clients misbehave as production")
            say("   clients did (writes backdated 30 minutes):")
            hangs = Demo(say, root, cluster.bootstrap_servers).hangs()
        config = security.cluster_config(config)
        say(f"   The cluster restarts from its log dirs with --config's security ({config['security.protocol']}, "
            f"{config['sasl.enabled.mechanisms']}); the demo's own clients log in as {TRAFFIC_USER} (SCRAM).")
    with EmbeddedCluster(nodes=3, data_dir=root / "cluster", config=config) as cluster:
        if security is None:
            cluster.create_topic(TOPIC, 3, 3)
        demo = Demo(say, root, cluster.bootstrap_servers, security)
        say(f"   BOOTSTRAP={cluster.bootstrap_servers}")
        try:
            return _incident(demo, hangs, sweep)
        finally:
            demo.close()  # before the cluster stops: a live client would log every refused reconnect


def _incident(demo: Demo, staged: list[Hang], sweep: bool) -> bool:
    say = demo.say
    demo.healthy_traffic()
    say(f"2. Healthy traffic from confluent-kafka on '{TOPIC}': 5 committed and 1 aborted transaction, and a")
    say("   batch job's transaction that is open and live (within its timeout).")
    if not staged:
        say("3. The incident: two clients misbehave as production clients did (writes backdated 30 minutes):")
    hangs = staged or demo.hangs()
    first = hangs[0]
    demo.commit_after(first.topic, first.partition, 10)
    lso, hw = demo.offsets(first.topic, first.partition)
    seen = demo.read_committed(first.topic, first.partition, 3.0)
    say(f"4. {first.topic}-{first.partition}: 10 records committed after the hang, but LSO={lso} < high "
        f"watermark={hw};")
    say(f"   a read_committed consumer got {len(seen)} of them: it is stalled.")
    say("5. On call: find what holds the LSO back.")
    found = demo.kafka_txn("find-hanging", "--all")
    dump = demo.root / "dump"
    say("   Before touching anything, capture the cluster's state for the post-mortem and the nightly sweep:")
    demo.kafka_txn("dump", "--all", "--out", str(dump), "--format", "jsonl", show=False)
    say(f"6. Abort the one stalling the ledger, by its start offset ({first.scenario}):")
    aborted = demo.kafka_txn("abort", "--topic", first.topic, "--partition", str(first.partition),
                             "--start-offset", str(first.start_offset), "--yes")
    resumed = demo.read_committed(first.topic, first.partition, 3.0)
    lso2, hw2 = demo.offsets(first.topic, first.partition)
    say(f"7. LSO={lso2}, high watermark={hw2}: the consumer resumed and read {len(resumed)} committed records; "
        "the aborted records stay invisible.")
    swept = _sweep(demo, dump) if sweep else _abort_the_rest(demo, hangs[1:])
    final = demo.kafka_txn("find-hanging", "--all", "--exit-code", "-o", "json", show=False)
    remaining = json.loads(final.stdout or "{}").get("hanging", []) if final.stdout.strip().startswith("{") else []
    live_ok = _live_untouched(demo)
    ok = (found.returncode == 0 and aborted.returncode == 0 and len(seen) == 0 and len(resumed) == 10
          and lso2 == hw2 and swept and final.returncode == 0 and live_ok)
    say(f"9. find-hanging again: {len(remaining)} hanging; the batch job's live transaction was never touched: "
        f"{'yes' if live_ok else 'NO'}.")
    say("Done: the incident was found, explained and cleared." if ok else "Demo FAILED: see the steps above.")
    return ok


def _sweep(demo: Demo, dump: Path) -> bool:
    say = demo.say
    out = demo.root / "sweep"
    if not _java_available():
        say("8. (sweep skipped: java not found; `bash scripts/dev.sh demo` installs a JRE 17)")
        return False
    say("8. The nightly sweep: Spark over the dump captured during the incident, then its abort plan, applied with")
    say("   the command the sweep printed: the dump recorded the cluster, so its commands reach it as printed.")
    res = demo.kafka_txn("sweep", str(dump), "--out", str(out))
    if res.returncode != 0:
        return False
    summary: dict[str, Any] = json.loads((out / "summary.json").read_text())
    say(f"   report: {out / 'report.html'}  summary: {json.dumps(summary.get('counts_by_reason', summary))[:160]}")
    printed = [line.strip() for line in res.stdout.splitlines() if line.strip().startswith("kafka-txn abort --plan")]
    apply = [line for line in printed if "--dry-run" not in line]
    if not apply:
        say("   the sweep printed no command that applies its plan")
        return False
    plan = demo.run_printed(apply[0], "--yes")
    # The first entry was aborted by hand in step 6: the plan re-validates it and reports it as done.
    return plan.returncode in (0, 4)


def _abort_the_rest(demo: Demo, hangs: list[Hang]) -> bool:
    """Without the sweep (--no-sweep), whose abort plan clears them, the other hanging transactions by hand."""
    demo.say("8. No sweep (--no-sweep): abort the other hanging transactions by hand too.")
    done = [demo.kafka_txn("abort", "--topic", h.topic, "--partition", str(h.partition), "--start-offset",
                           str(h.start_offset), "--yes", show=False) for h in hangs]
    return all(r.returncode == 0 for r in done)


def _live_untouched(demo: Demo) -> bool:
    """The live batch job can still commit: no tool aborted it."""
    if demo.live is None:
        return False
    try:
        demo.live.produce(TOPIC, value=b"batch-done", partition=2)
        demo.live.commit_transaction(30)
        return True
    except Exception:
        return False
