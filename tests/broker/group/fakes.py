"""In-memory stand-ins for group coordinator unit tests: a log writer, a shard, request builders."""

from __future__ import annotations

from typing import Any

from kafka_txn_broker.clock import ManualClock
from kafka_txn_broker.configs.broker_config import BrokerConfig
from kafka_txn_broker.formats.record_batch import BatchHeader, build_control_batch, with_base_offset
from kafka_txn_broker.group.classic_group import JoinResult, SyncResult
from kafka_txn_broker.group.membership import JoinRequest, SyncRequest
from kafka_txn_broker.group.shard import GroupShard

PROTOCOLS = [("range", b"range-meta"), ("roundrobin", b"rr-meta")]


class FakeLog:
    """Assigns offsets like a partition leader and keeps the batches, so a new shard can replay them."""

    def __init__(self) -> None:
        self.batches: list[bytes] = []
        self.end = 0
        self.fail_with: Exception | None = None

    def append(self, batch: bytes) -> int:
        if self.fail_with is not None:
            raise self.fail_with
        buf = bytearray(batch)
        with_base_offset(buf, self.end, 0)
        first = self.end
        self.end += BatchHeader.parse(buf).record_count
        self.batches.append(bytes(buf))
        return first

    def marker(self, producer_id: int, commit: bool) -> None:
        self.batches.append(build_control_batch(producer_id, 0, commit, 0, 0, base_offset=self.end))
        self.end += 1

    def data(self) -> bytes:
        return b"".join(self.batches)


def make_shard(clock: ManualClock | None = None, log: FakeLog | None = None, **config: Any) -> GroupShard:
    shard = GroupShard(0, BrokerConfig(config), clock or ManualClock(), log or FakeLog())
    shard.finish_load()
    return shard


def join_req(group: str = "g", member_id: str = "", *, session: int = 10_000, rebalance: int = 30_000,
             protocols: list[tuple[str, bytes]] | None = None, protocol_type: str = "consumer",
             instance: str | None = None, client_id: str = "client", require_known: bool = True) -> JoinRequest:
    return JoinRequest(group, member_id, instance, client_id, "/127.0.0.1", session, rebalance, protocol_type,
                       list(PROTOCOLS if protocols is None else protocols), require_known)


class Answers:
    """Collects the (possibly deferred) answers of JoinGroup / SyncGroup."""

    def __init__(self) -> None:
        self.joins: list[JoinResult] = []
        self.syncs: list[SyncResult] = []

    def join(self, r: JoinResult) -> None:
        self.joins.append(r)

    def sync(self, r: SyncResult) -> None:
        self.syncs.append(r)

    @property
    def last_join(self) -> JoinResult:
        assert self.joins, "no JoinGroup answer yet"
        return self.joins[-1]

    @property
    def last_sync(self) -> SyncResult:
        assert self.syncs, "no SyncGroup answer yet"
        return self.syncs[-1]


def join(shard: GroupShard, req: JoinRequest) -> Answers:
    a = Answers()
    shard.membership.join(req, a.join)
    return a


def join_new_member(shard: GroupShard, group: str = "g", **kw: Any) -> tuple[str, Answers]:
    """JoinGroup v4+ twice (MEMBER_ID_REQUIRED, then with the id); returns the id and the parked answers."""
    first = join(shard, join_req(group, **kw))
    assert first.last_join.error == 79, first.joins
    member_id = first.last_join.member_id
    return member_id, join(shard, join_req(group, member_id, **kw))


def sync(shard: GroupShard, member_id: str, generation: int, assignments: dict[str, bytes] | None = None,
         group: str = "g", instance: str | None = None) -> Answers:
    a = Answers()
    shard.membership.sync(SyncRequest(group, member_id, instance, generation, None, None, assignments or {}), a.sync)
    return a
