"""The request sequences sent to both clusters: one Case per behaviour the CLI relies on, each with its own
topics and transactional ids (prefixed by the case's name).

A case sends its requests through `Session.send`; every answer it sends with `record=True` (the default) is
compared between the clusters. Setup steps that must succeed use the helpers (`create_topic`, `coordinator`),
whose answers are checked, not compared.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import kafka_txn_broker.formats.messages as m
from kafka_txn_broker.formats.record_batch import build_batch
from tests.external.fidelity.normalise import normalise, plain
from tests.external.fidelity.runner import Case, CaseFailed, Exchange, Session

TXN, GROUP = 1, 0  # FindCoordinator key types
LATEST, EARLIEST = -1, -2
READ_UNCOMMITTED, READ_COMMITTED = 0, 1
TIMEOUT_MS = 60_000
NOW_MS = 1_700_000_000_000  # record timestamps: normalised anyway, fixed for readability


@dataclass
class Producer:
    """A transactional producer played by hand: its id, epoch and next sequence per partition."""

    session: Session
    transactional_id: str
    producer_id: int = -1
    epoch: int = -1

    def init(self, label: str = "InitProducerId", record: bool = True) -> Any:
        node = self.session.coordinator(self.transactional_id, TXN)
        a = self.session.send("InitProducerId", label=label, to=node, record=record,
                              transactional_id=self.transactional_id, transaction_timeout_ms=TIMEOUT_MS,
                              producer_id=-1, producer_epoch=-1)
        if a.error_code == 0:
            self.producer_id, self.epoch = a.producer_id, a.producer_epoch
        return a

    def produce(self, topic: str, partition: int, values: int, sequence: int = 0, label: str = "Produce",
                record: bool = True, version: int | None = None) -> Any:
        """Produce at the negotiated version: v12+ adds the partition to the transaction (KIP-890)."""
        s = self.session
        batch = build_batch([(None, b"v%d" % i) for i in range(values)], timestamp_ms=NOW_MS,
                            producer_id=self.producer_id, producer_epoch=self.epoch, base_sequence=sequence,
                            transactional=True)
        D = m.ProduceRequest.TopicProduceData
        v = s.version("Produce") if version is None else version
        topic_fields: dict[str, Any] = {"topic_id": s.topic_id(topic)} if v >= 13 else {"name": topic}
        return s.send("Produce", label=label, record=record, to=s.leader(topic, partition), version=v,
                      transactional_id=self.transactional_id, acks=-1, timeout_ms=30000,
                      topic_data=[D(**topic_fields, partition_data=[D.PartitionProduceData(index=partition,
                                                                                           records=batch)])])

    def end(self, commit: bool, label: str = "EndTxn", record: bool = True, epoch: int | None = None) -> Any:
        node = self.session.coordinator(self.transactional_id, TXN)
        a = self.session.send("EndTxn", label=label, to=node, record=record, transactional_id=self.transactional_id,
                              producer_id=self.producer_id,
                              producer_epoch=self.epoch if epoch is None else epoch, committed=commit)
        if a.error_code == 0 and self.session.version("EndTxn") >= 5:
            self.producer_id, self.epoch = a.producer_id, a.producer_epoch  # KIP-890: the bumped epoch
        return a

    def open(self, topic: str, partitions: list[int], values: int = 2) -> None:
        """An ongoing transaction holding `values` records on each partition (setup: answers checked, retriable
        errors retried as a client does: a coordinator still loading, a leader not yet known)."""
        codes: list[int] = []
        self.session.wait(lambda: _ok(codes, self.init(record=False).error_code),
                          f"InitProducerId {self.transactional_id} (last errors {codes[-3:]})")
        if self.session.version("Produce") < 12:  # before KIP-890 part 2 the client adds the partitions itself
            self.session.wait(lambda: _ok(codes, self.add(topic, partitions)),
                              f"AddPartitionsToTxn {self.transactional_id} (last errors {codes[-3:]})")
        for p in partitions:
            self.session.wait(lambda p=p: _ok(codes, self.produce(topic, p, values, record=False)  # type: ignore[misc]
                                              .responses[0].partition_responses[0].error_code),
                              f"Produce to {topic}-{p} (last errors {codes[-3:]})")

    def add(self, topic: str, partitions: list[int]) -> int:
        """AddPartitionsToTxn as a client sends it (v3 at most): the first partition error, or 0."""
        A = m.AddPartitionsToTxnRequest
        a = self.session.send("AddPartitionsToTxn", record=False, to=self.session.coordinator(
            self.transactional_id, TXN), version=min(3, self.session.version("AddPartitionsToTxn")),
            v3_and_below_transactional_id=self.transactional_id, v3_and_below_producer_id=self.producer_id,
            v3_and_below_producer_epoch=self.epoch,
            v3_and_below_topics=[A.AddPartitionsToTxnTopic(name=topic, partitions=partitions)])
        return next((r.partition_error_code for t in a.results_by_topic_v3_and_below for r in t.results_by_partition
                     if r.partition_error_code), 0)

    def complete(self) -> None:
        """Until the coordinator has written every marker (Complete*: Kafka answers EndTxn before that)."""
        def done() -> bool:
            a = self.session.send("DescribeTransactions", record=False, to=self.session.coordinator(
                self.transactional_id, TXN), transactional_ids=[self.transactional_id])
            return str(a.transaction_states[0].transaction_state).startswith("Complete")

        self.session.wait(done, f"{self.transactional_id} to complete")


RETRIABLE = frozenset({6, 14, 15, 16, 51})  # not leader, coordinator loading / not available / not it, concurrent


def _ok(codes: list[int], code: int) -> bool:
    codes.append(code)
    if code and code not in RETRIABLE:
        raise CaseFailed(f"error {code} (not retriable)")
    return code == 0


# ---- request builders --------------------------------------------------------------------------------
def list_offsets(s: Session, topic: str, partitions: list[int], timestamp: int, isolation: int,
                 label: str, record: bool = True) -> Any:
    T = m.ListOffsetsRequest.ListOffsetsTopic
    parts = [T.ListOffsetsPartition(partition_index=p, current_leader_epoch=-1, timestamp=timestamp)
             for p in partitions]
    return s.send("ListOffsets", label=label, record=record, to=s.leader(topic, 0), replica_id=-1,
                  isolation_level=isolation, topics=[T(name=topic, partitions=parts)], timeout_ms=30000)


def describe_producers(s: Session, topic: str, partitions: list[int], label: str = "DescribeProducers",
                       to: int | None = None) -> Any:
    T = m.DescribeProducersRequest.TopicRequest
    return s.send("DescribeProducers", label=label, to=s.leader(topic, 0) if to is None else to,
                  topics=[T(name=topic, partition_indexes=partitions)])


def describe_txns(s: Session, ids: list[str], label: str = "DescribeTransactions") -> Any:
    return s.send("DescribeTransactions", label=label, to=s.coordinator(ids[0], TXN), transactional_ids=ids)


def list_txns(s: Session, label: str, pattern: str | None = None, states: list[str] | None = None,
              pids: list[int] | None = None, duration: int = -1) -> Any:
    fields: dict[str, Any] = {"state_filters": states or [], "producer_id_filters": pids or []}
    if s.version("ListTransactions") >= 1:
        fields["duration_filter"] = duration
    if s.version("ListTransactions") >= 2:
        fields["transactional_id_pattern"] = pattern
    return s.send("ListTransactions", label=label, **fields)


def marker(s: Session, topic: str, partitions: list[int], producer_id: int, epoch: int, coordinator_epoch: int,
           commit: bool = False, label: str = "WriteTxnMarkers", to: int | None = None) -> Any:
    W = m.WriteTxnMarkersRequest.WritableTxnMarker
    fields: dict[str, Any] = {"producer_id": producer_id, "producer_epoch": epoch, "transaction_result": commit,
                              "coordinator_epoch": coordinator_epoch,
                              "topics": [W.WritableTxnMarkerTopic(name=topic, partition_indexes=partitions)]}
    if s.version("WriteTxnMarkers") >= 2:
        fields["transaction_version"] = 0  # an admin abort carries no transaction version (KIP-1228)
    return s.send("WriteTxnMarkers", label=label, to=s.leader(topic, partitions[0]) if to is None else to,
                  markers=[W(**fields)])


def add_partitions(s: Session, p: Producer, topic: str, partitions: list[int], label: str = "AddPartitionsToTxn",
                   version: int | None = None, epoch: int | None = None, producer_id: int | None = None) -> Any:
    v = s.version("AddPartitionsToTxn") if version is None else version
    pid = p.producer_id if producer_id is None else producer_id
    e = p.epoch if epoch is None else epoch
    A = m.AddPartitionsToTxnRequest
    topics = [A.AddPartitionsToTxnTopic(name=topic, partitions=partitions)]
    node = s.coordinator(p.transactional_id, TXN)
    if v >= 4:
        return s.send("AddPartitionsToTxn", label=label, version=v, to=node, transactions=[
            A.AddPartitionsToTxnTransaction(transactional_id=p.transactional_id, producer_id=pid, producer_epoch=e,
                                            verify_only=False, topics=topics)])
    return s.send("AddPartitionsToTxn", label=label, version=v, to=node,
                  v3_and_below_transactional_id=p.transactional_id, v3_and_below_producer_id=pid,
                  v3_and_below_producer_epoch=e, v3_and_below_topics=topics)


def commit_offsets(s: Session, group: str, topic: str, offsets: dict[int, int], label: str = "OffsetCommit",
                   record: bool = True) -> Any:
    T = m.OffsetCommitRequest.OffsetCommitRequestTopic
    v = s.version("OffsetCommit")
    parts = [T.OffsetCommitRequestPartition(partition_index=p, committed_offset=o, committed_leader_epoch=-1,
                                            committed_metadata="") for p, o in offsets.items()]
    topic_fields: dict[str, Any] = {"topic_id": s.topic_id(topic)} if v >= 10 else {"name": topic}
    return s.send("OffsetCommit", label=label, record=record, to=s.coordinator(group, GROUP), group_id=group,
                  generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
                  topics=[T(**topic_fields, partitions=parts)])


def fetch_offsets(s: Session, group: str, topic: str | None, partitions: list[int], label: str = "OffsetFetch",
                  version: int | None = None) -> Any:
    v = s.version("OffsetFetch") if version is None else version
    node = s.coordinator(group, GROUP)
    R = m.OffsetFetchRequest
    if v >= 8:
        G = R.OffsetFetchRequestGroup
        topics = None if topic is None else [G.OffsetFetchRequestTopics(name=topic, partition_indexes=partitions)]
        return s.send("OffsetFetch", label=label, version=v, to=node, require_stable=True,
                      groups=[G(group_id=group, member_id=None, member_epoch=-1, topics=topics)])
    topics = None if topic is None else [R.OffsetFetchRequestTopic(name=topic, partition_indexes=partitions)]
    return s.send("OffsetFetch", label=label, version=v, to=node, group_id=group, topics=topics,
                  require_stable=v >= 7)


# ---- the cases -----------------------------------------------------------------------------------------
def first_find_coordinator(s: Session) -> None:
    """The very first transactional FindCoordinator of a fresh cluster: Kafka creates __transaction_state and
    answers COORDINATOR_NOT_AVAILABLE until it has a leader."""
    s.send("FindCoordinator", label="FindCoordinator first txn key", version=3, key="fc-first", key_type=TXN)


def find_coordinator(s: Session) -> None:
    s.coordinator("fc-warm", TXN)
    s.coordinator("fc-warm", GROUP)
    s.send("FindCoordinator", label="txn v3", key="fc-a", key_type=TXN)
    s.send("FindCoordinator", label="group v3", key="fc-g", key_type=GROUP)
    s.send("FindCoordinator", label="batched txn", version=s.versions["FindCoordinator.batched"],
           key_type=TXN, coordinator_keys=["fc-a", "fc-b"])
    s.send("FindCoordinator", label="bad key type", key="fc-x", key_type=7)


def metadata(s: Session) -> None:
    s.create_topic("md-topic", 2)
    M = m.MetadataRequest
    s.send("Metadata", label="known topic", topics=[M.MetadataRequestTopic(name="md-topic")],
           allow_auto_topic_creation=False, include_topic_authorized_operations=False)
    s.send("Metadata", label="unknown topic", topics=[M.MetadataRequestTopic(name="md-missing")],
           allow_auto_topic_creation=False, include_topic_authorized_operations=False)
    s.send("Metadata", label="no topics", topics=[], allow_auto_topic_creation=False,
           include_topic_authorized_operations=False)


def list_offsets_plain(s: Session) -> None:
    s.create_topic("lo-plain", 2)
    p = Producer(s, "lo-plain-app")
    p.open("lo-plain", [0], values=3)
    p.end(commit=True, record=False)
    p.complete()
    list_offsets(s, "lo-plain", [0, 1], LATEST, READ_UNCOMMITTED, "latest")
    list_offsets(s, "lo-plain", [0, 1], EARLIEST, READ_UNCOMMITTED, "earliest")
    list_offsets(s, "lo-plain", [0], LATEST, READ_COMMITTED, "latest committed after commit")
    list_offsets(s, "lo-plain", [0], -3, READ_UNCOMMITTED, "max timestamp")


def list_offsets_lso(s: Session) -> None:
    """The LSO: read_committed stops at the first offset of the open transaction."""
    s.create_topic("lo-lso", 1)
    p = Producer(s, "lo-lso-app")
    p.open("lo-lso", [0], values=3)
    list_offsets(s, "lo-lso", [0], LATEST, READ_UNCOMMITTED, "high watermark")
    list_offsets(s, "lo-lso", [0], LATEST, READ_COMMITTED, "LSO with open txn")
    p.end(commit=False, record=False)
    s.wait(lambda: list_offsets(s, "lo-lso", [0], LATEST, READ_COMMITTED, "", record=False
                                ).topics[0].partitions[0].offset == 4, "the abort marker to land")
    list_offsets(s, "lo-lso", [0], LATEST, READ_COMMITTED, "LSO after abort")


def list_offsets_errors(s: Session) -> None:
    s.create_topic("lo-err", 1)
    list_offsets(s, "lo-err", [5], LATEST, READ_COMMITTED, "unknown partition")
    T = m.ListOffsetsRequest.ListOffsetsTopic
    s.send("ListOffsets", label="unknown topic", replica_id=-1, isolation_level=READ_COMMITTED, timeout_ms=30000,
           topics=[T(name="lo-missing", partitions=[T.ListOffsetsPartition(partition_index=0,
                                                                            current_leader_epoch=-1,
                                                                            timestamp=LATEST)])])
    s.send("ListOffsets", label="fenced leader epoch", replica_id=-1, isolation_level=READ_COMMITTED,
           timeout_ms=30000, topics=[T(name="lo-err", partitions=[T.ListOffsetsPartition(
               partition_index=0, current_leader_epoch=99, timestamp=LATEST)])])


def describe_producers_open(s: Session) -> None:
    s.create_topic("dp-open", 2)
    p = Producer(s, "dp-open-app")
    p.open("dp-open", [0], values=2)
    describe_producers(s, "dp-open", [0, 1], "open txn on p0, nothing on p1")
    p.end(commit=True, record=False)
    p.complete()
    describe_producers(s, "dp-open", [0], "after commit")


def describe_producers_errors(s: Session) -> None:
    s.create_topic("dp-err", 1)
    describe_producers(s, "dp-err", [3], "unknown partition")
    T = m.DescribeProducersRequest.TopicRequest
    s.send("DescribeProducers", label="unknown topic", topics=[T(name="dp-missing", partition_indexes=[0])])


def transactions_admin(s: Session) -> None:
    s.create_topic("tx-adm", 2)
    p = Producer(s, "tx-adm-app")
    p.open("tx-adm", [0, 1], values=1)
    idle = Producer(s, "tx-adm-idle")
    idle.init(label="InitProducerId idle")
    describe_txns(s, ["tx-adm-app"], "ongoing")
    describe_txns(s, ["tx-adm-idle"], "empty")
    describe_txns(s, ["tx-adm-unknown"], "unknown id")
    if s.version("ListTransactions") >= 2:
        list_txns(s, "pattern", pattern="tx-adm-.*")
        list_txns(s, "pattern + Ongoing", pattern="tx-adm-.*", states=["Ongoing"])
        list_txns(s, "bad regex", pattern="tx-adm-(")
    list_txns(s, "pid filter", pids=[p.producer_id])
    list_txns(s, "unknown state filter", pids=[p.producer_id], states=["Ongoing", "Bogus"])
    list_txns(s, "duration filter", pids=[p.producer_id], duration=3_600_000)
    p.end(commit=True, record=False)
    p.complete()
    describe_txns(s, ["tx-adm-app"], "after commit")
    list_txns(s, "after commit", pids=[p.producer_id])


def init_producer_id(s: Session) -> None:
    p = Producer(s, "ipi-app")
    p.init(label="new id")
    p.init(label="again: epoch bump")
    node = s.coordinator("ipi-app", TXN)
    s.send("InitProducerId", label="with current pid/epoch", to=node, transactional_id="ipi-app",
           transaction_timeout_ms=TIMEOUT_MS, producer_id=p.producer_id, producer_epoch=p.epoch)
    s.send("InitProducerId", label="stale epoch", to=node, transactional_id="ipi-app",
           transaction_timeout_ms=TIMEOUT_MS, producer_id=p.producer_id, producer_epoch=0)
    s.send("InitProducerId", label="wrong pid", to=node, transactional_id="ipi-app",
           transaction_timeout_ms=TIMEOUT_MS, producer_id=p.producer_id + 1000, producer_epoch=0)
    s.send("InitProducerId", label="timeout too large", to=node, transactional_id="ipi-big",
           transaction_timeout_ms=3_600_000 * 24, producer_id=-1, producer_epoch=-1)
    s.send("InitProducerId", label="idempotent (no txn id)", transactional_id=None,
           transaction_timeout_ms=TIMEOUT_MS, producer_id=-1, producer_epoch=-1)


def add_partitions_cases(s: Session) -> None:
    s.create_topic("apt", 2)
    p = Producer(s, "apt-app")
    p.init(record=False)
    add_partitions(s, p, "apt", [0], "v3 ok", version=3)
    add_partitions(s, p, "apt", [0, 1], "negotiated ok")
    add_partitions(s, p, "apt", [7], "unknown partition", version=3)
    add_partitions(s, p, "apt-missing", [0], "unknown topic", version=3)
    add_partitions(s, p, "apt", [1], "stale epoch", version=3, epoch=p.epoch - 1 if p.epoch > 0 else 5)
    add_partitions(s, p, "apt", [1], "wrong producer id", version=3, producer_id=p.producer_id + 1000)
    unknown = Producer(s, "apt-nobody", producer_id=p.producer_id, epoch=p.epoch)
    add_partitions(s, unknown, "apt", [0], "unknown transactional id", version=3)


def end_txn_cases(s: Session) -> None:
    s.create_topic("et", 1)
    p = Producer(s, "et-app")
    p.open("et", [0])
    p.end(commit=True, label="commit")
    p.complete()
    describe_txns(s, ["et-app"], "after commit")
    p.open("et", [0])
    p.end(commit=False, label="abort")
    p.complete()
    p.end(commit=True, label="commit after abort (invalid txn state)")
    p.end(commit=False, label="abort again")
    q = Producer(s, "et-fenced")
    q.open("et", [0])
    old = q.epoch
    q.init(label="InitProducerId fences the open txn")  # CONCURRENT_TRANSACTIONS while it aborts the open one
    s.wait(lambda: q.init(record=False).error_code == 0, "the fencing abort to complete")
    q.end(commit=True, label="commit with fenced epoch", epoch=old)
    empty = Producer(s, "et-empty")
    empty.init(record=False)
    empty.end(commit=True, label="commit with no partitions")
    ghost = Producer(s, "et-ghost", producer_id=p.producer_id, epoch=0)
    ghost.end(commit=True, label="unknown transactional id")


def produce_unverified(s: Session) -> None:
    """A transactional write to a partition never added to the transaction, by a client before KIP-890 part 2
    (Produce v11 at most): a leader that verifies (Kafka 3.6+) refuses it; older ones append it (the way
    partitions used to hang)."""
    s.create_topic("pu", 1)
    p = Producer(s, "pu-app")
    codes: list[int] = []
    s.wait(lambda: _ok(codes, p.init(record=False).error_code), "InitProducerId pu-app")
    v = min(11, s.version("Produce"))
    # Kafka's leader may first answer NOT_LEADER_OR_FOLLOWER (6) while it reaches the coordinator; a client
    # retries that, and so does the case, until the verification's own answer.
    s.wait(lambda: p.produce("pu", 0, 1, version=v, record=False).responses[0].partition_responses[0].error_code
           != 6, "the leader to reach the coordinator")
    p.produce("pu", 0, 1, label="Produce v11- without AddPartitionsToTxn", version=v)
    describe_producers(s, "pu", [0], "DescribeProducers after it")
    p.end(commit=False, record=False)


def concurrent_transactions(s: Session) -> None:
    """InitProducerId while the transaction is ongoing: the coordinator aborts it first, and the client is
    told to retry while the abort completes (CONCURRENT_TRANSACTIONS), then gets a new epoch."""
    s.create_topic("ct", 1)
    p = Producer(s, "ct-app")
    p.open("ct", [0])
    first = p.init(label="InitProducerId during ongoing txn")
    if first.error_code:
        s.wait(lambda: p.init(record=False).error_code == 0, "the abort to complete")
    describe_txns(s, ["ct-app"], "after the abort")


def write_markers(s: Session) -> None:
    """The CLI's admin abort: DescribeProducers on the leader, then WriteTxnMarkers(ABORT) with what it said."""
    s.create_topic("wm", 2)
    p = Producer(s, "wm-app")
    p.open("wm", [0, 1], values=2)
    found = describe_producers(s, "wm", [0], "before the abort")
    st = found.topics[0].partitions[0].active_producers[0]
    marker(s, "wm", [0], st.producer_id, st.producer_epoch, max(st.coordinator_epoch, 0), label="abort p0")
    describe_producers(s, "wm", [0, 1], "after the abort")
    list_offsets(s, "wm", [0, 1], LATEST, READ_COMMITTED, "LSO after the abort")
    marker(s, "wm", [0], st.producer_id, st.producer_epoch, max(st.coordinator_epoch, 0),
           label="abort p0 again (no open txn)")
    marker(s, "wm", [1], st.producer_id, st.producer_epoch - 1 if st.producer_epoch > 0 else 0,
           max(st.coordinator_epoch, 0), label="older producer epoch")
    marker(s, "wm", [9], st.producer_id, st.producer_epoch, 0, label="unknown partition", to=s.leader("wm", 0))
    marker(s, "wm", [1], 987_654_321, 0, 0, label="producer never seen")
    p.end(commit=False, record=False)


