"""The classic group protocol's state machine: JoinGroup, SyncGroup, Heartbeat, LeaveGroup, timeouts.

Empty -> PreparingRebalance (members (re)join) -> CompletingRebalance (JoinGroup responses sent, the
leader computes assignments) -> Stable (SyncGroup delivered them); any membership change in
CompletingRebalance or Stable starts the next rebalance. Requests that must wait (JoinGroup until
everyone rejoined, SyncGroup until the leader's assignment) hand in a callback that is called once,
possibly later from `tick` or another member's request, so nothing ever blocks the event loop.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kafka_txn_broker.formats import errors as E
from kafka_txn_broker.formats.errors import (
    BrokerResponseError,
    CoordinatorNotAvailableError,
    FencedInstanceIdError,
    IllegalGenerationError,
    InconsistentGroupProtocolError,
    InvalidGroupIdError,
    InvalidSessionTimeoutError,
    MemberIdRequiredError,
    NotCoordinatorError,
    RebalanceInProgressError,
    UnknownMemberIdError,
)
from kafka_txn_broker.group.append_errors import append_error_code
from kafka_txn_broker.group.classic_group import (
    ClassicGroup,
    GroupState,
    JoinCallback,
    JoinResult,
    Member,
    Protocols,
    SyncCallback,
    SyncResult,
)

if TYPE_CHECKING:
    from kafka_txn_broker.group.shard import GroupShard

log = logging.getLogger(__name__)

S = GroupState


@dataclass(frozen=True, slots=True)
class JoinRequest:
    group_id: str
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: Protocols
    # JoinGroup v4+: a new member first gets MEMBER_ID_REQUIRED and its id, then joins with it.
    require_known_member_id: bool = True


@dataclass(frozen=True, slots=True)
class SyncRequest:
    group_id: str
    member_id: str
    group_instance_id: str | None
    generation: int
    protocol_type: str | None
    protocol_name: str | None
    assignments: dict[str, bytes]


def _code(exc: type[BrokerResponseError]) -> int:
    return int(exc.errno)


class GroupMembership:
    def __init__(self, shard: GroupShard) -> None:
        self.shard = shard

    @property
    def groups(self) -> dict[str, ClassicGroup]:
        return self.shard.groups

    def now(self) -> int:
        return self.shard.now()

    # ---- member validation -------------------------------------------------------------------
    def validate_member(self, group: ClassicGroup, member_id: str, instance_id: str | None) -> Member:
        """The member the request speaks for, or the error Kafka gives (fenced static member first)."""
        if instance_id is not None:
            known = group.static_members.get(instance_id)
            if known is None:
                raise UnknownMemberIdError(f"unknown group instance id {instance_id!r}")
            if known != member_id:
                raise FencedInstanceIdError(f"instance {instance_id!r} is now member {known!r}")
        member = group.members.get(member_id)
        if member is None:
            raise UnknownMemberIdError(f"member {member_id!r} is not in group {group.group_id!r}")
        return member

    # ---- JoinGroup ---------------------------------------------------------------------------
    def join(self, req: JoinRequest, respond: JoinCallback) -> None:
        try:
            group = self._join_target(req)
        except BrokerResponseError as exc:
            respond(JoinResult(int(exc.errno), req.member_id))
            return
        if not req.member_id:
            self._join_new_member(group, req, respond)
        else:
            self._join_known_member(group, req, respond)

    def _join_target(self, req: JoinRequest) -> ClassicGroup:
        cfg = self.shard.config
        if not req.group_id:
            raise InvalidGroupIdError("group id must not be empty")
        if not cfg["group.min.session.timeout.ms"] <= req.session_timeout_ms <= cfg["group.max.session.timeout.ms"]:
            raise InvalidSessionTimeoutError(
                f"session timeout {req.session_timeout_ms} ms is outside group.min.session.timeout.ms.."
                f"group.max.session.timeout.ms ({cfg['group.min.session.timeout.ms']}.."
                f"{cfg['group.max.session.timeout.ms']})")
        group = self.groups.get(req.group_id)
        if group is None and req.member_id:
            raise UnknownMemberIdError(f"group {req.group_id!r} has no member {req.member_id!r}")
        if group is not None and group.is_in(S.DEAD):
            raise CoordinatorNotAvailableError(f"group {req.group_id!r} is being unloaded")
        names = [name for name, _ in req.protocols]
        if not req.protocol_type or not names or (group is not None and not group.supports(req.protocol_type, names)):
            raise InconsistentGroupProtocolError(
                f"protocol type {req.protocol_type!r} / protocols {names} do not match group {req.group_id!r}")
        return group if group is not None else self.shard.get_or_create(req.group_id)

    def _join_new_member(self, group: ClassicGroup, req: JoinRequest, respond: JoinCallback) -> None:
        if req.group_instance_id is not None:
            self._fence_static_member(group, req.group_instance_id)
        prefix = req.group_instance_id if req.group_instance_id is not None else req.client_id
        member_id = f"{prefix}-{uuid.uuid4()}"
        if req.require_known_member_id and req.group_instance_id is None:
            # The client must come back with this id; until it does (or its session times out),
            # the pending id holds back the rebalance like a member that has not rejoined yet.
            group.pending_members[member_id] = self.now() + req.session_timeout_ms
            respond(JoinResult(_code(MemberIdRequiredError), member_id))
            return
        self._add_member_and_rebalance(group, req, member_id, respond)

    def _fence_static_member(self, group: ClassicGroup, instance_id: str) -> None:
        """A static member rejoining with no member id replaces its previous incarnation."""
        old_id = group.static_members.get(instance_id)
        old = group.members.get(old_id or "")
        if old is not None:
            self._remove_member(group, old, _code(FencedInstanceIdError))

    def _add_member_and_rebalance(self, group: ClassicGroup, req: JoinRequest, member_id: str,
                                  respond: JoinCallback) -> None:
        member = Member(member_id, req.group_instance_id, req.client_id, req.client_host, req.session_timeout_ms,
                        req.rebalance_timeout_ms, req.protocol_type, list(req.protocols),
                        last_heartbeat_ms=self.now(), join_callback=respond)
        group.add(member)
        if group.is_in(S.PREPARING_REBALANCE) and group.initial_join:
            group.new_member_added = True
        self._maybe_prepare_rebalance(group, f"member {member_id} joined")
        self._check_join_complete(group)

    def _join_known_member(self, group: ClassicGroup, req: JoinRequest, respond: JoinCallback) -> None:
        if req.member_id in group.pending_members:
            self._add_member_and_rebalance(group, req, req.member_id, respond)
            return
        try:
            member = self.validate_member(group, req.member_id, req.group_instance_id)
        except BrokerResponseError as exc:
            respond(JoinResult(int(exc.errno), req.member_id))
            return
        if group.is_in(S.EMPTY):
            respond(JoinResult(_code(UnknownMemberIdError), req.member_id))
        elif group.is_in(S.PREPARING_REBALANCE):
            self._update_member_and_rebalance(group, member, req, respond)
        elif group.is_in(S.COMPLETING_REBALANCE) and member.same_protocols(req.protocols):
            respond(group.join_result(member))  # a lost JoinGroup response, resent
        elif group.is_in(S.STABLE) and not group.is_leader(member.member_id) \
                and member.same_protocols(req.protocols):
            # A follower rejoining with unchanged metadata just gets the current generation back.
            member.last_heartbeat_ms = self.now()
            respond(group.join_result(member))
        else:
            self._update_member_and_rebalance(group, member, req, respond)

    def _update_member_and_rebalance(self, group: ClassicGroup, member: Member, req: JoinRequest,
                                     respond: JoinCallback) -> None:
        if member.join_callback is not None:
            # The same member joined again before its first JoinGroup was answered (new connection).
            member.join_callback(JoinResult(_code(RebalanceInProgressError), member.member_id))
        member.protocols = list(req.protocols)
        member.session_timeout_ms = req.session_timeout_ms
        member.rebalance_timeout_ms = req.rebalance_timeout_ms
        member.join_callback = respond
        self._maybe_prepare_rebalance(group, f"member {member.member_id} rejoined with new metadata")
        self._check_join_complete(group)

    # ---- rebalance ---------------------------------------------------------------------------
    def _maybe_prepare_rebalance(self, group: ClassicGroup, reason: str) -> None:
        if group.is_in(S.EMPTY, S.STABLE, S.COMPLETING_REBALANCE):
            self._prepare_rebalance(group, reason)

    def _prepare_rebalance(self, group: ClassicGroup, reason: str) -> None:
        log.debug("group %s: preparing rebalance (%s)", group.group_id, reason)
        if group.is_in(S.COMPLETING_REBALANCE):
            self._fail_sync_waiters(group, _code(RebalanceInProgressError))
        group.pending_sync.clear()
        group.sync_deadline_ms = None
        now = self.now()
        group.initial_join = group.is_in(S.EMPTY)
        if group.initial_join:
            # New group: wait group.initial.rebalance.delay.ms (sliding, bounded by the rebalance
            # timeout) so members starting together land in one generation.
            delay = self.shard.config["group.initial.rebalance.delay.ms"]
            group.join_deadline_ms = now + delay
            group.initial_remaining_ms = max(group.max_rebalance_timeout_ms() - delay, 0)
            group.new_member_added = False
        else:
            group.join_deadline_ms = now + group.max_rebalance_timeout_ms()
        group.transition(S.PREPARING_REBALANCE, now)

    def _check_join_complete(self, group: ClassicGroup) -> None:
        if not group.is_in(S.PREPARING_REBALANCE):
            return
        if group.initial_join:
            if group.join_deadline_ms is not None and self.now() >= group.join_deadline_ms:
                self._on_initial_delay_expired(group)
        elif group.all_joined():
            self._complete_join(group)

    def _on_initial_delay_expired(self, group: ClassicGroup) -> None:
        delay = self.shard.config["group.initial.rebalance.delay.ms"]
        if group.new_member_added and group.initial_remaining_ms > 0:
            step = min(delay, group.initial_remaining_ms)
            group.initial_remaining_ms -= step
            group.join_deadline_ms = self.now() + step
            group.new_member_added = False
            return
        self._complete_join(group)

    def _complete_join(self, group: ClassicGroup) -> None:
        """End PreparingRebalance: drop who did not rejoin, start the next generation, answer joiners."""
        for member in group.not_yet_rejoined():
            if member.group_instance_id is None:
                group.remove(member.member_id)
        if group.members and not group.elect_joined_leader():
            # Only static members that have not rejoined are left: wait another rebalance timeout.
            group.join_deadline_ms = self.now() + group.max_rebalance_timeout_ms()
            group.initial_join = False
            return
        self._init_next_generation(group)
        if group.is_in(S.EMPTY):
            self._store_empty_group(group)
            return
        now = self.now()
        for member in group.members.values():
            callback, member.join_callback = member.join_callback, None
            member.is_new = False
            member.last_heartbeat_ms = now
            if callback is not None:
                callback(group.join_result(member))
        group.pending_sync = set(group.members)
        group.sync_deadline_ms = now + group.max_rebalance_timeout_ms()

    def _init_next_generation(self, group: ClassicGroup) -> None:
        group.generation += 1
        group.join_deadline_ms = None
        group.initial_join = False
        if group.members:
            group.protocol_name = group.select_protocol()
            group.transition(S.COMPLETING_REBALANCE, self.now())
        else:
            group.protocol_name = None
            group.transition(S.EMPTY, self.now())

    def _store_empty_group(self, group: ClassicGroup) -> None:
        try:
            self.shard.store_group(group, {})
        except Exception as exc:  # the in-memory state is still right; a later rebalance rewrites it
            log.warning("group %s: cannot store empty generation %s: %s", group.group_id, group.generation, exc)

    # ---- SyncGroup ---------------------------------------------------------------------------
    def sync(self, req: SyncRequest, respond: SyncCallback) -> None:
        try:
            group, member = self._sync_target(req)
        except BrokerResponseError as exc:
            respond(SyncResult(int(exc.errno)))
            return
        group.pending_sync.discard(member.member_id)
        member.last_heartbeat_ms = self.now()
        if group.is_in(S.STABLE):
            respond(self._sync_result(group, member.assignment))
            return
        member.sync_callback = respond
        if group.is_leader(member.member_id):
            self._apply_leader_assignment(group, req.assignments)

    def _sync_target(self, req: SyncRequest) -> tuple[ClassicGroup, Member]:
        group = self.groups.get(req.group_id)
        if group is None:
            raise UnknownMemberIdError(f"group {req.group_id!r} does not exist")
        if group.is_in(S.DEAD):
            raise CoordinatorNotAvailableError(f"group {req.group_id!r} is being unloaded")
        member = self.validate_member(group, req.member_id, req.group_instance_id)
        if req.generation != group.generation:
            raise IllegalGenerationError(f"generation {req.generation} is not the group's {group.generation}")
        if (req.protocol_type is not None and req.protocol_type != group.protocol_type) or \
                (req.protocol_name is not None and req.protocol_name != group.protocol_name):
            raise InconsistentGroupProtocolError("protocol type or name differs from the group's")
        if group.is_in(S.EMPTY):
            raise UnknownMemberIdError(f"group {req.group_id!r} has no members")
        if group.is_in(S.PREPARING_REBALANCE):
            raise RebalanceInProgressError(f"group {req.group_id!r} is rebalancing")
        return group, member

    def _sync_result(self, group: ClassicGroup, assignment: bytes) -> SyncResult:
        return SyncResult(E.NONE, assignment, group.protocol_type, group.protocol_name)

    def _apply_leader_assignment(self, group: ClassicGroup, assignments: dict[str, bytes]) -> None:
        full = {mid: bytes(assignments.get(mid, b"")) for mid in group.members}
        try:
            self.shard.store_group(group, full)
        except Exception as exc:
            code = append_error_code(exc)
            self._fail_sync_waiters(group, code)
            self._maybe_prepare_rebalance(group, f"storing the assignment failed (error {code})")
            return
        for mid, member in group.members.items():
            member.assignment = full[mid]
            callback, member.sync_callback = member.sync_callback, None
            if callback is not None:
                callback(self._sync_result(group, member.assignment))
        group.transition(S.STABLE, self.now())

    def _fail_sync_waiters(self, group: ClassicGroup, code: int) -> None:
        for member in group.members.values():
            member.assignment = b""
            callback, member.sync_callback = member.sync_callback, None
            if callback is not None:
                callback(SyncResult(code))

    # ---- Heartbeat ---------------------------------------------------------------------------
    def heartbeat(self, group_id: str, member_id: str, instance_id: str | None, generation: int) -> int:
        group = self.groups.get(group_id)
        if group is None:
            return _code(UnknownMemberIdError)
        if group.is_in(S.DEAD):
            return _code(CoordinatorNotAvailableError)
        try:
            member = self.validate_member(group, member_id, instance_id)
        except BrokerResponseError as exc:
            return int(exc.errno)
        if generation != group.generation:
            return _code(IllegalGenerationError)
        if group.is_in(S.EMPTY):
            return _code(UnknownMemberIdError)
        member.last_heartbeat_ms = self.now()
        if group.is_in(S.PREPARING_REBALANCE):
            return _code(RebalanceInProgressError)
        return E.NONE

    # ---- LeaveGroup --------------------------------------------------------------------------
    def leave(self, group_id: str, leaving: list[tuple[str, str | None]]) -> tuple[int, list[int]]:
        """(top-level error, per-member errors) for members given as (member id, instance id)."""
        group = self.groups.get(group_id)
        if group is None:
            return E.NONE, [_code(UnknownMemberIdError)] * len(leaving)
        if group.is_in(S.DEAD):
            return _code(CoordinatorNotAvailableError), [_code(CoordinatorNotAvailableError)] * len(leaving)
        return E.NONE, [self._leave_one(group, mid, iid) for mid, iid in leaving]

    def _leave_one(self, group: ClassicGroup, member_id: str, instance_id: str | None) -> int:
        if instance_id is not None:
            known = group.static_members.get(instance_id)
            if known is None:
                return _code(UnknownMemberIdError)
            if member_id and member_id != known:
                return _code(FencedInstanceIdError)
            member_id = known
        if member_id in group.pending_members:
            del group.pending_members[member_id]
            self._check_join_complete(group)
            return E.NONE
        member = group.members.get(member_id)
        if member is None:
            return _code(UnknownMemberIdError)
        self._remove_member_and_update_group(group, member, "left the group")
        return E.NONE

    # ---- removal and timeouts ----------------------------------------------------------------
    def _remove_member(self, group: ClassicGroup, member: Member, code: int) -> None:
        for_join, member.join_callback = member.join_callback, None
        for_sync, member.sync_callback = member.sync_callback, None
        if for_join is not None:
            for_join(JoinResult(code, member.member_id))
        if for_sync is not None:
            for_sync(SyncResult(code))
        group.remove(member.member_id)

    def _remove_member_and_update_group(self, group: ClassicGroup, member: Member, reason: str) -> None:
        log.debug("group %s: removing member %s (%s)", group.group_id, member.member_id, reason)
        self._remove_member(group, member, _code(UnknownMemberIdError))
        if group.is_in(S.STABLE, S.COMPLETING_REBALANCE):
            self._prepare_rebalance(group, f"member {member.member_id} {reason}")
        self._check_join_complete(group)

    def tick(self, now_ms: int) -> None:
        for group in list(self.groups.values()):
            self._expire_pending_members(group, now_ms)
            self._expire_sessions(group, now_ms)
            self._expire_pending_sync(group, now_ms)
            if group.is_in(S.PREPARING_REBALANCE) and group.join_deadline_ms is not None \
                    and now_ms >= group.join_deadline_ms:
                self._on_join_deadline(group)

    def _expire_pending_members(self, group: ClassicGroup, now_ms: int) -> None:
        expired = [mid for mid, deadline in group.pending_members.items() if now_ms >= deadline]
        for mid in expired:
            del group.pending_members[mid]
        if expired:
            self._check_join_complete(group)

    def _expire_sessions(self, group: ClassicGroup, now_ms: int) -> None:
        for member in list(group.members.values()):
            # Members parked on a JoinGroup or SyncGroup are covered by the rebalance deadlines.
            if member.awaiting_join or member.awaiting_sync:
                continue
            if now_ms >= member.last_heartbeat_ms + member.session_timeout_ms:
                self._remove_member_and_update_group(group, member, "session timed out")

    def _expire_pending_sync(self, group: ClassicGroup, now_ms: int) -> None:
        if not group.pending_sync or group.sync_deadline_ms is None or now_ms < group.sync_deadline_ms:
            return
        if not group.is_in(S.COMPLETING_REBALANCE, S.STABLE):
            return
        for mid in list(group.pending_sync):
            member = group.members.get(mid)
            if member is not None:
                self._remove_member(group, member, _code(UnknownMemberIdError))
        group.pending_sync.clear()
        self._prepare_rebalance(group, "members did not send SyncGroup in time")
        self._check_join_complete(group)

    def _on_join_deadline(self, group: ClassicGroup) -> None:
        if group.initial_join:
            self._on_initial_delay_expired(group)
        else:
            self._complete_join(group)

    def fail_all_waiters(self) -> None:
        """The partition moved away: everyone parked here must find the new coordinator."""
        code = _code(NotCoordinatorError)
        for group in self.groups.values():
            for member in group.members.values():
                for_join, member.join_callback = member.join_callback, None
                for_sync, member.sync_callback = member.sync_callback, None
                if for_join is not None:
                    for_join(JoinResult(code, member.member_id))
                if for_sync is not None:
                    for_sync(SyncResult(code))
