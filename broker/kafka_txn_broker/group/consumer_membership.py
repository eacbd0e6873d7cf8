"""ConsumerGroupHeartbeat (Kafka's GroupMetadataManager.consumerGroupHeartbeat) and consumer member sessions.

A member joins with epoch 0 and its own member id, heartbeats with the epoch it was given, and leaves
with epoch -1 (-2 for a static member, see below). Each heartbeat may move the group epoch (a member joined or
left, a subscription changed, a subscribed topic appeared or changed); the target assignment is then
recomputed by the group's server assignor (uniform, or range; the members' most requested one). The
member is then reconciled towards its target (current_assignment_builder.py): partitions it must give
up are revoked first, at its current epoch, and partitions still held by another member are withheld
until that member released them. Every change is written to `__consumer_offsets` (consumer_records.py)
before it is applied, so a new coordinator resumes the group with its members and assignments.

Sessions: a member silent for consumer.session.timeout.ms is fenced; a member that does not revoke
within its rebalance timeout is fenced too (both on the injectable clock, checked by tick()).

Static members (group.instance.id), as Kafka: one instance id, one live member (a second one joining gets
UNRELEASED_INSTANCE_ID). A static member leaving with -2 stays in the group at epoch -2 with its
assignment, so nothing is rebalanced; a member joining with the same instance id (a new member id) takes
its place and its assignment at once, without a new group epoch unless its subscription differs; if none
comes, the session timeout removes it like any silent member. group.consumer.max.size caps the members
(GROUP_MAX_SIZE_REACHED), the left static member counted, its replacement not a new one.

Regex subscriptions and ACLs (Kafka's TopicRegexResolver): with an authorizer, a regex resolves only to the
topics the resolving request's principal may DESCRIBE (TOPIC, literal name); the others are left out of
every regex of the group, so nobody is assigned them. Kafka resolves all the group's regexes at once, in
the context of the heartbeat that triggered the refresh (a regex new to the group, new topics, or the
refresh interval). Here the regexes are re-matched at every heartbeat, so the context kept is the one of
the member that last brought a regex new to the group (or, none known since a load, the next
heartbeating member): taking each heartbeat's would rebalance a group of mixed principals at every
heartbeat. An ACL granted later is seen at the next heartbeat (Kafka: at its next refresh).

Not served (stated, not emulated): classic-protocol members in consumer groups (online migration), the
assignment interval batching (every heartbeat computes the target at once) and the regex refresh
batching (group.consumer.regex.refresh.interval.ms: every heartbeat re-matches the regexes).

Collaborators come through the constructor (topics, configs, clock, record writer). Event-loop owned.
"""

from __future__ import annotations

import re
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol

from kafka_txn_broker.formats.errors import (
    BrokerResponseError,
    FencedInstanceIdError,
    FencedMemberEpochError,
    GroupIdNotFoundError,
    GroupMaxSizeReachedError,
    InvalidRegularExpressionError,
    InvalidRequestError,
    UnknownMemberIdError,
    UnreleasedInstanceIdError,
    UnsupportedAssignorError,
)
from kafka_txn_broker.group import consumer_records
from kafka_txn_broker.group.consumer_group import (
    JOIN,
    LEAVE,
    STATIC_LEAVE,
    ConsumerGroup,
    ConsumerGroupMember,
    MemberState,
)
from kafka_txn_broker.group.current_assignment_builder import reconcile
from kafka_txn_broker.group.group_type import CONSUMER, wrong_type
from kafka_txn_broker.group.modern.assignor import Assignment, PartitionAssignor, TopicCatalog
from kafka_txn_broker.group.modern.range_assignor import RangeAssignor
from kafka_txn_broker.group.modern.session_timers import SessionTimers
from kafka_txn_broker.group.modern.target_assignment import metadata_hash, subscription_metadata
from kafka_txn_broker.group.modern.uniform_assignor import UniformAssignor
from kafka_txn_broker.metadata.topics import INTERNAL_TOPICS