def write_markers_unknown_topic(s: Session) -> None:
    W = m.WriteTxnMarkersRequest.WritableTxnMarker
    fields: dict[str, Any] = {"producer_id": 1, "producer_epoch": 0, "transaction_result": False,
                              "coordinator_epoch": 0,
                              "topics": [W.WritableTxnMarkerTopic(name="wm-missing", partition_indexes=[0])]}
    if s.version("WriteTxnMarkers") >= 2:
        fields["transaction_version"] = 0
    s.send("WriteTxnMarkers", label="unknown topic", markers=[W(**fields)])


def group_offsets(s: Session) -> None:
    s.create_topic("go", 2)
    s.wait(lambda: commit_offsets(s, "go-group", "go", {0: 5, 1: 7}, record=False).topics[0].partitions[0].error_code
           == 0, "the group coordinator to load")
    commit_offsets(s, "go-group", "go", {0: 5, 1: 7}, "commit (simple)")
    commit_offsets(s, "go-group", "go-missing", {0: 1}, "commit unknown topic")
    fetch_offsets(s, "go-group", "go", [0, 1], "fetch v7 single", version=min(7, s.version("OffsetFetch")))
    fetch_offsets(s, "go-group", None, [], "fetch all v7", version=min(7, s.version("OffsetFetch")))
    if s.versions.get("OffsetFetch.batched", 0) >= 8:
        fetch_offsets(s, "go-group", "go", [0, 1], "fetch batched", version=s.versions["OffsetFetch.batched"])
    fetch_offsets(s, "go-nobody", "go", [0], "fetch unknown group", version=min(7, s.version("OffsetFetch")))
    node = s.coordinator("go-group", GROUP)
    s.send("DescribeGroups", label="describe", to=node, groups=["go-group"], include_authorized_operations=False)
    s.send("DescribeGroups", label="describe unknown", to=node, groups=["go-nobody"],
           include_authorized_operations=False)
    fields: dict[str, Any] = {}
    if s.version("ListGroups") >= 4:
        fields["states_filter"] = ["Empty"]
    answer = s.send("ListGroups", label="list", record=False, to=node, **fields)
    # Other cases' groups may live on this coordinator too: keep only this case's.
    answer.groups = [g for g in answer.groups if g.group_id.startswith("go-")]
    s.exchanges.append(Exchange("list (this case's groups)", "ListGroups", s.version("ListGroups"),
                                normalise(plain(answer), s.symbols)))


