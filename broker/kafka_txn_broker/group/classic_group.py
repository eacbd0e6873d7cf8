"""Classic consumer group state: members, generation, chosen protocol, leader (no IO, no timers).

The operations that move a group between states live in membership.py; this module only
holds the data and the pure decisions over it (protocol selection, who has rejoined, the leader).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum


class GroupState(Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(frozen=True, slots=True)
class JoinedMember:
    """One entry of the member list the leader receives in its JoinGroup response."""

    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(frozen=True, slots=True)
class JoinResult:
    error: int
    member_id: str = ""
    generation: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    members: tuple[JoinedMember, ...] = ()


@dataclass(frozen=True, slots=True)
class SyncResult:
    error: int
    assignment: bytes = b""
    protocol_type: str | None = None
    protocol_name: str | None = None


JoinCallback = Callable[[JoinResult], None]
SyncCallback = Callable[[SyncResult], None]
Protocols = list[tuple[str, bytes]]


@dataclass(eq=False)
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: Protocols
    assignment: bytes = b""
    last_heartbeat_ms: int = 0
    # A JoinGroup / SyncGroup response this member is waiting for (its connection is parked on it).
    join_callback: JoinCallback | None = None
    sync_callback: SyncCallback | None = None
    # Joined but never received a JoinGroup response yet.
    is_new: bool = True

    @property
    def awaiting_join(self) -> bool:
        return self.join_callback is not None

    @property
    def awaiting_sync(self) -> bool:
        return self.sync_callback is not None

    def protocol_names(self) -> list[str]:
        return [name for name, _ in self.protocols]

    def metadata_for(self, protocol: str) -> bytes:
        for name, meta in self.protocols:
            if name == protocol:
                return meta
        raise KeyError(protocol)

    def same_protocols(self, protocols: Protocols) -> bool:
        return [(n, bytes(m)) for n, m in protocols] == [(n, bytes(m)) for n, m in self.protocols]

    def vote(self, candidates: set[str]) -> str:
        """The member's most preferred protocol among those every member supports."""
        return next(name for name in self.protocol_names() if name in candidates)


@dataclass(eq=False)
class ClassicGroup:
    group_id: str
    state: GroupState = GroupState.EMPTY
    generation: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    # Member ids handed out with MEMBER_ID_REQUIRED, waiting for the client's second JoinGroup.
    pending_members: dict[str, int] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)
    # Members that got their JoinGroup response but have not sent SyncGroup yet.
    pending_sync: set[str] = field(default_factory=set)
    sync_deadline_ms: int | None = None
    join_deadline_ms: int | None = None
    # Initial delayed join (group was Empty): the deadline slides while new members keep arriving.
    initial_join: bool = False
    initial_remaining_ms: int = 0
    new_member_added: bool = False
    state_timestamp_ms: int = -1

    # ---- membership ------------------------------------------------------------------------
    def is_in(self, *states: GroupState) -> bool:
        return self.state in states

    def transition(self, state: GroupState, now_ms: int) -> None:
        self.state = state
        self.state_timestamp_ms = now_ms

    def add(self, member: Member) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        self.members[member.member_id] = member
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        self.pending_members.pop(member.member_id, None)
        if self.leader_id is None:
            self.leader_id = member.member_id

    def remove(self, member_id: str) -> Member | None:
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        if member.group_instance_id is not None and \
                self.static_members.get(member.group_instance_id) == member_id:
            del self.static_members[member.group_instance_id]
        self.pending_sync.discard(member_id)
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        return member

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def all_joined(self) -> bool:
        return not self.pending_members and all(m.awaiting_join for m in self.members.values())

    def not_yet_rejoined(self) -> list[Member]:
        return [m for m in self.members.values() if not m.awaiting_join]

    def max_rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def elect_joined_leader(self) -> bool:
        """Keep the leader if it rejoined, else pick a member that did; False if nobody rejoined."""
        leader = self.members.get(self.leader_id or "")
        if leader is not None and leader.awaiting_join:
            return True
        joined = next((m for m in self.members.values() if m.awaiting_join), None)
        self.leader_id = joined.member_id if joined else None
        return joined is not None

    # ---- protocols ---------------------------------------------------------------------------
    def candidate_protocols(self) -> set[str]:
        members = list(self.members.values())
        if not members:
            return set()
        common = set(members[0].protocol_names())
        for m in members[1:]:
            common &= set(m.protocol_names())
        return common

    def supports(self, protocol_type: str, names: list[str]) -> bool:
        """Can a member with this protocol type and these protocols join (Kafka's supportsProtocols)?"""
        if not protocol_type or not names:
            return False
        if not self.members:
            return True
        return protocol_type == self.protocol_type and bool(self.candidate_protocols() & set(names))

    def select_protocol(self) -> str:
        """Every member votes for its favourite common protocol; most votes wins, ties go to the
        protocol earliest in the leader's (or first member's) preference list."""
        candidates = self.candidate_protocols()
        votes: dict[str, int] = {}
        for m in self.members.values():
            choice = m.vote(candidates)
            votes[choice] = votes.get(choice, 0) + 1
        first = self.members.get(self.leader_id or "") or next(iter(self.members.values()))
        order = {name: i for i, name in enumerate(first.protocol_names())}
        return max(votes, key=lambda name: (votes[name], -order.get(name, len(order))))

    def member_list(self) -> tuple[JoinedMember, ...]:
        assert self.protocol_name is not None
        return tuple(JoinedMember(m.member_id, m.group_instance_id, m.metadata_for(self.protocol_name))
                     for m in self.members.values())

    def join_result(self, member: Member) -> JoinResult:
        """The JoinGroup response of the current generation for one member."""
        members = self.member_list() if self.is_leader(member.member_id) else ()
        return JoinResult(0, member.member_id, self.generation, self.protocol_type, self.protocol_name,
                          self.leader_id or "", members)