if TYPE_CHECKING:
    from kafka_txn_broker.clock import Clock

# group.consumer.assignors: the first is the default.
ASSIGNORS: dict[str, PartitionAssignor] = {"uniform": UniformAssignor(), "range": RangeAssignor()}
DEFAULT_ASSIGNOR = "uniform"
REJOIN = "The member must abandon all its partitions and rejoin."
MAX_SIZE = 2**31 - 1  # group.consumer.max.size's default: Integer.MAX_VALUE


@dataclass(frozen=True, slots=True)
class ConsumerHeartbeat:
    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: list[str] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    owned: Assignment | None = None  # TopicPartitions; None: unchanged since the last heartbeat
    client_id: str = ""
    client_host: str = ""  # "/" + the peer address, as Kafka reports it
    principal: str = "User:ANONYMOUS"

    @property
    def requester(self) -> Requester:
        return Requester(self.principal, self.client_host.removeprefix("/"))

    @property
    def is_full(self) -> bool:
        """Kafka's "full request": the client (re)sent everything, so it gets its assignment back."""
        return (self.rebalance_timeout_ms != -1 and self.owned is not None
                and (self.subscribed_topic_names is not None or self.subscribed_topic_regex is not None))


@dataclass(frozen=True, slots=True)
class ConsumerHeartbeatResult:
    error: int = 0
    message: str | None = None
    member_id: str | None = None
    member_epoch: int = -1
    heartbeat_interval_ms: int = 0
    assignment: Assignment | None = None  # None: unchanged since the last response


class ConsumerGroupConfigs(Protocol):
    def consumer_session_timeout_ms(self, group_id: str) -> int: ...

    def consumer_heartbeat_interval_ms(self, group_id: str) -> int: ...


@dataclass(frozen=True, slots=True)
class Requester:
    """Who a request came from, as ACLs see it."""
    principal: str
    host: str


class TopicDescribeCheck(Protocol):
    """May this principal, from this host, DESCRIBE this topic (the broker's authorizer)?"""
    def __call__(self, principal: str, host: str, topic: str) -> bool: ...


@dataclass(frozen=True, slots=True)
class ConsumerGroupContext:
    topics: TopicCatalog
    configs: ConsumerGroupConfigs
    # None: no authorizer, a regex resolves to every live (non-internal) topic it matches.
    describe_topic: TopicDescribeCheck | None = None


Writer = Callable[[list[consumer_records.Record]], object]