def txn_offsets_stable(s: Session) -> None:
    """A transaction's offset commit holds back a require_stable OffsetFetch (UNSTABLE_OFFSET_COMMIT)."""
    s.create_topic("tos", 1)
    p = Producer(s, "tos-app")
    p.open("tos", [0])
    node = s.coordinator("tos-app", TXN)
    s.send("AddOffsetsToTxn", label="AddOffsetsToTxn", to=node, transactional_id="tos-app",
           producer_id=p.producer_id, producer_epoch=p.epoch, group_id="tos-group")
    T = m.TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic
    s.send("TxnOffsetCommit", label="TxnOffsetCommit", to=s.coordinator("tos-group", GROUP),
           transactional_id="tos-app", group_id="tos-group", producer_id=p.producer_id, producer_epoch=p.epoch,
           generation_id=-1, member_id="", group_instance_id=None,
           topics=[T(name="tos", partitions=[T.TxnOffsetCommitRequestPartition(
               partition_index=0, committed_offset=1, committed_leader_epoch=-1, committed_metadata="")])])
    fetch_offsets(s, "tos-group", "tos", [0], "require_stable during txn", version=min(7, s.version("OffsetFetch")))
    p.end(commit=True, record=False)


CASES: list[Case] = [
    Case("find-coordinator-first-use", ("FindCoordinator",), first_find_coordinator,
         "coordinator not available while __transaction_state is created"),
    Case("find-coordinator", ("FindCoordinator",), find_coordinator, "txn and group keys, batched, bad key type"),
    Case("metadata", ("Metadata",), metadata, "a topic, an unknown topic, no topics"),
    Case("list-offsets", ("ListOffsets",), list_offsets_plain, "latest, earliest, committed, max timestamp"),
    Case("list-offsets-lso", ("ListOffsets",), list_offsets_lso, "read_committed stops at the open txn"),
    Case("list-offsets-errors", ("ListOffsets",), list_offsets_errors,
         "unknown partition, unknown topic, fenced leader epoch"),
    Case("describe-producers", ("DescribeProducers",), describe_producers_open, "open txn, after commit"),
    Case("describe-producers-errors", ("DescribeProducers",), describe_producers_errors,
         "unknown partition, unknown topic"),
    Case("transactions-admin", ("DescribeTransactions", "ListTransactions"), transactions_admin,
         "ongoing, empty, unknown id; filters, bad regex"),
    Case("init-producer-id", ("InitProducerId",), init_producer_id,
         "new, bump, stale epoch, wrong pid, timeout too large, idempotent"),
    Case("add-partitions", ("AddPartitionsToTxn",), add_partitions_cases,
         "ok, unknown partition/topic, fenced epoch, wrong pid, unknown id"),
    Case("end-txn", ("EndTxn",), end_txn_cases, "commit, abort, invalid txn state, fenced, empty, unknown id"),
    Case("produce-unverified", ("Produce", "DescribeProducers"), produce_unverified,
         "a transactional write outside the transaction (partition verification)"),
    Case("concurrent-transactions", ("InitProducerId", "DescribeTransactions"), concurrent_transactions,
         "InitProducerId while ongoing"),
    Case("write-txn-markers", ("WriteTxnMarkers", "DescribeProducers", "ListOffsets"), write_markers,
         "admin abort, no open txn, older epoch, unknown partition, unknown producer"),
    Case("write-txn-markers-unknown-topic", ("WriteTxnMarkers",), write_markers_unknown_topic, "unknown topic"),
    Case("group-offsets", ("OffsetCommit", "OffsetFetch", "DescribeGroups", "ListGroups"), group_offsets,
         "simple commit, fetch, unknown group/topic, describe, list"),
    Case("txn-offsets-stable", ("AddOffsetsToTxn", "TxnOffsetCommit", "OffsetFetch"), txn_offsets_stable,
         "require_stable with a pending transactional commit"),
]


