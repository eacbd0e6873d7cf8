"""ShareGroupHeartbeat (Kafka's GroupMetadataManager.shareGroupHeartbeat) and share member sessions.

A member joins with epoch 0 and its own member id, heartbeats with the epoch it was given, and leaves
with epoch -1. Each heartbeat may move the group epoch (a member joined or left, a subscription or a
subscribed topic changed); the target assignment (the "simple" assignor, by topic id) is then
recomputed, and the member is given its target with the assignment epoch as its member epoch. Other
members pick up their new targets at their next heartbeat. A member silent for share.session.timeout.ms
is removed (tick, on the injectable clock). The group epoch is written to `__consumer_offsets` (a
ShareGroupMetadata record) whenever it moves, so the group survives a coordinator move; its members
rejoin there (UNKNOWN_MEMBER_ID makes a client rejoin with epoch 0 and the same member id).

Collaborators come through the constructor (topics view, configs, clock, epoch writer, listener).
Event-loop owned.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol

from kafka_txn_broker.formats.errors import (
    BrokerResponseError,
    FencedMemberEpochError,
    GroupIdNotFoundError,
    GroupMaxSizeReachedError,
    InvalidRequestError,
    UnknownMemberIdError,
)
from kafka_txn_broker.group.group_type import SHARE, wrong_type
from kafka_txn_broker.group.modern.assignor import Assignment, PartitionAssignor, TopicId, TopicsView
from kafka_txn_broker.group.modern.session_timers import SessionTimers
from kafka_txn_broker.group.modern.simple_assignor import SimpleAssignor
from kafka_txn_broker.group.share_group import ShareGroup, ShareGroupMember

if TYPE_CHECKING:
    from kafka_txn_broker.clock import Clock

JOIN, LEAVE = 0, -1


@dataclass(frozen=True, slots=True)
class ShareHeartbeat:
    group_id: str
    member_id: str
    member_epoch: int
    rack_id: str | None = None
    subscribed_topic_names: list[str] | None = None
    client_id: str = ""
    client_host: str = ""


@dataclass(frozen=True, slots=True)
class ShareHeartbeatResult:
    error: int = 0
    message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: Assignment | None = None  # None: unchanged since the last response


class ShareGroupConfigs(Protocol):
    def share_session_timeout_ms(self, group_id: str) -> int: ...

    def share_heartbeat_interval_ms(self, group_id: str) -> int: ...


class ShareMembershipListener(Protocol):
    def on_member_removed(self, group_id: str, member_id: str) -> None:
        """The member left or its session expired: whatever it holds goes back."""
        ...


@dataclass(frozen=True, slots=True)
class ShareGroupContext:
    """What a share group coordinator needs from the node: the topics, the group configs, and who to
    tell when a member is gone (the share-partition leaders, which release its records)."""

    topics: TopicsView
    configs: ShareGroupConfigs
    listener: ShareMembershipListener | None = None


class ShareMembership:
    def __init__(self, groups: MutableMapping[str, ShareGroup], context: ShareGroupContext, clock: Clock, *,
                 max_size: int, store_epoch: Callable[[ShareGroup], None], other_group_exists: Callable[[str], bool],
                 assignor: PartitionAssignor | None = None) -> None:
        self.groups = groups
        self.topics = context.topics
        self.configs = context.configs
        self.listener = context.listener
        self.clock = clock
        self.max_size = max_size
        self.store_epoch = store_epoch
        self.other_group_exists = other_group_exists
        self.assignor: PartitionAssignor = assignor or SimpleAssignor()
        self.timers = SessionTimers()

    # ---- ShareGroupHeartbeat -------------------------------------------------------------------------
    def heartbeat(self, req: ShareHeartbeat) -> ShareHeartbeatResult:
        try:
            _validate(req)
            if self.other_group_exists(req.group_id):
                raise wrong_type(req.group_id, SHARE)
            if req.member_epoch == LEAVE:
                return self._leave(req)
            return self._join_or_heartbeat(req)
        except BrokerResponseError as exc:
            return ShareHeartbeatResult(int(exc.errno), str(exc.args[0]) if exc.args else None, req.member_id,
                                        req.member_epoch)

    def _join_or_heartbeat(self, req: ShareHeartbeat) -> ShareHeartbeatResult:
        group = self.groups.get(req.group_id)
        if group is None and req.member_epoch != JOIN:
            raise GroupIdNotFoundError(f"Share group {req.group_id} not found.")
        if group is None:
            group = self.groups[req.group_id] = ShareGroup(req.group_id)
        saved = _save(group)
        try:
            member, was_new = self._member(group, req)
            changed = self._update(member, req) or was_new
            if group.refresh_subscription_metadata(self.topics) or changed:
                group.bump_epoch()
                self.store_epoch(group)
        except BrokerResponseError:
            _restore(self.groups, group, saved)
            raise
        group.update_target_assignment(self.assignor, self.topics)
        assignment_changed = self._reconcile(group, member)
        self.timers.schedule(group.group_id, member.member_id,
                             self.clock.millis() + self.configs.share_session_timeout_ms(group.group_id))
        send = assignment_changed or req.member_epoch == JOIN
        return ShareHeartbeatResult(0, None, member.member_id, member.member_epoch,
                                    self.configs.share_heartbeat_interval_ms(group.group_id),
                                    dict(member.assigned) if send else None)

    def _member(self, group: ShareGroup, req: ShareHeartbeat) -> tuple[ShareGroupMember, bool]:
        member = group.members.get(req.member_id)
        if req.member_epoch == JOIN:
            if member is None and len(group.members) >= self.max_size:
                raise GroupMaxSizeReachedError(
                    f"The share group {group.group_id} has reached its maximum capacity of {self.max_size} members.")
            if member is None:
                member = group.members[req.member_id] = ShareGroupMember(req.member_id)
                return member, True
            return member, False  # the same client rejoining (e.g. after UNKNOWN_MEMBER_ID elsewhere)
        if member is None:
            raise UnknownMemberIdError(f"Member {req.member_id} is not a member of group {group.group_id}.")
        if req.member_epoch != member.member_epoch:
            raise FencedMemberEpochError(
                f"The share group member has a {'greater' if req.member_epoch > member.member_epoch else 'smaller'}"
                f" member epoch ({req.member_epoch}) than the one known by the group coordinator "
                f"({member.member_epoch}).")
        return member, False

    @staticmethod
    def _update(member: ShareGroupMember, req: ShareHeartbeat) -> bool:
        """Apply the request's member fields; True if its subscriptions changed."""
        member.client_id, member.client_host = req.client_id, req.client_host
        if req.rack_id is not None:
            member.rack_id = req.rack_id
        subscriptions_changed = False
        if req.subscribed_topic_names is not None:
            names = frozenset(req.subscribed_topic_names)
            subscriptions_changed = names != member.subscribed_topic_names
            member.subscribed_topic_names = names
        return subscriptions_changed

    @staticmethod
    def _reconcile(group: ShareGroup, member: ShareGroupMember) -> bool:
        """A share member moves to its target at once; True if its assignment changed."""
        target = group.target.get(member.member_id, {})
        changed = target != member.assigned
        member.assigned = dict(target)
        if member.member_epoch != group.assignment_epoch:
            member.previous_member_epoch, member.member_epoch = member.member_epoch, group.assignment_epoch
        return changed

    # ---- leaving -------------------------------------------------------------------------------------
    def _leave(self, req: ShareHeartbeat) -> ShareHeartbeatResult:
        group = self.groups.get(req.group_id)
        if group is None or req.member_id not in group.members:
            raise UnknownMemberIdError(f"Member {req.member_id} is not a member of group {req.group_id}.")
        self.remove_member(group, req.member_id)
        return ShareHeartbeatResult(0, None, req.member_id, LEAVE,
                                    self.configs.share_heartbeat_interval_ms(group.group_id))

    def remove_member(self, group: ShareGroup, member_id: str) -> None:
        """Fence a member (left, or its session expired): the group epoch moves, the others are
        reassigned at their next heartbeat, and its acquired records are released."""
        group.remove_member(member_id)
        self.timers.cancel(group.group_id, member_id)
        group.bump_epoch()
        group.refresh_subscription_metadata(self.topics)
        group.update_target_assignment(self.assignor, self.topics)
        # If the write fails the epoch stays in memory; the next change writes it (a new coordinator
        # starts from the last written one, which only makes its members rejoin).
        with contextlib.suppress(BrokerResponseError):
            self.store_epoch(group)
        if self.listener is not None:
            self.listener.on_member_removed(group.group_id, member_id)

    def tick(self) -> list[tuple[str, str]]:
        """Remove the members whose session expired; return them."""
        expired = self.timers.expired(self.clock.millis())
        for group_id, member_id in expired:
            group = self.groups.get(group_id)
            if group is not None and member_id in group.members:
                self.remove_member(group, member_id)
        return expired


def _validate(req: ShareHeartbeat) -> None:
    if not req.group_id:
        raise InvalidRequestError("GroupId can't be empty.")
    if not req.member_id:
        raise InvalidRequestError("MemberId can't be empty.")
    if req.member_epoch < LEAVE:
        raise InvalidRequestError(f"MemberEpoch is invalid: {req.member_epoch}.")
    if req.member_epoch == JOIN and not req.subscribed_topic_names:
        raise InvalidRequestError("SubscribedTopicNames must be set in first request.")


_Saved = tuple[int, int, dict[str, ShareGroupMember], tuple[tuple[str, TopicId, int], ...]]


def _save(group: ShareGroup) -> _Saved:
    return (group.group_epoch, group.assignment_epoch, {k: replace(m) for k, m in group.members.items()},
            group.subscription_metadata)


def _restore(groups: MutableMapping[str, ShareGroup], group: ShareGroup, saved: _Saved) -> None:
    group.group_epoch, group.assignment_epoch, group.members = saved[0], saved[1], saved[2]
    group.subscription_metadata = saved[3]
    if group.is_empty and group.group_epoch == 0:
        groups.pop(group.group_id, None)  # created by this failed request
