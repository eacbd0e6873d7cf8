"""Stuck transactions staged on a real Apache Kafka cluster, as production makes them: the embedded broker's
scenarios (kafka_txn_broker.testing.scenarios) played through the protocol against the JVM broker, plus what a
test needs around them on a real cluster (the coordinator topic created first, a topic whose leaders accept
writes, the release's capabilities).

A real broker creates `__transaction_state` on the first FindCoordinator and answers COORDINATOR_NOT_AVAILABLE
until it exists, and a fresh topic's leader may refuse writes (NOT_LEADER_OR_FOLLOWER) for a moment after the
metadata names it: `ready_topic` waits for both, so a scenario's first write is never refused for that.

Threading: plain blocking helpers, each with its own client; call them from the test's thread.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from kafka_txn_broker.testing.raw_client import RawClientError, RawKafkaClient
from kafka_txn_broker.testing.scenarios import PARTITIONS, ScenarioOptions, ScenarioResult, run_scenario
from tests.support.real_kafka.cluster import minor

DEADLINE_S = 60.0


@dataclass(frozen=True)
class Release:
    """What a release can stage and answer (from its version: facts of Kafka's release notes)."""

    version: str

    @property
    def at_least(self) -> Callable[[int, int], bool]:
        return lambda major, minor_: minor(self.version) >= (major, minor_)

    @property
    def list_duration_filter(self) -> bool:  # KIP-994 part 1, 3.8
        return self.at_least(3, 8)

    @property
    def list_pattern_filter(self) -> bool:  # KIP-1152, 4.1
        return self.at_least(4, 1)

    @property
    def force_terminate(self) -> bool:  # KIP-939's admin call in TransactionsCommand, 4.1
        return self.at_least(4, 1)

    @property
    def two_phase_commit(self) -> bool:
        """KIP-939's InitProducerId v6 (Enable2Pc): 4.4.0 still serves it only as an unstable API (a request
        at v6 closes the connection: "disabled api"), and older releases do not have it. No tested release."""
        return False

    @property
    def two_phase_commit_unstable(self) -> bool:
        """InitProducerId v6 served behind unstable.api.versions.enable=true, with
        transaction.two.phase.commit.enable=true: seen on 4.4.0, whose coordinator prepares such a transaction but
        answers UNSUPPORTED_VERSION to KeepPreparedTxn (its TransactionCoordinator.handleInitProducerId, read from
        the jar). Older releases are not known to (tests/external/real_kafka/test_two_phase_commit_real.py)."""
        return self.at_least(4, 4)

    @property
    def skips_markers_of_offline_leaders(self) -> bool:
        """Whether the coordinator drops a partition with no leader from a completing transaction ("likely
        deleted already and hence can be skipped") instead of retrying its marker until the leader returns:
        seen on 4.4.0 and 4.3.0, not on 4.2.0, 4.1.2, 3.9.2 or 3.3.2 (tests/external/real_kafka/
        test_coordinator_side_real.py). 4.3.0 is the first: its metadata cache (moved to Java) answers no leader
        endpoint for a partition whose leader is not a live broker; 4.2.0's still answered Node.noNode, which the
        marker channel retries (read from the releases' jars)."""
        return self.at_least(4, 3)

    @property
    def stuck_at_the_last_epoch(self) -> bool:
        """KAFKA-20090: a transaction version 2 coordinator (4.0+) before the fixes of 4.3.0 (apache/kafka#21469,
        #21506) cannot fence a transaction at epoch Short.MAX_VALUE: prepareFenceProducerEpoch throws "Cannot fence
        producer with epoch equal to Short.MaxValue" (in the jars of 4.1.2, 4.2.0 and 4.2.2; 4.3.0 and 4.4.0 log
        instead), and the transaction stays Ongoing (tests/external/real_kafka/test_epoch_exhaustion_real.py;
        run on 4.1.2, 4.0.x untested)."""
        return self.at_least(4, 0) and not self.at_least(4, 3)

    @property
    def share_groups(self) -> bool:  # KIP-932 (preview 4.0, production 4.1)
        return self.at_least(4, 1)

    @property
    def verification_config(self) -> bool:  # transaction.partition.verification.enable, KIP-890 part 1, 3.6
        return self.at_least(3, 6)


def _until(step: Callable[[], bool], what: str, deadline_s: float = DEADLINE_S) -> None:
    deadline = time.monotonic() + deadline_s
    last: object = None
    while time.monotonic() < deadline:
        try:
            if step():
                return
        except RawClientError as exc:  # not ready yet: retried until the deadline
            last = exc
        time.sleep(0.2)
    raise TimeoutError(f"{what} not ready in {deadline_s:.0f} s (last: {last})")


def warm_up(bootstrap_servers: str) -> None:
    """Have the cluster create `__transaction_state` and elect its leaders (the first FindCoordinator does)."""
    with RawKafkaClient(bootstrap_servers) as client:
        _until(lambda: client.transaction_coordinator(f"warm-up-{uuid.uuid4().hex[:6]}") >= 0,
               "the transaction coordinator")


def ready_topic(bootstrap_servers: str, name: str, partitions: int = PARTITIONS, replication_factor: int = 1) -> str:
    """Create `name` and wait until every partition's leader answers for it (DescribeProducers without error)."""
    with RawKafkaClient(bootstrap_servers) as client:
        client.create_topic(name, partitions, replication_factor)

        def answered() -> bool:
            leaders = client.partition_leaders(name)
            if len(leaders) != partitions or min(leaders.values()) < 0:
                return False
            return all(client._describe_producers(name, p).error_code == 0 for p in range(partitions))

        _until(answered, f"topic {name}")
    return name


def stage(bootstrap_servers: str, scenario: str, backdate_ms: int = 30 * 60_000, healthy: bool = False,
          replication_factor: int = 1, **options: object) -> ScenarioResult:
    """Run one scenario (scenarios.SCENARIOS) on its own ready topic; its ground truth."""
    warm_up(bootstrap_servers)
    prefix = f"real-{uuid.uuid4().hex[:6]}"
    topic = ready_topic(bootstrap_servers, f"{prefix}-{scenario}", PARTITIONS, replication_factor)
    opts = ScenarioOptions(topic_prefix=prefix, backdate_ms=backdate_ms, healthy=healthy, topic=topic,
                           **options)  # type: ignore[arg-type]
    (result,) = run_scenario(scenario, bootstrap_servers, opts)
    return result


@dataclass(frozen=True)
class Offsets:
    """A partition's last stable offset and high watermark, as librdkafka reads them (ListOffsets latest, with
    read_committed and read_uncommitted isolation)."""

    lso: int
    high_watermark: int


def offsets(bootstrap_servers: str, topic: str, partition: int) -> Offsets:
    """Asked through confluent-kafka's admin client (librdkafka), not through the code under test."""
    from confluent_kafka import IsolationLevel, TopicPartition
    from confluent_kafka.admin import AdminClient, OffsetSpec

    admin = AdminClient({"bootstrap.servers": bootstrap_servers})
    tp = TopicPartition(topic, partition)
    found = []
    for isolation in (IsolationLevel.READ_COMMITTED, IsolationLevel.READ_UNCOMMITTED):
        futures = admin.list_offsets({tp: OffsetSpec.latest()}, isolation_level=isolation, request_timeout=30)
        found.append(futures[tp].result(timeout=60).offset)
    return Offsets(lso=found[0], high_watermark=found[1])