class ConsumerMembership:
    def __init__(self, groups: MutableMapping[str, ConsumerGroup], context: ConsumerGroupContext, clock: Clock, *,
                 write: Writer, other_group: Callable[[str], str | None],
                 drop_empty_classic: Callable[[str], bool], max_size: int = MAX_SIZE) -> None:
        self.groups = groups
        self.topics = context.topics
        self.configs = context.configs
        self.describe_topic = context.describe_topic
        self.clock = clock
        self.write = write
        # The type of a non-consumer group with this id ("classic", "share"), else None.
        self.other_group = other_group
        # Replace an empty classic group by a consumer group (writes its tombstone); False if not empty.
        self.drop_empty_classic = drop_empty_classic
        self.max_size = max_size  # group.consumer.max.size
        self.sessions = SessionTimers()
        self.revocations = SessionTimers()

    # ---- ConsumerGroupHeartbeat ----------------------------------------------------------------------
    def heartbeat(self, req: ConsumerHeartbeat) -> ConsumerHeartbeatResult:
        try:
            _validate(req)
            if req.member_epoch in (LEAVE, STATIC_LEAVE):
                return self._leave(req)
            return self._join_or_heartbeat(req)
        except BrokerResponseError as exc:
            return ConsumerHeartbeatResult(int(exc.errno), str(exc.args[0]) if exc.args else None)

    def _group(self, req: ConsumerHeartbeat) -> ConsumerGroup:
        group = self.groups.get(req.group_id)
        if group is not None:
            return group
        other = self.other_group(req.group_id)
        if other == "classic" and req.member_epoch == JOIN and self.drop_empty_classic(req.group_id):
            other = None
        if other is not None:
            raise wrong_type(req.group_id, CONSUMER)
        if req.member_epoch != JOIN:
            raise GroupIdNotFoundError(f"Consumer group {req.group_id} not found.")
        return ConsumerGroup(req.group_id)

    def _join_or_heartbeat(self, req: ConsumerHeartbeat) -> ConsumerHeartbeatResult:
        group = self._group(req)
        known = req.group_id in self.groups
        before = consumer_records.Snapshot.of(group) if known else consumer_records.Snapshot.empty()
        self._check_size(group, req)
        replaced = self._left_static_member(group, req)
        old = group.members.get(req.member_id)
        old_assigned, old_epoch = (dict(old.assigned), old.member_epoch) if old is not None else ({}, 0)
        member = self._take_over(group, replaced, req.member_id) if replaced else self._member(group, req)
        group.members[req.member_id] = member
        # A replacement is the same instance under a new id: only a different subscription moves the epoch.
        new_regex = self._brings_new_regex(group, old, req)
        changed = self._update(member, req) or (old is None and replaced is None)
        # Unknown since a load (ACLs on): the matches before this are not known, only the logged hash.
        first = self.describe_topic is not None and group.regex_requester is None
        if new_regex or group.regex_requester is None:
            group.regex_requester = req.requester
        resolved = self._resolve_regexes(group)
        if first:
            self._adopt_if_logged(group)
        else:
            changed = resolved or changed
        if group.refresh_subscription_metadata(self.topics) or changed:
            group.bump_epoch()
        assignor = ASSIGNORS[group.preferred_assignor(DEFAULT_ASSIGNOR)]
        group.update_target_assignment(assignor, self.topics)
        updated = reconcile(member, group.assignment_epoch, group.target.get(member.member_id, {}),
                            group.partition_epochs().get, req.owned)
        group.members[member.member_id] = updated
        self._commit(group, before)
        if replaced is not None and replaced.member_id != updated.member_id:
            self._cancel_timers(group.group_id, replaced.member_id)
        self._schedule(group, updated)
        send = (req.member_epoch == JOIN or req.is_full or updated.assigned != old_assigned
                or updated.member_epoch != old_epoch)
        return ConsumerHeartbeatResult(0, None, updated.member_id, updated.member_epoch,
                                       self.configs.consumer_heartbeat_interval_ms(group.group_id),
                                       dict(updated.assigned) if send else None)

    def _commit(self, group: ConsumerGroup, before: consumer_records.Snapshot) -> None:
        """Write what changed, then keep it; on a failed write the group is as before."""
        records = consumer_records.changes(group.group_id, before, consumer_records.Snapshot.of(group))
        try:
            if records:
                self.write(records)
        except Exception:
            if before.group_epoch < 0:
                self.groups.pop(group.group_id, None)
            else:
                before.restore(group)
            raise
        self.groups[group.group_id] = group

    def _check_size(self, group: ConsumerGroup, req: ConsumerHeartbeat) -> None:
        """Kafka's throwIfConsumerGroupIsFull: a full group takes no new member; a known member id, or an
        instance id a static member holds (its replacement, or UNRELEASED_INSTANCE_ID), is not new."""
        if len(group.members) < self.max_size or req.member_id in group.members:
            return
        if req.instance_id is not None and group.static_member(req.instance_id) is not None:
            return
        raise GroupMaxSizeReachedError(
            f"The consumer group has reached its maximum capacity of {self.max_size} members.")

    @staticmethod
    def _left_static_member(group: ConsumerGroup, req: ConsumerHeartbeat) -> ConsumerGroupMember | None:
        """The static member a join with its instance id replaces: one that left with -2."""
        if req.member_epoch != JOIN or req.instance_id is None:
            return None
        static = group.static_member(req.instance_id)
        return static if static is not None and static.member_epoch == STATIC_LEAVE else None

    @staticmethod
    def _take_over(group: ConsumerGroup, old: ConsumerGroupMember, member_id: str) -> ConsumerGroupMember:
        """The left static member under the joining member's id, at epoch 0, with its assignment and its
        target (Kafka's replaceMember): reconciling it gives the same partitions back at once."""
        target = group.target.get(old.member_id)
        group.remove_member(old.member_id)
        if target is not None:
            group.target[member_id] = target
        return replace(old, member_id=member_id, member_epoch=0, previous_member_epoch=0)

    def _member(self, group: ConsumerGroup, req: ConsumerHeartbeat) -> ConsumerGroupMember:
        member = group.members.get(req.member_id)
        if req.instance_id is not None:
            static = group.static_member(req.instance_id)
            if static is not None and static.member_id != req.member_id:
                if req.member_epoch == JOIN:
                    raise UnreleasedInstanceIdError(f"Static member {req.member_id} with instance id "
                                                    f"{req.instance_id} cannot join the group because the "
                                                    f"instance id is owned by member {static.member_id}.")
                raise FencedInstanceIdError(f"Static member {req.member_id} with instance id {req.instance_id} "
                                            f"was fenced by member {static.member_id}.")
        if req.member_epoch == JOIN:
            if member is None:
                return ConsumerGroupMember(req.member_id)
            # Rejoining: the client gave up all its partitions (it sends none with epoch 0).
            member.member_epoch, member.state = 0, MemberState.STABLE
            member.assigned, member.pending_revocation = {}, {}
            return member
        if member is None:
            raise UnknownMemberIdError(f"Member {req.member_id} is not a member of group {group.group_id}.")
        if req.member_epoch > member.member_epoch:
            raise FencedMemberEpochError(
                f"The consumer group member has a greater member epoch ({req.member_epoch}) than the one known by "
                f"the group coordinator ({member.member_epoch}). {REJOIN}")
        if req.member_epoch < member.member_epoch and not (
                req.member_epoch == member.previous_member_epoch and _subset(req.owned, member.assigned)):
            # The previous epoch with a subset of the assignment is a lost response: answered again.
            raise FencedMemberEpochError(
                f"The consumer group member has a smaller member epoch ({req.member_epoch}) than the one known by "
                f"the group coordinator ({member.member_epoch}). {REJOIN}")
        return member

    def _update(self, member: ConsumerGroupMember, req: ConsumerHeartbeat) -> bool:
        """Apply the request's member fields; True if what the assignor sees changed."""
        before = (member.subscribed_topic_names, member.subscribed_topic_regex, member.server_assignor,
                  member.rack_id)
        member.client_id, member.client_host = req.client_id, req.client_host
        if req.instance_id is not None:
            member.instance_id = req.instance_id
        if req.rack_id is not None:
            member.rack_id = req.rack_id
        if req.rebalance_timeout_ms > 0:
            member.rebalance_timeout_ms = req.rebalance_timeout_ms
        if req.subscribed_topic_names is not None:
            member.subscribed_topic_names = frozenset(req.subscribed_topic_names)
        if req.subscribed_topic_regex is not None:
            member.subscribed_topic_regex = req.subscribed_topic_regex or None
        if req.server_assignor is not None:
            member.server_assignor = req.server_assignor or None
        after = (member.subscribed_topic_names, member.subscribed_topic_regex, member.server_assignor, member.rack_id)
        return before != after

    @staticmethod
    def _brings_new_regex(group: ConsumerGroup, old: ConsumerGroupMember | None, req: ConsumerHeartbeat) -> bool:
        """Does the member set a regex no member of the group has (Kafka refreshes in its context then)?"""
        regex = req.subscribed_topic_regex
        if not regex or (old is not None and old.subscribed_topic_regex == regex):
            return False
        return all(m.subscribed_topic_regex != regex for m in group.members.values() if m is not old)

    def _resolve_regexes(self, group: ConsumerGroup) -> bool:
        """Match the members' regexes against the live topics the group's regex requester may describe;
        True if a match set changed."""
        regexes = group.regexes()
        names = self._describable([n for n in self.topics.topic_names() if n not in INTERNAL_TOPICS], group)
        resolved = {r: frozenset(n for n in names if _compile(r).fullmatch(n)) for r in regexes}
        changed = resolved != group.regex_matches
        group.regex_matches = resolved
        return changed

    def _adopt_if_logged(self, group: ConsumerGroup) -> None:
        """Keep the subscribed topics' metadata if it is what the logged epoch was computed for."""
        current = subscription_metadata(group.subscribed_topic_names(), self.topics)
        if metadata_hash(current) == group.metadata_hash:
            group.subscription_metadata = current

    def _describable(self, names: list[str], group: ConsumerGroup) -> list[str]:
        if self.describe_topic is None:
            return names
        who = group.regex_requester
        if who is None:
            # Only between a load and the group's first heartbeat: nobody to authorize, so nothing (the
            # first heartbeat resolves again in its member's context).
            return []
        check = self.describe_topic
        return [n for n in names if check(who.principal, who.host, n)]

    def _schedule(self, group: ConsumerGroup, member: ConsumerGroupMember) -> None:
        now = self.clock.millis()
        self.sessions.schedule(group.group_id, member.member_id,
                               now + self.configs.consumer_session_timeout_ms(group.group_id))
        if member.state is MemberState.UNREVOKED_PARTITIONS:
            if self.revocations.deadline(group.group_id, member.member_id) is None:
                self.revocations.schedule(group.group_id, member.member_id, now + max(member.rebalance_timeout_ms, 0))
        else:
            self.revocations.cancel(group.group_id, member.member_id)

    # ---- leaving -------------------------------------------------------------------------------------
    def _leave(self, req: ConsumerHeartbeat) -> ConsumerHeartbeatResult:
        group = self.groups.get(req.group_id)
        if group is None:
            raise GroupIdNotFoundError(f"Consumer group {req.group_id} not found.")
        member_id = req.member_id
        if req.instance_id is not None:
            static = group.static_member(req.instance_id)
            if static is None:
                raise UnknownMemberIdError(f"Instance id {req.instance_id} is unknown.")
            if static.member_id != member_id:
                raise FencedInstanceIdError(f"Static member {member_id} with instance id {req.instance_id} "
                                            f"was fenced by member {static.member_id}.")
        if member_id not in group.members:
            raise UnknownMemberIdError(f"Member {member_id} is not a member of group {group.group_id}.")
        if req.member_epoch == STATIC_LEAVE:
            self._static_leave(group, member_id)
        else:
            self.remove_member(group, member_id)
        return ConsumerHeartbeatResult(0, None, member_id, req.member_epoch,
                                       self.configs.consumer_heartbeat_interval_ms(group.group_id))

    def _static_leave(self, group: ConsumerGroup, member_id: str) -> None:
        """Kafka's consumerGroupStaticMemberGroupLeave: the member stays, at epoch -2, with its assignment
        (no rebalance) and nothing left to revoke. Its session timer runs on from its last heartbeat: if
        no member takes its instance id over meanwhile, the timeout removes it."""
        before = consumer_records.Snapshot.of(group)
        member = group.members[member_id]
        member.member_epoch, member.pending_revocation = STATIC_LEAVE, {}
        self._commit(group, before)
        self.revocations.cancel(group.group_id, member_id)

    def remove_member(self, group: ConsumerGroup, member_id: str) -> None:
        """Fence a member (left, session or rebalance timeout): the group epoch moves and the others are
        reassigned at their next heartbeat; its partitions are free at once."""
        before = consumer_records.Snapshot.of(group)
        group.remove_member(member_id)
        self._resolve_regexes(group)
        group.refresh_subscription_metadata(self.topics)
        group.bump_epoch()
        if group.members:
            group.update_target_assignment(ASSIGNORS[group.preferred_assignor(DEFAULT_ASSIGNOR)], self.topics)
        else:
            group.assignment_epoch = group.group_epoch
        self._cancel_timers(group.group_id, member_id)
        self._commit(group, before)

    def _cancel_timers(self, group_id: str, member_id: str) -> None:
        self.sessions.cancel(group_id, member_id)
        self.revocations.cancel(group_id, member_id)

    def tick(self) -> list[tuple[str, str]]:
        """Fence the members whose session or revocation deadline passed; return them."""
        now = self.clock.millis()
        expired = self.sessions.expired(now) + self.revocations.expired(now)
        for group_id, member_id in expired:
            group = self.groups.get(group_id)
            if group is not None and member_id in group.members:
                try:
                    self.remove_member(group, member_id)
                except BrokerResponseError:
                    # Not written: the member stays until a later write succeeds (its next expiry).
                    timeout = self.configs.consumer_session_timeout_ms(group_id)
                    self.sessions.schedule(group_id, member_id, now + timeout)
        return expired

    def on_loaded(self) -> None:
        """Start the sessions of the members a replay restored (they must heartbeat this coordinator)."""
        for group in self.groups.values():
            # The topics as they are now, if they are what the group's epoch was computed for (else the
            # first heartbeat moves the epoch).
            self._resolve_regexes(group)
            self._adopt_if_logged(group)
            for member in group.members.values():
                self._schedule(group, member)


