"""The types of group one coordinator serves (a group id names exactly one group, of one type), what
ListGroups shows of a group, and Kafka's GROUP_ID_NOT_FOUND for a group that is missing or of another
type, each with one text wherever a group is looked up."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from kafka_txn_broker.formats.errors import GroupIdNotFoundError

GroupType = Literal["classic", "consumer", "share"]
CLASSIC: GroupType = "classic"
CONSUMER: GroupType = "consumer"  # KIP-848 consumer groups
SHARE: GroupType = "share"  # KIP-932 share groups


@dataclass(frozen=True, slots=True)
class ListedGroup:
    """A group as ListGroups lists it: its id, type, protocol type and state."""

    group_id: str
    group_type: GroupType
    protocol_type: str
    state: str


def not_found(group_id: str) -> GroupIdNotFoundError:
    return GroupIdNotFoundError(f"Group {group_id} not found.")


def wrong_type(group_id: str, expected: GroupType) -> GroupIdNotFoundError:
    """The group exists but is not of the type the request is for (Kafka: "Group g is not a share group.")."""
    return GroupIdNotFoundError(f"Group {group_id} is not a {expected} group.")
