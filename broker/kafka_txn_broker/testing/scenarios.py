"""Real hanging transactions, made the way production made them: through the Kafka protocol.

No broker state is edited. Each scenario plays a misbehaving client with the raw protocol client
(`kafka_txn_broker.testing.raw_client`), next to well-behaved clients whose transactions are healthy
(one committed, one aborted, one still open within its timeout), so a tool must tell them apart. The
hanging writes need a broker that does not verify transactional writes, i.e. Kafka before 3.6, or
`transaction.partition.verification.enable=false` (embedded: `--set
transaction.partition.verification.enable=false`); a verifying broker rejects them and the scenario
raises ScenarioPrevented, which is itself the point of KIP-890. The misbehaving writes are TV1-style
(Produce v8): a TV2 write (Produce v12+) is added to the transaction by the leader even with
verification off, as in Kafka 4.x, so it could not make these incidents.

Every scenario returns its ground truth: which partition hangs, for which producer id / epoch, from
which offset, and what the coordinator says about the transactional id (which never lists that
partition: that is what makes it hanging rather than merely open).

Two scenarios make transactions stuck on the coordinator's side, the TV2-era incidents, by switching on
the embedded broker's test-only fault injection (`fault.injection`, kafka_txn_broker/txn/faults.py) for their own
transactional id through IncrementalAlterConfigs: each emulates an upstream bug before its fix, says
which, and returns a `StuckTransaction` ground truth (state, pending partitions, the reason find-hanging
must give, and what clears it). A broker without that property (any real Kafka) refuses the config and
the scenario raises ScenarioPrevented. The fault stays on for that id, so the incident persists until
someone clears it as a real operator would (`clears`).

Layout of a scenario's topic (4 partitions): p0 healthy committed + aborted transactions, p1 the
hanging transaction, p2 a healthy open transaction, p3 the misbehaving producer's legitimate work.

`commit-marker-skipped` needs more than a client: it stops a partition's leader while the transaction commits
and starts it again, so it runs where the nodes can be stopped (`ScenarioOptions.nodes`: an EmbeddedCluster
in this process), on brokers that skip the marker of a leaderless partition (Apache Kafka 4.3+, or the
embedded broker with `kafka.version.emulate` 4.3 or later).

`backdate_ms` sets the CreateTime of the misbehaving batches that long before they are sent: the
batch of a paused or delayed producer was created before the pause. Tools that judge age by the
producer's last timestamp (find-hanging, PartitionsWithLateTransactionsCount) then see it as old
without anyone waiting 15 minutes.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Protocol

from kafka_txn_broker.formats import errors as E
from kafka_txn_broker.formats.partitioning import SHARE_STATE_TOPIC
from kafka_txn_broker.formats.transactions import MAX_EPOCH
from kafka_txn_broker.formats.transactions import TransactionState as S
from kafka_txn_broker.testing.raw_client import ProducerIdAndEpoch, RawKafkaClient, Transport

PARTITIONS = 4
HEALTHY_PARTITION, HANGING_PARTITION, OPEN_PARTITION, OWN_PARTITION = 0, 1, 2, 3
# Codes with which a verifying leader refuses the hanging write (Produce v8: legacy error mapping).
_VERIFICATION_REFUSALS = {E.INVALID_TXN_STATE, E.INVALID_PRODUCER_EPOCH, E.TRANSACTION_ABORTABLE}


class ScenarioError(RuntimeError):
    """The scenario could not run (a step failed); the message says which and why."""


class ScenarioPrevented(ScenarioError):
    """The broker refused the misbehaving write: transaction verification is on."""


class NodeControl(Protocol):
    """Stops and starts one broker of the cluster a scenario runs on (EmbeddedCluster has these)."""

    def stop_node(self, node_id: int, *, clean: bool = True) -> None: ...

    def start_node(self, node_id: int) -> None: ...


@dataclass(frozen=True)
class HangingTransaction:
    topic: str
    partition: int
    producer_id: int
    producer_epoch: int
    start_offset: int
    transactional_id: str
    coordinator_state: str
    coordinator_partitions: list[str]
    # What the coordinator decided for this transaction and never delivered here ("commit": the end is the COMMIT
    # marker, kafka-txn commit); None: it never decided on this write (an abort ends it).
    coordinator_decision: str | None = None


@dataclass(frozen=True)
class StuckTransaction:
    """A transaction its coordinator holds and cannot finish (find-hanging's rows of kind "coordinator")."""

    transactional_id: str
    state: str
    producer_id: int
    producer_epoch: int
    reason: str  # find-hanging's reason: markers-pending, epoch-exhausted
    pending_partitions: list[str]  # topic-partition
    pending_reason: str  # why each still has no marker (find-hanging's pending reason)
    start_offset: int  # where the open data starts on the pending partitions (-1: the marker landed there)
    emulates: str  # the upstream bug, before its fix
    clears: str  # what ends it


@dataclass(frozen=True)
class ShareTransaction:
    """A transaction holding a share group's records TX_PENDING (KIP-1289), and what becomes of them."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int  # the transaction's transaction.timeout.ms
    group: str
    topic: str
    partition: int
    first_offset: int  # the staged records, first..last, all ACCEPT
    last_offset: int
    share_state_partitions: list[str]  # the group's __share_group_state partition in the transaction
    leader: int  # the share partition's leader when the records were staged
    new_leader: int  # after the scenario (differs from leader only after a move)
    outcome: str  # what happens to the staged records
    clears: str  # what ends it


@dataclass(frozen=True)
class PreparedTransaction:
    """A prepared two-phase-commit transaction (KIP-939): open on a partition, holding its LSO, owned by an
    external transaction manager; live, never hanging, whatever its age."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    topic: str
    partition: int
    start_offset: int
    coordinator_state: str
    clears: str  # what ends it


@dataclass(frozen=True)
class HealthyTransaction:
    transactional_id: str
    producer_id: int
    state: str
    topic: str
    partition: int


@dataclass(frozen=True)
class ScenarioResult:
    name: str
    incident: str
    topics: list[str]
    hanging: list[HangingTransaction] = field(default_factory=list)
    healthy: list[HealthyTransaction] = field(default_factory=list)
    stuck: list[StuckTransaction] = field(default_factory=list)
    share: list[ShareTransaction] = field(default_factory=list)
    prepared: list[PreparedTransaction] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ScenarioOptions:
    topic_prefix: str = "scenario"
    backdate_ms: int = 0
    healthy: bool = True
    zombie_timeout_ms: int = 1000  # the zombie's transaction.timeout.ms
    open_timeout_ms: int = 600000  # the healthy open transaction's timeout (within transaction.max.timeout.ms)
    wait_s: float = 60.0  # how long to wait for the coordinator's timeout abort
    replication_factor: int | None = None  # default: min(3, brokers)
    # An existing topic of PARTITIONS partitions or more to use instead of a fresh one (a soak that rotates over a
    # fixed set of topics); its transactional ids are still fresh.
    topic: str | None = None
    # The scenarios that stop a broker (commit-marker-skipped) need a hand on the nodes: an EmbeddedCluster.
    nodes: NodeControl | None = None


class _Run:
    """One scenario run: a client, a fresh topic and unique transactional ids."""

    def __init__(self, client: RawKafkaClient, name: str, options: ScenarioOptions) -> None:
        self.client = client
        self.options = options
        self.run_id = uuid.uuid4().hex[:8]
        if options.topic is not None:
            self.topic = options.topic
            return
        self.topic = f"{options.topic_prefix}-{name}-{self.run_id}"
        rf = options.replication_factor or min(3, client.broker_count())
        client.create_topic(self.topic, PARTITIONS, rf)
        self._wait_for_leaders()

    def _wait_for_leaders(self) -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            leaders = self.client.partition_leaders(self.topic)
            if len(leaders) == PARTITIONS and all(v >= 0 for v in leaders.values()):
                return
            time.sleep(0.2)
        raise ScenarioError(f"topic {self.topic} has no leaders after 30 s")

    def txn_id(self, role: str) -> str:
        return f"{self.options.topic_prefix}-{self.run_id}-{role}"

    def now(self) -> int:
        return int(time.time() * 1000)

    def inject(self, bug: str, txn_id: str) -> None:
        """Switch the embedded broker's fault injection on for `txn_id` alone (kafka_txn_broker/txn/faults.py)."""
        code, message = self.client.set_broker_configs(
            {"fault.injection": bug, "fault.injection.transactional.id.prefix": txn_id})
        if code != E.NONE:
            raise ScenarioPrevented(
                f"the broker refused fault.injection={bug} ({E.name(code)}: {message}): this scenario emulates an "
                "upstream bug with the embedded broker's test-only fault injection, which Apache Kafka does not have")

    def begin(self, role: str, timeout_ms: int = 60000) -> tuple[str, ProducerIdAndEpoch]:
        txn_id = self.txn_id(role)
        code, pe = _retry(lambda: self.client.init_producer_id(txn_id, timeout_ms))
        _check(code, f"InitProducerId for {txn_id}")
        return txn_id, pe

    def add(self, txn_id: str, pe: ProducerIdAndEpoch, partition: int) -> int:
        return _retry(lambda: (self.client.add_partitions(txn_id, pe, self.topic, [partition]), None))[0]

    def produce(self, txn_id: str, pe: ProducerIdAndEpoch, partition: int, seq: int, values: list[bytes],
                timestamp_ms: int | None = None) -> tuple[int, int]:
        ts = self.now() if timestamp_ms is None else timestamp_ms
        return self.client.produce_transactional(txn_id, pe, self.topic, partition, seq, values, ts)

    def end(self, txn_id: str, pe: ProducerIdAndEpoch, commit: bool) -> None:
        _check(_retry(lambda: (self.client.end_txn(txn_id, pe, commit), None))[0], f"EndTxn for {txn_id}")

    def describe(self, txn_id: str) -> Any:
        return self.client.describe_transaction(txn_id)

    def hanging(self, txn_id: str, pe: ProducerIdAndEpoch, offset: int) -> HangingTransaction:
        d = self.describe(txn_id)
        parts = sorted(f"{t.topic}-{p}" for t in (d.topics or []) for p in t.partitions)
        return HangingTransaction(self.topic, HANGING_PARTITION, pe.producer_id, pe.epoch, offset, txn_id,
                                  d.transaction_state if d.error_code == 0 else E.name(d.error_code), parts)


def _retry(step: Callable[[], tuple[int, Any]], attempts: int = 50) -> tuple[int, Any]:
    """Retry a coordinator step on the retriable errors clients retry (coordinator moving, loading)."""
    retriable = {E.COORDINATOR_LOAD_IN_PROGRESS, E.COORDINATOR_NOT_AVAILABLE, E.NOT_COORDINATOR,
                 E.CONCURRENT_TRANSACTIONS}
    result = step()
    for _ in range(attempts):
        if result[0] not in retriable:
            break
        time.sleep(0.1)
        result = step()
    return result


def _check(code: int, what: str) -> None:
    if code != E.NONE:
        raise ScenarioError(f"{what} failed with {E.name(code)}")


def _check_write(code: int, what: str) -> None:
    if code in _VERIFICATION_REFUSALS:
        raise ScenarioPrevented(
            f"{what} was refused with {E.name(code)}: the broker verifies transactional writes "
            "(transaction.partition.verification.enable=true), which prevents this incident. Run it against a "
            "broker started with --set transaction.partition.verification.enable=false.")
    _check(code, what)


# ---- healthy transactions -----------------------------------------------------------------------
def _healthy_mix(run: _Run) -> list[HealthyTransaction]:
    out = []
    for role, commit in (("committed", True), ("aborted", False)):
        txn_id, pe = run.begin(role)
        _check(run.add(txn_id, pe, HEALTHY_PARTITION), f"AddPartitionsToTxn for {txn_id}")
        _check(run.produce(txn_id, pe, HEALTHY_PARTITION, 0, [f"{role}-{i}".encode() for i in range(3)])[0],
               f"Produce for {txn_id}")
        run.end(txn_id, pe, commit)
        ended = S.COMPLETE_COMMIT if commit else S.COMPLETE_ABORT
        out.append(HealthyTransaction(txn_id, pe.producer_id, ended.state_name, run.topic, HEALTHY_PARTITION))
    # Open and within its timeout: it holds p2's LSO back, legitimately, until it ends or times out.
    txn_id, pe = run.begin("open", run.options.open_timeout_ms)
    _check(run.add(txn_id, pe, OPEN_PARTITION), f"AddPartitionsToTxn for {txn_id}")
    _check(run.produce(txn_id, pe, OPEN_PARTITION, 0, [b"open-0", b"open-1"])[0], f"Produce for {txn_id}")
    out.append(HealthyTransaction(txn_id, pe.producer_id, S.ONGOING.state_name, run.topic, OPEN_PARTITION))
    return out


# ---- the incidents --------------------------------------------------------------------------------
def late_write_after_abort(run: _Run) -> HangingTransaction:
    """KIP-890's motivating case (KAFKA-14402 family): a producer's Produce request is delayed in the
    network; the client times it out and aborts (EndTxn ABORT, markers written at the same epoch); then
    the delayed request lands. Same producer id, same epoch, sequence 0 after the marker: the leader
    takes it as the start of a new transaction that the coordinator (CompleteAbort, no partitions)
    never hears of. Its LSO is stuck until someone aborts it by hand."""
    txn_id, pe = run.begin("late-write")
    _check(run.add(txn_id, pe, HANGING_PARTITION), f"AddPartitionsToTxn for {txn_id}")
    created = run.now() - run.options.backdate_ms  # the request was built before the client gave up
    run.end(txn_id, pe, commit=False)
    # EndTxn answers once PREPARE_ABORT is written; the markers follow asynchronously (on Apache Kafka, as in
    # production). A write landing before its marker would be aborted by it: the late write comes after.
    _wait(run, lambda: _aborted_at(run, txn_id, pe.epoch), f"the abort markers of {txn_id}")
    code, offset = run.produce(txn_id, pe, HANGING_PARTITION, 0, [b"late-0", b"late-1"], created)
    _check_write(code, f"the delayed Produce of {txn_id}")
    return run.hanging(txn_id, pe, offset)


def zombie_after_timeout(run: _Run) -> HangingTransaction:
    """A producer starts a transaction and freezes (GC pause, VM migration, stopped container) past its
    transaction.timeout.ms. The coordinator's reaper fences it (epoch + 1) and aborts the transaction.
    The zombie wakes up and sends its next write, to a partition new to the transaction, together with
    the AddPartitionsToTxn for it without waiting for the answer (pipelined, as its buffered batches
    were). The coordinator refuses the add (PRODUCER_FENCED); the leader, not verifying, appends the
    write at the old epoch: an open transaction of a fenced producer on a partition the coordinator
    never had in the transaction (the KIP-664 motivation, KAFKA-9144-style reports)."""
    txn_id, pe = run.begin("zombie", run.options.zombie_timeout_ms)
    _check(run.add(txn_id, pe, OWN_PARTITION), f"AddPartitionsToTxn for {txn_id}")
    _check(run.produce(txn_id, pe, OWN_PARTITION, 0, [b"zombie-0"])[0], f"Produce for {txn_id}")
    created = run.now() - run.options.backdate_ms  # buffered before the pause
    _wait_for_timeout_abort(run, txn_id, pe)
    run.add(txn_id, pe, HANGING_PARTITION)  # PRODUCER_FENCED, which the zombie does not wait for
    code, offset = run.produce(txn_id, pe, HANGING_PARTITION, 0, [b"zombie-late-0", b"zombie-late-1"], created)
    _check_write(code, f"the zombie's Produce of {txn_id}")
    return run.hanging(txn_id, pe, offset)


def _wait_for_timeout_abort(run: _Run, txn_id: str, pe: ProducerIdAndEpoch) -> None:
    deadline = time.monotonic() + run.options.wait_s
    while time.monotonic() < deadline:
        d = run.describe(txn_id)
        if d.error_code == 0 and d.producer_epoch > pe.epoch and d.transaction_state == "CompleteAbort":
            return
        time.sleep(0.2)
    raise ScenarioError(
        f"the coordinator did not abort {txn_id} within {run.options.wait_s:.0f} s of its "
        f"{run.options.zombie_timeout_ms} ms timeout (transaction.abort.timed.out.transaction.cleanup.interval.ms "
        "sets how often it checks)")


def unregistered_partition_commit(run: _Run) -> HangingTransaction:
    """A client writes to a partition it never added with AddPartitionsToTxn (client bugs of this kind
    were reported against several non-Java clients) and commits. The coordinator writes COMMIT markers
    only to the partitions it knows, so the unregistered partition's transaction never ends."""
    txn_id, pe = run.begin("unregistered")
    _check(run.add(txn_id, pe, OWN_PARTITION), f"AddPartitionsToTxn for {txn_id}")
    _check(run.produce(txn_id, pe, OWN_PARTITION, 0, [b"registered-0"])[0], f"Produce for {txn_id}")
    created = run.now() - run.options.backdate_ms
    code, offset = run.produce(txn_id, pe, HANGING_PARTITION, 0, [b"unregistered-0", b"unregistered-1"], created)
    _check_write(code, f"the Produce of {txn_id} to a partition not in its transaction")
    run.end(txn_id, pe, commit=True)
    # The truth is the coordinator's settled view: on Apache Kafka it is PrepareCommit until the markers land.
    _wait(run, lambda: _ended(run, txn_id, S.COMPLETE_COMMIT), f"the commit markers of {txn_id}")
    return run.hanging(txn_id, pe, offset)


# ---- stuck on the coordinator's side (emulated upstream bugs) -------------------------------------------
def marker_retry_rejected(run: _Run) -> StuckTransaction:
    """KAFKA-19999 (fixed by apache/kafka#21176), emulated with the embedded broker's fault injection: a TV2
    producer commits; the coordinator writes PREPARE_COMMIT and the marker, but the marker's response is
    lost, and the leader rejects the retry at the same epoch (INVALID_PRODUCER_EPOCH), which the
    coordinator takes as final. The transaction stays in PrepareCommit with the partition still listed as
    waiting, although its leader shows the marker landed; the producer gets CONCURRENT_TRANSACTIONS forever.
    Cleared by brokers with the fix, then moving the coordinator: here, switching fault.injection off and
    moving the leadership of the transactional id's __transaction_state partition (e.g. restarting its
    leader)."""
    txn_id = run.txn_id("kafka-19999")
    run.inject("KAFKA-19999", txn_id)
    txn_id, pe = run.begin("kafka-19999")
    _check(run.add(txn_id, pe, HANGING_PARTITION), f"AddPartitionsToTxn for {txn_id}")
    _check(run.produce(txn_id, pe, HANGING_PARTITION, 0, [b"prepared-0", b"prepared-1"])[0], f"Produce for {txn_id}")
    code, after = run.client.end_txn_tv2(txn_id, pe, commit=True)
    _check(code, f"EndTxn(COMMIT) v5 for {txn_id}")
    _wait(run, lambda: _marker_landed(run, txn_id, after), f"the coordinator of {txn_id} to give up its marker")
    return StuckTransaction(txn_id, S.PREPARE_COMMIT.state_name, after.producer_id, after.epoch, "markers-pending",
                            [f"{run.topic}-{HANGING_PARTITION}"], "marker-rejected", -1, "KAFKA-19999",
                            "fault.injection off (brokers with the fix), then move the coordinator")


def _marker_landed(run: _Run, txn_id: str, after: ProducerIdAndEpoch) -> bool:
    d = run.describe(txn_id)
    if d.error_code or d.transaction_state != S.PREPARE_COMMIT.state_name or not d.topics:
        return False
    entry = run.client.describe_producer(run.topic, HANGING_PARTITION, after.producer_id)
    return entry is not None and entry.producer_epoch == after.epoch and entry.current_txn_start_offset < 0


def epoch_exhaustion(run: _Run) -> StuckTransaction:
    """KAFKA-20090 (fixed by apache/kafka#21506 and #21469), emulated with the embedded broker's fault
    injection. A producer restarts until its epoch is Short.MAX_VALUE - 1 (32766 InitProducerId bumps
    through the protocol), opens a transaction and stalls past its timeout. The coordinator fences it to
    Short.MAX_VALUE and aborts without moving to the next producer id; the producer's delayed EndTxn(ABORT)
    is taken as a retry and answered with epoch Short.MAX_VALUE, so it carries on there and opens another
    transaction. That one can never end: the producer's commit would overflow the epoch and the coordinator
    cannot fence Short.MAX_VALUE, so it stays Ongoing and holds the partition's LSO. Cleared by brokers with
    the fix (here: fault.injection off), whose timeout abort then ends it."""
    txn_id = run.txn_id("exhausted")
    run.inject("KAFKA-20090", txn_id)
    timeout = run.options.zombie_timeout_ms
    txn_id, pe = run.begin("exhausted", timeout)
    code, pe = run.client.bump_epoch(txn_id, timeout, MAX_EPOCH - 1 - pe.epoch)
    _check(code, f"the InitProducerId bumps of {txn_id}")
    if pe.epoch != MAX_EPOCH - 1:
        raise ScenarioError(f"{txn_id} reached epoch {pe.epoch} after its bumps, not Short.MAX_VALUE - 1")
    _check(run.add(txn_id, pe, HANGING_PARTITION), f"AddPartitionsToTxn for {txn_id}")
    _check(run.produce(txn_id, pe, HANGING_PARTITION, 0, [b"stalled-0"])[0], f"Produce for {txn_id}")
    _wait(run, lambda: _aborted_at(run, txn_id, MAX_EPOCH), f"the coordinator to abort {txn_id} on its timeout")
    code, resumed = run.client.end_txn_tv2(txn_id, pe, commit=False)  # the delayed abort
    _check(code, f"the delayed EndTxn(ABORT) of {txn_id}")
    _check(run.add(txn_id, resumed, HANGING_PARTITION), f"AddPartitionsToTxn at epoch {resumed.epoch}")
    created = run.now() - run.options.backdate_ms
    code, offset = run.produce(txn_id, resumed, HANGING_PARTITION, 0, [b"last-0", b"last-1"], created)
    _check(code, f"Produce of {txn_id} at epoch {resumed.epoch}")
    return StuckTransaction(txn_id, S.ONGOING.state_name, resumed.producer_id, resumed.epoch, "epoch-exhausted",
                            [f"{run.topic}-{HANGING_PARTITION}"], "open-transaction", offset, "KAFKA-20090",
                            "fault.injection off (coordinators with the fix): the timeout abort ends it")


def _ended(run: _Run, txn_id: str, state: S) -> bool:
    d = run.describe(txn_id)
    return d.error_code == 0 and d.transaction_state == state.state_name


def _aborted_at(run: _Run, txn_id: str, epoch: int) -> bool:
    d = run.describe(txn_id)
    return d.error_code == 0 and d.transaction_state == S.COMPLETE_ABORT.state_name and d.producer_epoch == epoch


def _wait(run: _Run, done: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + run.options.wait_s
    while time.monotonic() < deadline:
        if done():
            return
        time.sleep(0.05)
    raise ScenarioError(f"gave up waiting {run.options.wait_s:.0f} s for {what}")


# ---- KIP-939: a prepared two-phase-commit transaction ---------------------------------------------------------
def two_pc_prepared(run: _Run) -> PreparedTransaction:
    """KIP-939, a prepared two-phase-commit transaction: a producer under an external transaction manager
    (InitProducerId with Enable2Pc: timeout Integer.MAX_VALUE, so the coordinator never aborts it) writes to
    the partition and prepares; the manager has not decided yet, or is down. The transaction holds the
    partition's LSO for as long as it takes: find-hanging lists it as held by its external transaction manager
    (not hanging, and not counted by --exit-code unless --count-held). The manager ends it: it recovers the
    transaction (InitProducerId with KeepPreparedTxn) and commits or aborts it. Needs
    transaction.two.phase.commit.enable=true on the brokers (embedded: --set
    transaction.two.phase.commit.enable=true)."""
    txn_id = run.txn_id("2pc")
    code, pe = _retry(lambda: run.client.init_producer_id_2pc(txn_id))
    if code == E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
        raise ScenarioPrevented("the brokers refused two-phase commit (Enable2Pc: "
                                "TRANSACTIONAL_ID_AUTHORIZATION_FAILED): start them with "
                                "transaction.two.phase.commit.enable=true")
    _check(code, f"InitProducerId (Enable2Pc) for {txn_id}")
    _check(run.add(txn_id, pe, HANGING_PARTITION), f"AddPartitionsToTxn for {txn_id}")
    created = run.now() - run.options.backdate_ms
    code, offset = run.produce(txn_id, pe, HANGING_PARTITION, 0, [b"prepared-0", b"prepared-1"], created)
    _check(code, f"Produce of {txn_id}")
    d = run.describe(txn_id)
    return PreparedTransaction(txn_id, pe.producer_id, pe.epoch, run.topic, HANGING_PARTITION, offset,
                               d.transaction_state if d.error_code == 0 else E.name(d.error_code),
                               "its external transaction manager commits or aborts it (InitProducerId with "
                               "KeepPreparedTxn, then EndTxn); only if that manager is gone for good, kafka-txn abort "
                               "with --force (its decision is lost)")


def complete_prepared(bootstrap_servers: str, truth: PreparedTransaction, commit: bool,
                      transport: Transport | None = None) -> int:
    """Play the external transaction manager of a 2pc-prepared scenario: recover the prepared transaction
    (InitProducerId with Enable2Pc and KeepPreparedTxn) and commit or abort it. The EndTxn's error code."""
    with RawKafkaClient(bootstrap_servers, transport=transport) as client:
        code, pe = _retry(lambda: client.init_producer_id_2pc(truth.transactional_id, keep_prepared=True))
        _check(code, f"InitProducerId (KeepPreparedTxn) for {truth.transactional_id}")
        return _retry(lambda: (client.end_txn(truth.transactional_id, pe, commit), None))[0]


# ---- KIP-1289: transactions holding share-group records ----------------------------------------------------
SHARE_PARTITION = OWN_PARTITION  # the healthy mix leaves p3 alone: the share group reads only the scenario's input
SHARE_INPUTS = 10


def share_ack_producer_dies(run: _Run) -> ShareTransaction:
    """KIP-1289, a read-process-write producer dies mid-transaction: it stages its share consumer's
    acknowledgements (TxnShareAcknowledge, all ACCEPT) and sends nothing more. The records stay TX_PENDING,
    locked to its transaction, until the coordinator's timeout abort (transaction.timeout.ms, here
    --zombie-timeout-ms) writes ABORT markers: the records go back to the member, and, once its acquisition
    lock is over, are delivered again (delivery count 2). Nothing is acknowledged twice or lost."""
    staged = _stage_share(run, "share-dies", run.options.zombie_timeout_ms)
    return staged.truth("redelivered after the coordinator's timeout abort (delivery count 2)",
                        f"the coordinator's timeout abort, {run.options.zombie_timeout_ms} ms after staging")


def share_ack_leadership_move(run: _Run) -> ShareTransaction:
    """KIP-1289, the share partition's leadership moves while acknowledgements are staged. The KIP keeps
    TX_PENDING in the leader's memory only, so a new leader would deliver the records again while the
    transaction can still commit them: processed twice. Here staging is also written in the transaction
    to the group's __share_group_state partition, so the new leader loads the records TX_PENDING (no owner)
    and holds them until the transaction's marker: COMMIT acknowledges them, ABORT (or the timeout) makes
    them deliverable again."""
    staged = _stage_share(run, "share-move", run.options.open_timeout_ms)
    new_leader = move_leader_of(run, staged.leader)
    return staged.truth("held TX_PENDING at the new leader until the transaction ends; not delivered again",
                        f"the transaction's end: its commit, or its abort or timeout ({run.options.open_timeout_ms} "
                        f"ms) delivers them again", new_leader=new_leader)


def share_ack_stalled(run: _Run) -> ShareTransaction:
    """KIP-1289, a stalled transaction holding a share group: a producer stages acknowledgements under a
    long transaction.timeout.ms (--open-timeout-ms) and stalls (GC pause, hung process). The records stay
    TX_PENDING past their acquisition lock (share.record.lock.duration.ms): no member can get them and the
    group's start offset cannot pass them until the transaction ends. TxnPendingLockExpiredCount counts
    them. find-hanging reports the holder (kind "share", from the brokers' metrics: --metrics-url) once it is
    older than the max transaction timeout. Ending the transaction (force-terminate through its coordinator,
    or its timeout) returns them for redelivery."""
    staged = _stage_share(run, "share-stalled", run.options.open_timeout_ms)
    return staged.truth("held TX_PENDING past their lock; the group cannot progress past them",
                        f"end the transaction: kafka-txn force-terminate -t ID --force (its coordinator aborts it; "
                        f"still live, hence --force), or its timeout, {run.options.open_timeout_ms} ms")


@dataclass(frozen=True)
class _Staged:
    run: _Run
    txn_id: str
    pe: ProducerIdAndEpoch
    timeout_ms: int
    group: str
    leader: int

    def truth(self, outcome: str, clears: str, new_leader: int | None = None) -> ShareTransaction:
        d = self.run.describe(self.txn_id)
        state_parts = sorted(f"{t.topic}-{p}" for t in (d.topics or []) for p in t.partitions
                             if t.topic == SHARE_STATE_TOPIC)
        leader = self.leader if new_leader is None else new_leader
        return ShareTransaction(self.txn_id, self.pe.producer_id, self.pe.epoch, self.timeout_ms, self.group,
                                self.run.topic, SHARE_PARTITION, 0, SHARE_INPUTS - 1, state_parts, self.leader,
                                leader, outcome, clears)


def _stage_share(run: _Run, role: str, timeout_ms: int) -> _Staged:
    """Inputs on p3, a member of a fresh share group that acquires them all, and a transaction
    of `role` that stages their ACCEPT acknowledgements."""
    from kafka_txn_broker.testing import share_client as sc

    if not sc.advertises_txn_share_acknowledge(run.client):
        raise ScenarioPrevented("the broker does not offer TxnShareAcknowledge (KIP-1289): start the embedded "
                                "broker with --set share.transactional.acknowledgement.enable=true")
    inputs = [f"in-{i}".encode() for i in range(SHARE_INPUTS)]
    _check(run.client.produce(run.topic, SHARE_PARTITION, inputs, run.now())[0], "Produce of the inputs")
    group = run.txn_id(role + "-group")
    _check(sc.set_group_configs(run.client, group, {"share.auto.offset.reset": "earliest"}),
           f"IncrementalAlterConfigs of share group {group}")
    topic_id, _replicas = sc.topic_layout(run.client, run.topic)
    leader = run.client.partition_leaders(run.topic)[SHARE_PARTITION]
    member = sc.ShareMember(run.client, group, run.txn_id(role + "-member"), run.topic, topic_id, SHARE_PARTITION,
                            leader)
    _wait(run, lambda: (0, SHARE_INPUTS - 1) in member.fetch(), f"share group {group} to acquire the inputs")
    txn_id, pe = run.begin(role, timeout_ms)
    r = sc.txn_share_acknowledge(run.client, leader, txn_id, pe, group, member.member_id, member.epoch,
                                 [(topic_id, SHARE_PARTITION, [(0, SHARE_INPUTS - 1, [sc.ACCEPT])])])
    _check(r.error_code or max(sc.partition_codes(r), default=0), f"TxnShareAcknowledge for {txn_id}")
    return _Staged(run, txn_id, pe, timeout_ms, group, leader)


def move_leader_of(run: _Run, leader: int) -> int:
    from kafka_txn_broker.testing import share_client as sc

    _topic_id, replicas = sc.topic_layout(run.client, run.topic)
    order = [leader, *(n for n in replicas[SHARE_PARTITION] if n != leader)]
    if len(order) < 2:
        raise ScenarioError(f"{run.topic}-{SHARE_PARTITION} has one replica: its leadership cannot move")
    new_leader = sc.move_leader(run.client, run.topic, SHARE_PARTITION, order)
    _wait(run, lambda: run.client.partition_leaders(run.topic)[SHARE_PARTITION] == new_leader,
          f"broker {new_leader} to lead {run.topic}-{SHARE_PARTITION}")
    return new_leader


# ---- a commit completed without one partition's marker (Apache Kafka 4.3+) ----------------------------------
def commit_marker_skipped(run: _Run) -> HangingTransaction:
    """A transaction over two partitions led by different brokers commits while the leader of one is down
    (replication factor 1). From Apache Kafka 4.3 the coordinator finds no leader for that partition, takes it
    for deleted, drops it from the transaction and writes CompleteCommit at once (3.x and 4.0-4.2 retry the
    marker instead: stuck at the coordinator until the broker returns). When the broker comes back, the
    partition holds the open transaction that its coordinator committed: a hang whose end is the COMMIT marker
    (kafka-txn commit), since an abort would discard records the application was told were committed."""
    nodes = run.options.nodes
    assert nodes is not None  # _run_one refuses a scenario that needs_nodes without them
    leaders = run.client.partition_leaders(run.topic)
    victim = leaders[HANGING_PARTITION]
    other = next((p for p in (OWN_PARTITION, HEALTHY_PARTITION, OPEN_PARTITION) if leaders[p] != victim), None)
    if other is None or len(run.client.brokers) < 2:
        raise ScenarioError(f"every partition of {run.topic} has leader {victim}: this scenario needs a cluster of "
                            "two brokers or more and a topic of replication factor 1")
    txn_id, pe = _begin_away_from(run, "committed-skipped", victim)
    for part in (HANGING_PARTITION, other):
        _check(run.add(txn_id, pe, part), f"AddPartitionsToTxn of {run.topic}-{part} for {txn_id}")
    created = run.now() - run.options.backdate_ms  # the stalled consumers see an old transaction at once
    code, offset = run.produce(txn_id, pe, HANGING_PARTITION, 0, [b"committed-0", b"committed-1"], created)
    _check(code, f"Produce of {txn_id} to {run.topic}-{HANGING_PARTITION}")
    _check(run.produce(txn_id, pe, other, 0, [b"committed-elsewhere"])[0], f"Produce of {txn_id} to p{other}")
    addresses = dict(run.client.brokers)
    live = ",".join(f"{h}:{p}" for node, (h, p) in addresses.items() if node != victim)
    nodes.stop_node(victim)
    try:
        with RawKafkaClient(live) as client:
            _check(_retry(lambda: (client.end_txn(txn_id, pe, True), None))[0], f"EndTxn(COMMIT) for {txn_id}")
            _wait_completed(run, client, txn_id, victim)
    finally:
        nodes.start_node(victim)
    host, port = addresses[victim]
    with RawKafkaClient(f"{live},{host}:{port}") as client:  # a live first address: the raw client's bootstrap
        _wait(run, lambda: client.partition_leaders(run.topic)[HANGING_PARTITION] == victim,
              f"broker {victim} to lead {run.topic}-{HANGING_PARTITION} again")
        d = client.describe_transaction(txn_id)
        parts = sorted(f"{t.topic}-{p}" for t in (d.topics or []) for p in t.partitions)
        state = d.transaction_state if d.error_code == 0 else E.name(d.error_code)
    return HangingTransaction(run.topic, HANGING_PARTITION, pe.producer_id, pe.epoch, offset, txn_id, state, parts,
                              "commit")


def _begin_away_from(run: _Run, role: str, broker: int) -> tuple[str, ProducerIdAndEpoch]:
    """A fresh transactional id whose coordinator is not `broker` (it must stay up), begun."""
    for attempt in range(50):
        name = f"{role}-{attempt}" if attempt else role
        if run.client.transaction_coordinator(run.txn_id(name)) != broker:
            return run.begin(name)
    raise ScenarioError(f"every transactional id tried is coordinated by broker {broker}")


def _wait_completed(run: _Run, client: RawKafkaClient, txn_id: str, victim: int) -> None:
    deadline, state = time.monotonic() + run.options.wait_s, "unknown"
    while time.monotonic() < deadline:
        d = client.describe_transaction(txn_id)
        state = d.transaction_state if d.error_code == 0 else E.name(d.error_code)
        if state == S.COMPLETE_COMMIT.state_name:
            return
        time.sleep(0.05)
    raise ScenarioPrevented(
        f"{txn_id} stayed {state} for {run.options.wait_s:.0f} s with broker {victim} down: this "
        "coordinator retries the marker of a partition without a leader (Apache Kafka before 4.3, or the embedded "
        "broker without kafka.version.emulate 4.3 or later); start the brokers with "
        "--set kafka.version.emulate=4.4")


Truth = HangingTransaction | StuckTransaction | ShareTransaction | PreparedTransaction


@dataclass(frozen=True)
class Scenario:
    name: str
    make: Callable[[_Run], Truth]
    replication_factor: int | None = None  # its topic's, unless the options say (default: min(3, brokers))
    needs_nodes: bool = False  # it stops and starts a broker: ScenarioOptions.nodes

    @property
    def incident(self) -> str:
        return " ".join((self.make.__doc__ or "").split())


SCENARIOS: dict[str, Scenario] = {s.name: s for s in (
    Scenario("late-write-after-abort", late_write_after_abort),
    Scenario("zombie-after-timeout", zombie_after_timeout),
    Scenario("unregistered-partition-commit", unregistered_partition_commit),
    Scenario("marker-retry-rejected", marker_retry_rejected),
    Scenario("epoch-exhaustion", epoch_exhaustion),
    Scenario("share-ack-producer-dies", share_ack_producer_dies),
    Scenario("share-ack-leadership-move", share_ack_leadership_move),
    Scenario("share-ack-stalled", share_ack_stalled),
    Scenario("2pc-prepared", two_pc_prepared),
    Scenario("commit-marker-skipped", commit_marker_skipped, replication_factor=1, needs_nodes=True),
)}
ALL = "all"
# KIP-664's class (an open transaction no coordinator will finish; needs verification off), and the TV2-era
# class stuck at the coordinator (needs the embedded broker's fault injection).
PARTITION_SIDE = ("late-write-after-abort", "zombie-after-timeout", "unregistered-partition-commit")
COORDINATOR_SIDE = ("marker-retry-rejected", "epoch-exhaustion")
# KIP-1289's corner cases: need share.transactional.acknowledgement.enable. Not in `all`, which every Kafka
# with the right settings can run.
SHARE_SIDE = ("share-ack-producer-dies", "share-ack-leadership-move", "share-ack-stalled")
GROUPS = {ALL: PARTITION_SIDE + COORDINATOR_SIDE, "partition-side": PARTITION_SIDE,
          "coordinator-side": COORDINATOR_SIDE, "share-side": SHARE_SIDE}


def scenario_names() -> list[str]:
    return [*SCENARIOS, *GROUPS]


def run_scenario(name: str, bootstrap_servers: str, options: ScenarioOptions | None = None,
                 transport: Transport | None = None) -> list[ScenarioResult]:
    """Run one scenario (or a group: `all`, `partition-side`, `coordinator-side`; one topic each) and return the
    ground truth of each. `transport`: how to reach a secured cluster (raw_client.Transport)."""
    opts = options or ScenarioOptions()
    if name not in GROUPS and name not in SCENARIOS:
        raise ScenarioError(f"unknown scenario {name!r}; choose one of {', '.join(scenario_names())}")
    chosen = [SCENARIOS[n] for n in GROUPS.get(name, (name,))]
    with RawKafkaClient(bootstrap_servers, transport=transport) as client:
        return [_run_one(client, s, opts) for s in chosen]


def _run_one(client: RawKafkaClient, scenario: Scenario, options: ScenarioOptions) -> ScenarioResult:
    if scenario.needs_nodes and options.nodes is None:  # refused before its topic is made: nothing is written
        raise ScenarioPrevented(
            f"{scenario.name} stops a partition's leader while the transaction commits, which a client cannot do: "
            "run it in the process of an embedded cluster emulating Apache Kafka 4.3 or later, e.g. from Python: "
            "with EmbeddedCluster(nodes=3, config={'kafka.version.emulate': '4.4'}) as cluster: "
            f"run_scenario('{scenario.name}', cluster.bootstrap_servers, ScenarioOptions(nodes=cluster))")
    if options.replication_factor is None and scenario.replication_factor is not None:
        options = replace(options, replication_factor=scenario.replication_factor)
    run = _Run(client, scenario.name, options)
    healthy = _healthy_mix(run) if options.healthy else []
    truth = scenario.make(run)
    if isinstance(truth, ShareTransaction):
        return ScenarioResult(scenario.name, scenario.incident, [run.topic], [], healthy, [], [truth])
    if isinstance(truth, PreparedTransaction):
        return ScenarioResult(scenario.name, scenario.incident, [run.topic], [], healthy, prepared=[truth])
    if isinstance(truth, StuckTransaction):
        return ScenarioResult(scenario.name, scenario.incident, [run.topic], [], healthy, [truth])
    return ScenarioResult(scenario.name, scenario.incident, [run.topic], [truth], healthy)
