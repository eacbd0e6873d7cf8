"""KRaft clusters of real Apache Kafka on loopback: each node a combined broker and controller in its own JVM
(small heap), its log dir, properties and log file under `base`, so that a failed test's broker logs are kept.

Threading: a KafkaCluster is driven from one thread (a test's); it owns its child processes and ends them on
exit (kill -9 if a clean stop takes longer than `stop_timeout_s`).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType

HEAP = "-Xmx320m"
# The host extra listeners advertise: Kafka's Java client names a Kerberos service by the host it resolves the
# broker's address back to (127.0.0.1 -> localhost), so a listener clients authenticate to with GSSAPI must be
# known by that name to every client alike.
EXTRA_LISTENER_HOST = "localhost"


def free_ports(count: int) -> list[int]:
    """`count` distinct free loopback ports (held open together while chosen, so they differ)."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [int(s.getsockname()[1]) for s in sockets]
    finally:
        for s in sockets:
            s.close()


def major(version: str) -> int:
    return int(version.split(".")[0])


def minor(version: str) -> tuple[int, int]:
    parts = version.split(".")
    return int(parts[0]), int(parts[1])


class KafkaNode:
    """One combined broker+controller JVM. Started by its cluster; `kill()` is kill -9, `start()` again reuses
    its log dir (and so recovers its log, as a real node does after a crash)."""

    def __init__(self, cluster: KafkaCluster, node_id: int, port: int, controller_port: int,
                 extra_ports: Mapping[str, int] | None = None) -> None:
        self.cluster = cluster
        self.node_id = node_id
        self.port = port
        self.controller_port = controller_port
        self.extra_ports = dict(extra_ports or {})  # listener name -> port, for the cluster's extra listeners
        self.home = cluster.base / f"node-{node_id}"
        self.log_dir = self.home / "data"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def listener_address(self, name: str) -> str:
        """host:port of the extra listener `name` (KafkaCluster's `listeners`)."""
        return f"{EXTRA_LISTENER_HOST}:{self.extra_ports[name]}"

    def _listener_properties(self) -> dict[str, str]:
        """PLAINTEXT (clients, inter-broker, the harness's own checks) and CONTROLLER, plus the extra ones."""
        protocols = {"PLAINTEXT": "PLAINTEXT", "CONTROLLER": "PLAINTEXT", **self.cluster.listeners}
        extra = [f"{name}://{{}}:{port}" for name, port in self.extra_ports.items()]
        bound = [f"PLAINTEXT://127.0.0.1:{self.port}", f"CONTROLLER://127.0.0.1:{self.controller_port}"]
        return {
            "listeners": ",".join(bound + [e.format("127.0.0.1") for e in extra]),
            "advertised.listeners": ",".join([bound[0]] + [e.format(EXTRA_LISTENER_HOST) for e in extra]),
            "listener.security.protocol.map": ",".join(f"{k}:{v}" for k, v in protocols.items()),
        }

    @property
    def properties_file(self) -> Path:
        return self.home / "server.properties"

    @property
    def log_file(self) -> Path:
        return self.home / "server.log"

    def write_properties(self, voters: str, extra: Mapping[str, str]) -> None:
        rf = str(min(3, len(self.cluster.nodes_spec)))
        min_isr = "2" if len(self.cluster.nodes_spec) >= 3 else "1"
        props = {
            "process.roles": "broker,controller",
            "node.id": str(self.node_id),
            "controller.quorum.voters": voters,
            **self._listener_properties(),
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "log.dirs": str(self.log_dir),
            "num.partitions": "1",
            "default.replication.factor": rf,
            "offsets.topic.replication.factor": rf,
            "offsets.topic.num.partitions": "5",
            "transaction.state.log.replication.factor": rf,
            "transaction.state.log.min.isr": min_isr,
            "transaction.state.log.num.partitions": "5",
            "share.coordinator.state.topic.replication.factor": rf,
            "share.coordinator.state.topic.min.isr": min_isr,
            "group.initial.rebalance.delay.ms": "0",
            # Small on purpose: a test machine has 2 cores and runs several JVMs.
            "num.network.threads": "2",
            "num.io.threads": "2",
            "background.threads": "2",
            "log.cleaner.enable": "false",
        }
        props.update(extra)
        self.home.mkdir(parents=True, exist_ok=True)
        self.properties_file.write_text("".join(f"{k}={v}\n" for k, v in props.items()))

    def format(self, cluster_id: str) -> None:
        self.cluster.java("kafka.tools.StorageTool", "format", "-t", cluster_id, "-c", str(self.properties_file),
                          "--ignore-formatted")

    def start(self) -> KafkaNode:
        if self.proc is not None and self.proc.poll() is None:
            return self
        log = open(self.log_file, "ab")  # noqa: SIM115 - handed to the child; closed by the OS at its exit
        self.proc = subprocess.Popen(
            self.cluster.java_command(HEAP, *self.cluster.jvm_options, *self.cluster.logging_options(self.home),
                                      "kafka.Kafka", str(self.properties_file)),
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        return self

    def wait_listening(self, timeout_s: float = 60.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc is None or self.proc.poll() is not None:
                raise RuntimeError(f"Kafka node {self.node_id} exited ({self.proc and self.proc.returncode}) "
                                   f"before listening; see {self.log_file}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return
            except OSError:
                time.sleep(0.1)
        raise TimeoutError(f"Kafka node {self.node_id} did not listen on {self.address} in {timeout_s} s; "
                           f"see {self.log_file}")

    def kill(self) -> None:
        """kill -9: no clean shutdown, as a crashed machine."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def stop(self, timeout_s: float = 30.0) -> None:
        """A clean shutdown (SIGTERM, controlled shutdown), kill -9 after `timeout_s`."""
        if self.proc is None or self.proc.poll() is not None:
            return
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.kill()

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


class KafkaCluster:
    """A KRaft cluster of `nodes` combined nodes of Apache Kafka `version` (jars in `libs`), under `base`.

    `config` is added to every node's properties (e.g. transaction.partition.verification.enable=false).
    `listeners` adds named listeners beside PLAINTEXT (name -> security protocol, e.g. {"SASL": "SASL_PLAINTEXT"};
    their settings go in `config` as listener.name.sasl.*), each advertised as EXTRA_LISTENER_HOST on a port of
    its own (`bootstrap(name)`). `jvm_options` go to each broker's JVM, as KAFKA_OPTS does for bin/kafka-server-
    start.sh (e.g. -Djava.security.krb5.conf=...).
    """

    def __init__(self, libs: Path, base: Path, nodes: int = 1, config: Mapping[str, str] | None = None,
                 version: str | None = None, listeners: Mapping[str, str] | None = None,
                 jvm_options: Sequence[str] = ()) -> None:
        self.libs = libs
        self.version = version or libs.parent.name
        self.base = base
        self.base.mkdir(parents=True, exist_ok=True)
        self.nodes_spec = list(range(1, nodes + 1))
        self.config = dict(config or {})
        self.listeners = dict(listeners or {})
        self.jvm_options = list(jvm_options)
        per_node = 2 + len(self.listeners)
        ports = free_ports(per_node * nodes)
        self.nodes = {}
        for i in self.nodes_spec:
            mine = ports[per_node * (i - 1):per_node * i]
            self.nodes[i] = KafkaNode(self, i, mine[0], mine[1], dict(zip(self.listeners, mine[2:], strict=True)))
        self.cluster_id = ""

    # -- the JVM ------------------------------------------------------------------------------------------------
    def java_command(self, *args: str) -> list[str]:
        return ["java", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto",
                "-Djava.awt.headless=true", "-cp", f"{self.libs}/*", *args]

    def logging_options(self, home: Path) -> list[str]:
        """Each release's own logging (log4j2 on 4.x, reload4j on 3.x) at INFO to the node's log file."""
        if major(self.version) >= 4:
            conf = home / "log4j2.properties"
            conf.write_text("status = error\nappender.out.type = Console\nappender.out.name = OUT\n"
                            "appender.out.layout.type = PatternLayout\n"
                            "appender.out.layout.pattern = [%d] %p %m (%c)%n\n"
                            "rootLogger.level = INFO\nrootLogger.appenderRef.out.ref = OUT\n")
            return [f"-Dlog4j2.configurationFile={conf}"]
        conf = home / "log4j.properties"
        conf.write_text("log4j.rootLogger=INFO, out\nlog4j.appender.out=org.apache.log4j.ConsoleAppender\n"
                        "log4j.appender.out.layout=org.apache.log4j.PatternLayout\n"
                        "log4j.appender.out.layout.ConversionPattern=[%d] %p %m (%c)%n\n")
        return [f"-Dlog4j.configuration=file:{conf}"]

    def java(self, main_class: str, *args: str, timeout_s: float = 120.0) -> subprocess.CompletedProcess[str]:
        run = subprocess.run(self.java_command(main_class, *args), capture_output=True, text=True,
                             timeout=timeout_s)
        if run.returncode != 0:
            raise RuntimeError(f"{main_class} {' '.join(args)} exited {run.returncode}:\n{run.stdout}{run.stderr}")
        return run

    # -- life cycle ---------------------------------------------------------------------------------------------
    @property
    def bootstrap_servers(self) -> str:
        return ",".join(node.address for node in self.nodes.values())

    def bootstrap(self, listener: str) -> str:
        """The bootstrap servers of the extra listener `listener`."""
        return ",".join(node.listener_address(listener) for node in self.nodes.values())

    def start(self, timeout_s: float = 90.0) -> KafkaCluster:
        voters = ",".join(f"{n.node_id}@127.0.0.1:{n.controller_port}" for n in self.nodes.values())
        self.cluster_id = self.java("kafka.tools.StorageTool", "random-uuid").stdout.strip().splitlines()[-1]
        for node in self.nodes.values():
            shutil.rmtree(node.log_dir, ignore_errors=True)  # a fresh cluster: no earlier run's log dirs
            node.write_properties(voters, self.config)
            node.format(self.cluster_id)
        for node in self.nodes.values():
            node.start()
        for node in self.nodes.values():
            node.wait_listening(timeout_s)
        self.wait_ready(timeout_s)
        return self

    def wait_ready(self, timeout_s: float = 90.0) -> None:
        """Until every running broker is registered and answers Metadata with all of them (a broker listens
        before it has caught up with the controller's metadata)."""
        from kafka_txn_broker.formats.messages import MetadataRequest
        from kafka_txn_broker.testing.raw_client import RawKafkaClient

        want = {n.node_id for n in self.nodes.values() if n.running}
        deadline = time.monotonic() + timeout_s
        last: object = None
        while time.monotonic() < deadline:
            address = next(n.address for n in self.nodes.values() if n.running)
            try:
                with RawKafkaClient(address, timeout_s=5.0) as client:
                    answer = client.send(MetadataRequest[8](topics=[], allow_auto_topic_creation=False,
                                                            include_cluster_authorized_operations=False,
                                                            include_topic_authorized_operations=False), 8)
                brokers = {b.node_id for b in answer.brokers}
                if want <= brokers:
                    return
                last = brokers
            except Exception as exc:  # noqa: BLE001 - not up yet: any error means retry until the deadline
                last = exc
            time.sleep(0.25)
        raise TimeoutError(f"Kafka {self.version} cluster not ready in {timeout_s} s (last: {last}); "
                           f"logs under {self.base}")

    def kill(self, node_id: int) -> None:
        self.nodes[node_id].kill()

    def stop_node(self, node_id: int) -> None:
        self.nodes[node_id].stop()

    def restart(self, node_id: int, timeout_s: float = 90.0) -> None:
        node = self.nodes[node_id]
        node.start()
        node.wait_listening(timeout_s)
        self.wait_ready(timeout_s)

    def stop(self) -> None:
        for node in self.nodes.values():
            if node.running:
                os.killpg(node.proc.pid, signal.SIGTERM)  # type: ignore[union-attr]
        deadline = time.monotonic() + 30
        for node in self.nodes.values():
            if node.proc is None:
                continue
            try:
                node.proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                node.kill()

    def __enter__(self) -> KafkaCluster:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def logs(self, lines: int = 60) -> str:
        """The last `lines` of every node's log, for a failure message."""
        out = []
        for node in self.nodes.values():
            text = node.log_file.read_text(errors="replace").splitlines() if node.log_file.exists() else []
            out.append(f"--- node {node.node_id} ({node.log_file}) ---\n" + "\n".join(text[-lines:]))
        return "\n".join(out)