# ---- with an authorizer: `admin` (the default sender) is a super user, `alice` has no ACL --------------------
ALICE = "alice"
TOPIC_RESOURCE, TXN_ID_RESOURCE = 2, 5
LITERAL, DESCRIBE, ALLOW = 3, 8, 3


def unauthorized(s: Session) -> None:
    """Every API the CLI uses, sent by a principal without ACLs, about things that exist."""
    s.create_topic("acl-t", 1)
    p = Producer(s, "acl-app")
    p.open("acl-t", [0])
    s.wait(lambda: commit_offsets(s, "acl-group", "acl-t", {0: 1}, record=False).topics[0].partitions[0].error_code
           == 0, "the group coordinator to load")
    txn_node, group_node = s.coordinator("acl-app", TXN), s.coordinator("acl-group", GROUP)
    leader = s.leader("acl-t", 0)
    M = m.MetadataRequest
    s.send("Metadata", label="Metadata", user=ALICE, topics=[M.MetadataRequestTopic(name="acl-t")],
           allow_auto_topic_creation=False, include_topic_authorized_operations=False)
    L = m.ListOffsetsRequest.ListOffsetsTopic
    s.send("ListOffsets", label="ListOffsets", user=ALICE, to=leader, replica_id=-1, isolation_level=READ_COMMITTED,
           timeout_ms=30000, topics=[L(name="acl-t", partitions=[L.ListOffsetsPartition(
               partition_index=0, current_leader_epoch=-1, timestamp=LATEST)])])
    T = m.DescribeProducersRequest.TopicRequest
    s.send("DescribeProducers", label="DescribeProducers", user=ALICE, to=leader,
           topics=[T(name="acl-t", partition_indexes=[0])])
    s.send("FindCoordinator", label="FindCoordinator txn", user=ALICE, key="acl-app", key_type=TXN)
    s.send("FindCoordinator", label="FindCoordinator group", user=ALICE, key="acl-group", key_type=GROUP)
    s.send("DescribeTransactions", label="DescribeTransactions", user=ALICE, to=txn_node,
           transactional_ids=["acl-app"])
    fields: dict[str, Any] = {"state_filters": [], "producer_id_filters": [p.producer_id]}
    if s.version("ListTransactions") >= 1:
        fields["duration_filter"] = -1
    s.send("ListTransactions", label="ListTransactions", user=ALICE, to=txn_node, **fields)
    s.send("InitProducerId", label="InitProducerId", user=ALICE, to=txn_node, transactional_id="acl-app",
           transaction_timeout_ms=TIMEOUT_MS, producer_id=-1, producer_epoch=-1)
    s.send("EndTxn", label="EndTxn", user=ALICE, to=txn_node, transactional_id="acl-app",
           producer_id=p.producer_id, producer_epoch=p.epoch, committed=False)
    W = m.WriteTxnMarkersRequest.WritableTxnMarker
    marker_fields: dict[str, Any] = {"producer_id": p.producer_id, "producer_epoch": p.epoch,
                                     "transaction_result": False, "coordinator_epoch": 0,
                                     "topics": [W.WritableTxnMarkerTopic(name="acl-t", partition_indexes=[0])]}
    if s.version("WriteTxnMarkers") >= 2:
        marker_fields["transaction_version"] = 0
    s.send("WriteTxnMarkers", label="WriteTxnMarkers", user=ALICE, to=leader, markers=[W(**marker_fields)])
    s.send("OffsetFetch", label="OffsetFetch", user=ALICE, to=group_node, version=min(7, s.version("OffsetFetch")),
           group_id="acl-group", topics=None, require_stable=True)
    s.send("DescribeGroups", label="DescribeGroups", user=ALICE, to=group_node, groups=["acl-group"],
           include_authorized_operations=False)
    s.send("ListGroups", label="ListGroups", user=ALICE, to=group_node)
    p.end(commit=False, record=False)


