"""Runs the cases (cases.py) against one cluster and compares two clusters' answers.

    versions = negotiate(real_bootstrap, embedded_bootstrap)
    real = run_side(real_bootstrap, CASES, versions)
    ours = run_side(embedded_bootstrap, CASES, versions)
    results = compare(CASES, real, ours)

Every case runs on both clusters in the same order (cases may create topics and transactions that later cases
see, e.g. the internal topics), each with its own topic names and transactional ids.

Threading: a Session is used by one thread; run_side runs the cases one after the other.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import kafka_txn_broker.formats.messages as messages
from kafka_txn_broker.testing.raw_client import RawKafkaClient
from tests.external.fidelity.normalise import Symbols, differences, normalise, plain

# The CLI's own limits on what it negotiates (kafka_txn_tools/connection/wire.py): FindCoordinator for one
# transactional id is sent at v3 at most (the batched v4+ form is used for groups), single-group OffsetFetch
# at v7 at most (batched v8+ otherwise).
CLI_CAPS = {"FindCoordinator": 3, "OffsetFetch": 7}
BATCHED_CAPS = {"OffsetFetch": 9}


@dataclass(frozen=True)
class Exchange:
    """One request and its normalised answer (or what went wrong sending it)."""

    label: str
    api: str
    version: int
    answer: Any


@dataclass(frozen=True)
class Case:
    """A named request sequence. `apis` are the APIs whose answers it is about (the table's column)."""

    name: str
    apis: tuple[str, ...]
    run: Callable[[Session], None]
    about: str = ""


@dataclass
class CaseResult:
    case: Case
    diffs: list[str] = field(default_factory=list)

    @property
    def same(self) -> bool:
        return not self.diffs


class CaseFailed(RuntimeError):
    """A case's setup did not go as on Kafka (a setup step that must succeed failed)."""


class SaslPlainClient(RawKafkaClient):
    """The raw client authenticating each connection with SASL/PLAIN (SaslHandshake v1, SaslAuthenticate v2)."""

    def __init__(self, bootstrap_servers: str, user: str, password: str) -> None:
        super().__init__(bootstrap_servers, client_id="fidelity", timeout_s=30.0)
        self.user, self.password = user, password

    def _connection(self, address: tuple[str, int]) -> Any:
        fresh = address not in self._conns
        conn = super()._connection(address)
        if fresh:
            frame = messages.encode_request(messages.SaslHandshakeRequest[1](mechanism="PLAIN"), 1, 0, "fidelity")
            shake = messages.decode_response(messages.SaslHandshakeResponse, conn.roundtrip(frame), 1)
            token = b"\0" + self.user.encode() + b"\0" + self.password.encode()
            frame = messages.encode_request(messages.SaslAuthenticateRequest[2](auth_bytes=token), 2, 0, "fidelity")
            auth = messages.decode_response(messages.SaslAuthenticateResponse, conn.roundtrip(frame), 2)
            if shake.error_code or auth.error_code:
                raise CaseFailed(f"SASL/PLAIN as {self.user} failed: {shake.error_code}/{auth.error_code}")
        return conn


class Session:
    """One cluster, the versions both sides speak, and the exchanges one case records. With `users` (name ->
    password) requests go as a SASL/PLAIN user: `send(..., user=...)`, by default the first one."""

    def __init__(self, bootstrap: str, versions: dict[str, int], users: dict[str, str] | None = None) -> None:
        self.users = users or {}
        self.clients: dict[str, RawKafkaClient] = {}
        for name, password in self.users.items():
            self.clients[name] = SaslPlainClient(bootstrap, name, password)
        if not self.clients:
            self.clients[""] = RawKafkaClient(bootstrap, client_id="fidelity", timeout_s=30.0)
        self.client = next(iter(self.clients.values()))
        self.versions = versions
        self.symbols = Symbols()
        self.exchanges: list[Exchange] = []
        for client in self.clients.values():
            client.broker_count()

    def close(self) -> None:
        for client in self.clients.values():
            client.close()

    def version(self, api: str) -> int:
        return self.versions[api]

    def send(self, api: str, *, label: str = "", version: int | None = None, to: int | None = None,
             record: bool = True, user: str | None = None, **fields: Any) -> Any:
        """`api` at the negotiated version (or `version`) to node `to` (default: the bootstrap broker)."""
        v = self.version(api) if version is None else version
        request_class = getattr(messages, f"{api}Request")
        response_class = getattr(messages, f"{api}Response")
        client = self.client if user is None else self.clients[user]
        answer = client.send(request_class[v](**fields), v, to, response_class=response_class)
        if record:
            self.exchanges.append(Exchange(label or api, api, v, normalise(plain(answer), self.symbols)))
        return answer

    # ---- helpers every case uses (never recorded: their answers are checked here) ----------------------
    def metadata(self, topic: str) -> Any:
        return self.send("Metadata", record=False, version=12,
                         topics=[messages.MetadataRequest.MetadataRequestTopic(name=topic)],
                         allow_auto_topic_creation=False, include_topic_authorized_operations=False)

    def create_topic(self, name: str, partitions: int = 1, configs: dict[str, str] | None = None,
                     replication_factor: int = -1) -> None:
        T = messages.CreateTopicsRequest.CreatableTopic
        C = T.CreatableTopicConfig
        answer = self.send("CreateTopics", record=False, version=5, topics=[T(
            name=name, num_partitions=partitions, replication_factor=replication_factor, assignments=[],
            configs=[C(name=k, value=v) for k, v in (configs or {}).items()])], timeout_ms=30000,
            validate_only=False)
        if answer.topics[0].error_code:
            raise CaseFailed(f"CreateTopics {name}: error {answer.topics[0].error_code}")
        self.wait(lambda: all(p.leader_id >= 0 and not p.error_code for t in self.metadata(name).topics
                              if not t.error_code for p in t.partitions) and
                  not self.metadata(name).topics[0].error_code, f"topic {name} has leaders")
        self.client.broker_count()
        # Metadata names a leader before that broker has become it: until every partition answers on its leader.
        T = messages.DescribeProducersRequest.TopicRequest
        for p in range(partitions):
            self.wait(lambda p=p: not self.send(  # type: ignore[misc]
                "DescribeProducers", record=False, to=self.leader(name, p),
                topics=[T(name=name, partition_indexes=[p])]).topics[0].partitions[0].error_code,
                f"{name}-{p} to have its leader")

    def other_node(self, node: int) -> int:
        """A broker that is not `node` (two-node pairs)."""
        self.client.broker_count()
        return next(n for n in sorted(self.client.brokers) if n != node)

    def topic_id(self, topic: str) -> Any:
        return self.metadata(topic).topics[0].topic_id

    def leader(self, topic: str, partition: int) -> int:
        return int(next(p.leader_id for p in self.metadata(topic).topics[0].partitions
                        if p.partition_index == partition))

    def coordinator(self, key: str, key_type: int) -> int:
        """The coordinator's node id, waiting while Kafka still creates its internal topic."""
        found: list[int] = []

        def ready() -> bool:
            a = self.send("FindCoordinator", record=False, version=3, key=key, key_type=key_type)
            if a.error_code == 0:
                found.append(int(a.node_id))
            return a.error_code == 0

        self.wait(ready, f"a coordinator for {key}")
        return found[-1]

    @staticmethod
    def wait(condition: Callable[[], bool], what: str, timeout_s: float = 60.0) -> None:
        deadline = time.monotonic() + timeout_s
        while not condition():
            if time.monotonic() > deadline:
                raise CaseFailed(f"timed out waiting for {what}")
            time.sleep(0.05)


def advertised(bootstrap: str) -> dict[int, tuple[int, int]]:
    with RawKafkaClient(bootstrap, client_id="fidelity") as client:  # ApiVersions needs no authentication
        answer = client.send(messages.ApiVersionsRequest[3](client_software_name="fidelity",
                                                            client_software_version="1"), 3,
                             response_class=messages.ApiVersionsResponse)
    return {k.api_key: (k.min_version, k.max_version) for k in answer.api_keys}


def negotiate(*bootstraps: str) -> dict[str, int]:
    """Per API, the highest version every side and the codec support (as a client negotiates), within the
    CLI's own caps."""
    sides = [advertised(b) for b in bootstraps]
    versions: dict[str, int] = {}
    for api in API_NAMES:
        cls = getattr(messages, f"{api}Request")
        highs = [side[cls.API_KEY][1] for side in sides if cls.API_KEY in side]
        if len(highs) == len(sides):
            versions[api] = min([cls.max_version, *highs, CLI_CAPS.get(api, 99)])
            # The batched forms the CLI uses where the broker has them (groups: FindCoordinator v4+,
            # OffsetFetch v8-9).
            versions[f"{api}.batched"] = min([cls.max_version, *highs, BATCHED_CAPS.get(api, 99)])
    return versions


API_NAMES = ("Metadata", "ListOffsets", "DescribeProducers", "ListTransactions", "DescribeTransactions",
             "FindCoordinator", "InitProducerId", "AddPartitionsToTxn", "EndTxn", "WriteTxnMarkers", "OffsetCommit",
             "OffsetFetch", "ListGroups", "DescribeGroups", "Produce", "CreateTopics", "TxnOffsetCommit",
             "AddOffsetsToTxn", "DescribeAcls", "DescribeConfigs")


def run_side(bootstrap: str, cases: Sequence[Case], versions: dict[str, int],
             users: dict[str, str] | None = None) -> dict[str, list[Exchange]]:
    """Every case on one cluster: case name -> its exchanges (a case that raised ends with an exchange
    saying so, which then differs from the other side unless it raised the same way)."""
    out: dict[str, list[Exchange]] = {}
    for case in cases:
        session = Session(bootstrap, versions, users)
        try:
            case.run(session)
        except Exception as exc:  # noqa: BLE001 - recorded, and compared like an answer
            session.exchanges.append(Exchange("raised", "-", -1, f"{type(exc).__name__}: {exc}"))
        finally:
            session.close()
        out[case.name] = session.exchanges
    return out


def compare(cases: Sequence[Case], real: dict[str, list[Exchange]],
            ours: dict[str, list[Exchange]]) -> list[CaseResult]:
    results = []
    for case in cases:
        a, b = real[case.name], ours[case.name]
        diffs: list[str] = []
        if [(e.label, e.version) for e in a] != [(e.label, e.version) for e in b]:
            diffs.append(f"sequence: real={[(e.label, e.version) for e in a]} "
                         f"embedded={[(e.label, e.version) for e in b]}")
        for x, y in zip(a, b, strict=False):  # a length difference is reported above
            diffs += [f"{x.label} v{x.version}{d}" for d in differences(x.answer, y.answer)]
        # A case that did not run to its end proves nothing, even when both sides stopped alike.
        diffs += [f"the case stopped on {side}: {e.answer}" for side, exchanges in (("Kafka", a), ("embedded", b))
                  for e in exchanges if e.label == "raised"]
        results.append(CaseResult(case, diffs))
    return results
