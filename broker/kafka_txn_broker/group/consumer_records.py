"""A consumer group's state as `__consumer_offsets` records, and back (Kafka's GroupCoordinatorRecordHelpers
and the consumer-group part of GroupMetadataManager.replay).

`changes(before, after)` gives the records that turn the written state `before` into `after`, in Kafka's
order: member metadata (5), group epoch (3), target assignment members (7), target assignment epoch (6),
current member assignments (8); a member that left gets tombstones for its 8, 7 and 5 records first.
`replay(groups, key, value)` applies one record to the loaded groups, so a new coordinator rebuilds the
same groups, members, epochs, targets and assignments (regex matches are re-resolved from live topics).

    snapshot = Snapshot.of(group); ...change group...; records = changes(snapshot, Snapshot.of(group))

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from dataclasses import dataclass, replace

from kafka_txn_broker.formats import consumer_group_records as fmt
from kafka_txn_broker.group.consumer_group import ConsumerGroup, ConsumerGroupMember, MemberState
from kafka_txn_broker.group.modern.assignor import Assignment
from kafka_txn_broker.group.modern.target_assignment import SubscriptionMetadata, metadata_hash

Record = tuple[bytes, bytes | None]


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What the log holds of one group (also what a failed write restores)."""

    group_epoch: int
    assignment_epoch: int
    members: dict[str, ConsumerGroupMember]
    target: dict[str, Assignment]
    metadata_hash: int = 0
    # Not written (re-derived from live topics), but restored with the rest after a failed write.
    subscription_metadata: SubscriptionMetadata = ()
    regex_matches: tuple[tuple[str, frozenset[str]], ...] = ()

    @classmethod
    def of(cls, group: ConsumerGroup) -> Snapshot:
        return cls(group.group_epoch, group.assignment_epoch, {k: replace(m) for k, m in group.members.items()},
                   {k: dict(v) for k, v in group.target.items()}, metadata_hash(group.subscription_metadata),
                   group.subscription_metadata,
                   tuple(group.regex_matches.items()))

    @classmethod
    def empty(cls) -> Snapshot:
        return cls(-1, -1, {}, {})

    def restore(self, group: ConsumerGroup) -> None:
        group.group_epoch, group.assignment_epoch = self.group_epoch, self.assignment_epoch
        group.subscription_metadata, group.regex_matches = self.subscription_metadata, dict(self.regex_matches)
        group.members = {k: replace(m) for k, m in self.members.items()}
        group.target = {k: dict(v) for k, v in self.target.items()}


def _metadata(m: ConsumerGroupMember) -> fmt.MemberMetadataValue:
    return fmt.MemberMetadataValue(m.instance_id, m.rack_id, m.client_id, m.client_host,
                                   tuple(sorted(m.subscribed_topic_names)), m.subscribed_topic_regex,
                                   m.rebalance_timeout_ms, m.server_assignor)


def _current(m: ConsumerGroupMember) -> fmt.CurrentAssignmentValue:
    return fmt.CurrentAssignmentValue(m.member_epoch, m.previous_member_epoch, int(m.state), dict(m.assigned),
                                      dict(m.pending_revocation))