def partly_authorized(s: Session) -> None:
    """DESCRIBE on the transactional id but nothing on its topic: DescribeTransactions answers, and leaves out
    the partitions the caller may not see."""
    s.create_topic("acl-p", 2)
    p = Producer(s, "acl-p-app")
    p.open("acl-p", [0, 1])
    C = m.CreateAclsRequest.AclCreation
    created = s.send("CreateAcls", record=False, version=min(3, m.CreateAclsRequest.max_version), creations=[C(
        resource_type=TXN_ID_RESOURCE, resource_name="acl-p-app", resource_pattern_type=LITERAL,
        principal=f"User:{ALICE}", host="*", operation=DESCRIBE, permission_type=ALLOW)])
    if created.results[0].error_code:
        raise CaseFailed(f"CreateAcls failed: {created.results[0].error_code}")
    node = s.coordinator("acl-p-app", TXN)
    s.wait(lambda: s.send("DescribeTransactions", record=False, user=ALICE, to=node, transactional_ids=["acl-p-app"]
                          ).transaction_states[0].error_code == 0, "the ACL to apply")
    s.send("DescribeTransactions", label="DescribeTransactions", user=ALICE, to=node, transactional_ids=["acl-p-app"])
    extra: dict[str, Any] = {"duration_filter": -1} if s.version("ListTransactions") >= 1 else {}
    s.send("ListTransactions", label="ListTransactions", user=ALICE, to=node, state_filters=[],
           producer_id_filters=[p.producer_id], **extra)
    p.end(commit=False, record=False)


