"""A share group (KIP-932; Kafka's ShareGroup / ShareGroupMember): a ModernGroup whose members get their
target assignment at once (there is nothing to revoke: members hold records, not partitions).

States, as ListGroups and ShareGroupDescribe name them: Empty (no members), Stable, Dead (deleted or
unloaded). Event-loop owned.
"""

from __future__ import annotations

from dataclasses import dataclass

from kafka_txn_broker.group.modern.modern_group import ModernGroup, ModernGroupMember

GROUP_TYPE = "share"
PROTOCOL_TYPE = "share"  # what ListGroups v0-v4 report as a share group's protocol type
EMPTY, STABLE, DEAD = "Empty", "Stable", "Dead"


@dataclass(slots=True)
class ShareGroupMember(ModernGroupMember):
    pass


class ShareGroup(ModernGroup[ShareGroupMember]):
    def __init__(self, group_id: str, group_epoch: int = 0) -> None:
        super().__init__(group_id, group_epoch)
        self.dead = False

    @property
    def state(self) -> str:
        if self.dead:
            return DEAD
        return EMPTY if self.is_empty else STABLE