def changes(group_id: str, before: Snapshot, after: Snapshot) -> list[Record]:
    key = fmt.encode_key
    out: list[Record] = []
    for member_id in before.members.keys() - after.members.keys():
        out += [(key(fmt.CURRENT_MEMBER_ASSIGNMENT, group_id, member_id), None),
                (key(fmt.TARGET_ASSIGNMENT_MEMBER, group_id, member_id), None),
                (key(fmt.MEMBER_METADATA, group_id, member_id), None)]
    for member_id, m in after.members.items():
        old = before.members.get(member_id)
        if old is None or _metadata(old) != _metadata(m):
            out.append((key(fmt.MEMBER_METADATA, group_id, member_id), fmt.encode_member_metadata(_metadata(m))))
    if before.group_epoch != after.group_epoch:
        epoch = fmt.GroupMetadataValue(after.group_epoch, after.metadata_hash)
        out.append((key(fmt.GROUP_METADATA, group_id), fmt.encode_group_metadata(epoch)))
    for member_id, target in after.target.items():
        if member_id in after.members and before.target.get(member_id) != target:
            out.append((key(fmt.TARGET_ASSIGNMENT_MEMBER, group_id, member_id), fmt.encode_target_assignment(target)))
    if before.assignment_epoch != after.assignment_epoch:
        out.append((key(fmt.TARGET_ASSIGNMENT_METADATA, group_id), fmt.encode_assignment_epoch(after.assignment_epoch)))
    for member_id, m in after.members.items():
        old = before.members.get(member_id)
        if old is None or _current(old) != _current(m):
            value = fmt.encode_current_assignment(_current(m))
            out.append((key(fmt.CURRENT_MEMBER_ASSIGNMENT, group_id, member_id), value))
    return out


def deletion(group_id: str) -> list[Record]:
    """Tombstones of an empty group's own records (its offsets are the caller's)."""
    return [(fmt.encode_key(fmt.TARGET_ASSIGNMENT_METADATA, group_id), None),
            (fmt.encode_key(fmt.GROUP_METADATA, group_id), None)]


def replay(groups: MutableMapping[str, ConsumerGroup], k: fmt.ConsumerGroupKey, value: bytes | None) -> None:
    """Apply one consumer group record (decoded key) to the loaded groups."""
    t = k.record_type
    if t == fmt.GROUP_METADATA:
        if value is None:
            groups.pop(k.group_id, None)
        else:
            _replay_group_epoch(_group(groups, k.group_id), value)
        return
    if t == fmt.TARGET_ASSIGNMENT_METADATA:
        if value is not None:
            _group(groups, k.group_id).assignment_epoch = fmt.decode_assignment_epoch(value)
        return
    if k.member_id is None:
        return  # partition metadata (4) and resolved regexes (16): re-derived from live topics
    group = groups.get(k.group_id) if value is None else _group(groups, k.group_id)
    if group is None:
        return
    if t == fmt.MEMBER_METADATA:
        _replay_member(group, k.member_id, value)
    elif t == fmt.TARGET_ASSIGNMENT_MEMBER:
        if value is None:
            group.target.pop(k.member_id, None)
        else:
            group.target[k.member_id] = fmt.decode_target_assignment(value)
    elif t == fmt.CURRENT_MEMBER_ASSIGNMENT and value is not None and k.member_id in group.members:
        v = fmt.decode_current_assignment(value)
        m = group.members[k.member_id]
        m.member_epoch, m.previous_member_epoch = v.member_epoch, v.previous_member_epoch
        m.state = MemberState.of(v.state)
        m.assigned, m.pending_revocation = dict(v.assigned), dict(v.pending_revocation)


def _replay_group_epoch(group: ConsumerGroup, value: bytes) -> None:
    v = fmt.decode_group_metadata(value)
    group.group_epoch, group.metadata_hash = v.epoch, v.metadata_hash


def _group(groups: MutableMapping[str, ConsumerGroup], group_id: str) -> ConsumerGroup:
    group = groups.get(group_id)
    if group is None:
        group = groups[group_id] = ConsumerGroup(group_id)
    return group


def _replay_member(group: ConsumerGroup, member_id: str, value: bytes | None) -> None:
    if value is None:
        group.members.pop(member_id, None)
        return
    v = fmt.decode_member_metadata(value)
    m = group.members.get(member_id) or ConsumerGroupMember(member_id)
    m.instance_id, m.rack_id, m.client_id, m.client_host = v.instance_id, v.rack_id, v.client_id, v.client_host
    m.subscribed_topic_names, m.subscribed_topic_regex = frozenset(v.subscribed_topic_names), v.subscribed_topic_regex
    m.rebalance_timeout_ms, m.server_assignor = v.rebalance_timeout_ms, v.server_assignor
    group.members[member_id] = m