ACL_CASES: list[Case] = [
    Case("unauthorized", ("Metadata", "ListOffsets", "DescribeProducers", "FindCoordinator", "DescribeTransactions",
                          "ListTransactions", "InitProducerId", "EndTxn", "WriteTxnMarkers", "OffsetFetch",
                          "DescribeGroups", "ListGroups"), unauthorized,
         "a principal without ACLs, every API the CLI uses"),
    Case("partly-authorized", ("DescribeTransactions", "ListTransactions"), partly_authorized,
         "DESCRIBE on the transactional id only: its partitions left out"),
]



# ---- two nodes: requests to a node that does not lead the partition or coordinate the id ---------------------
def not_leader(s: Session) -> None:
    s.create_topic("nl", 1, replication_factor=2)
    s.create_topic("nl-one", 1, replication_factor=1)
    p = Producer(s, "nl-app")
    p.open("nl", [0])
    leader = s.leader("nl", 0)
    follower = s.other_node(leader)
    outsider = s.other_node(s.leader("nl-one", 0))
    T = m.DescribeProducersRequest.TopicRequest
    s.wait(lambda: bool(s.send("DescribeProducers", record=False, to=follower, topics=[T(
        name="nl", partition_indexes=[0])]).topics[0].partitions[0].active_producers), "the follower to catch up")
    describe_producers(s, "nl", [0], "DescribeProducers on the follower", to=follower)
    describe_producers(s, "nl-one", [0], "DescribeProducers on a broker without a replica", to=outsider)
    L = m.ListOffsetsRequest.ListOffsetsTopic
    for topic, node, label in (("nl", follower, "on the follower"), ("nl-one", outsider, "on a non-replica")):
        s.send("ListOffsets", label=f"ListOffsets {label}", to=node, replica_id=-1, isolation_level=READ_COMMITTED,
               timeout_ms=30000, topics=[L(name=topic, partitions=[L.ListOffsetsPartition(
                   partition_index=0, current_leader_epoch=-1, timestamp=LATEST)])])
    marker(s, "nl", [0], p.producer_id, p.epoch, 0, label="WriteTxnMarkers on the follower", to=follower)
    marker(s, "nl-one", [0], p.producer_id, p.epoch, 0, label="WriteTxnMarkers on a non-replica", to=outsider)
    p.end(commit=False, record=False)