def _subset(owned: Assignment | None, assigned: Assignment) -> bool:
    if owned is None:
        return False
    return all(ps <= assigned.get(t, frozenset()) for t, ps in owned.items())


def _compile(regex: str) -> re.Pattern[str]:
    try:
        return re.compile(regex)
    except re.error as exc:
        raise InvalidRegularExpressionError(
            f"SubscribedTopicRegex {regex} is not a valid regular expression: {exc}.") from None


def _validate(req: ConsumerHeartbeat) -> None:
    if not req.group_id:
        raise InvalidRequestError("GroupId can't be empty.")
    if req.instance_id == "":
        raise InvalidRequestError("InstanceId can't be empty.")
    if req.member_epoch < STATIC_LEAVE:
        raise InvalidRequestError(f"MemberEpoch is invalid: {req.member_epoch}.")
    if req.member_epoch == STATIC_LEAVE and req.instance_id is None:
        raise InvalidRequestError("InstanceId can't be null.")
    if req.member_epoch == JOIN:
        if not req.member_id:
            raise InvalidRequestError("MemberId can't be empty.")
        if req.rebalance_timeout_ms == -1:
            raise InvalidRequestError("RebalanceTimeoutMs must be provided in first request.")
        if req.owned:
            raise InvalidRequestError("TopicPartitions must be empty when (re-)joining.")
        if req.subscribed_topic_names is None and req.subscribed_topic_regex is None:
            raise InvalidRequestError("SubscribedTopicNames or SubscribedTopicRegex must be set in first request.")
    elif not req.member_id:
        raise InvalidRequestError("MemberId can't be empty.")
    # Checked before anything changes: a refused heartbeat leaves the group as it was.
    if req.server_assignor is not None and req.server_assignor not in ASSIGNORS:
        raise UnsupportedAssignorError(f"ServerAssignor {req.server_assignor} is not supported. "
                                       f"Supported assignors: {', '.join(ASSIGNORS)}.")
    if req.subscribed_topic_regex:
        _compile(req.subscribed_topic_regex)