def not_coordinator(s: Session) -> None:
    s.create_topic("nc", 1, replication_factor=2)
    p = Producer(s, "nc-app")
    p.open("nc", [0])
    other = s.other_node(s.coordinator("nc-app", TXN))
    s.send("DescribeTransactions", label="DescribeTransactions", to=other, transactional_ids=["nc-app"])
    s.send("InitProducerId", label="InitProducerId", to=other, transactional_id="nc-app",
           transaction_timeout_ms=TIMEOUT_MS, producer_id=-1, producer_epoch=-1)
    s.send("EndTxn", label="EndTxn", to=other, transactional_id="nc-app", producer_id=p.producer_id,
           producer_epoch=p.epoch, committed=False)
    add = m.AddPartitionsToTxnRequest
    s.send("AddPartitionsToTxn", label="AddPartitionsToTxn v3", version=3, to=other,
           v3_and_below_transactional_id="nc-app", v3_and_below_producer_id=p.producer_id,
           v3_and_below_producer_epoch=p.epoch,
           v3_and_below_topics=[add.AddPartitionsToTxnTopic(name="nc", partitions=[0])])
    extra: dict[str, Any] = {"duration_filter": -1} if s.version("ListTransactions") >= 1 else {}
    s.send("ListTransactions", label="ListTransactions on the other node", to=other, state_filters=[],
           producer_id_filters=[p.producer_id], **extra)
    group_other = s.other_node(s.coordinator("nc-group", GROUP))
    s.send("OffsetFetch", label="OffsetFetch", to=group_other, version=min(7, s.version("OffsetFetch")),
           group_id="nc-group", topics=None, require_stable=True)
    p.end(commit=False, record=False)


TWO_NODE_CASES: list[Case] = [
    Case("not-leader", ("DescribeProducers", "ListOffsets", "WriteTxnMarkers"), not_leader,
         "a follower, a broker without a replica"),
    Case("not-coordinator", ("DescribeTransactions", "InitProducerId", "EndTxn", "AddPartitionsToTxn",
                             "ListTransactions", "OffsetFetch"), not_coordinator, "the node that does not coordinate"),
]


# ---- epoch exhaustion (opt-in: FIDELITY_EXHAUST=1; ~32,000 InitProducerId requests per side) -----------------
def epoch_exhaustion(s: Session) -> None:
    """A producer at the last epochs: InitProducerId up to Short.MAX_VALUE - 1, then a new producer id; and a
    transaction ended (TV2 bumps the epoch at its end) at the last epoch."""
    s.create_topic("ex", 1)
    for tid in ("ex-init", "ex-end"):
        s.coordinator(tid, TXN)
        code, _ = s.client.bump_epoch(tid, TIMEOUT_MS, 32_765)  # epochs 0 .. 32,764
        if code:
            raise CaseFailed(f"bumping {tid}: error {code}")
    p = Producer(s, "ex-init")
    p.init(label="InitProducerId to 32765")
    p.init(label="InitProducerId to 32766")
    p.init(label="InitProducerId past the last epoch")
    q = Producer(s, "ex-end")
    q.init(label="InitProducerId to 32765 (ex-end)")
    if s.version("Produce") < 12:
        q.add("ex", [0])
    q.produce("ex", 0, 1, label="Produce at 32765")
    q.end(commit=True, label="EndTxn at 32765")
    if s.version("Produce") < 12:
        q.add("ex", [0])
    q.produce("ex", 0, 1, label="Produce at the last epoch")
    q.end(commit=True, label="EndTxn at the last epoch")
    describe_txns(s, ["ex-end"], "after the last epoch")


EXHAUSTION_CASES: list[Case] = [
    Case("epoch-exhaustion", ("InitProducerId", "EndTxn", "DescribeTransactions"), epoch_exhaustion,
         "the last epochs of a producer id, InitProducerId and a TV2 EndTxn"),
]

if os.environ.get("FIDELITY_EXHAUST") == "1":
    CASES += EXHAUSTION_CASES
