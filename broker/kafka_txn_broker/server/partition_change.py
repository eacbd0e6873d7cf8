"""What the controller changes in one partition, decided as Kafka's PartitionChangeBuilder decides it.

Pure logic on plain data (no I/O, no metadata store): given a partition's replicas, ISR, leader and
reassignment state, the targets of an operation (an election, a reassignment step, an ISR change) and
which nodes may lead, `build` returns the new state, or None when nothing would change.

- A reassignment completes once the ISR holds every target replica: the removed replicas leave the
  replica list and the ISR in the same change (Kafka's PartitionReassignmentReplicas).
- Elections: ONLINE keeps a valid leader, else the first live ISR member in replica order; PREFERRED
  takes the first replica when it is live and in the ISR, else keeps the leader, else the next live ISR
  member; UNCLEAN falls back to any live replica when no ISR member is live, and the ISR shrinks to it.
- The leader epoch goes up when the leader changes, and when a replica leaves the replica list (so
  a removed replica's fetches with the old epoch are fenced).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass

NO_LEADER = -1


class Election(enum.Enum):
    PREFERRED = 0
    ONLINE = 1
    UNCLEAN = 2


@dataclass(frozen=True)
class Assignment:
    """The controller's record of one partition (what PartitionState holds, as plain values)."""

    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()

    @classmethod
    def of(cls, replicas: Sequence[int], isr: Sequence[int], leader: int, adding: Sequence[int] = (),
           removing: Sequence[int] = ()) -> Assignment:
        return cls(tuple(replicas), tuple(isr), leader, tuple(adding), tuple(removing))

    @property
    def reassigning(self) -> bool:
        return bool(self.adding or self.removing)


@dataclass(frozen=True)
class Change:
    assignment: Assignment
    bump_epoch: bool
    unclean: bool = False


def reassignment_target(current: Sequence[int], target: Sequence[int]) -> Assignment:
    """The replica lists of a reassignment from `current` to `target` (ISR and leader left at their defaults):
    replicas = target + removed ones, adding = target - current, removing = current - target (sorted)."""
    removing = sorted(set(current) - set(target))
    adding = sorted(set(target) - set(current))
    return Assignment((*target, *removing), (), NO_LEADER, tuple(adding), tuple(removing))


def build(part: Assignment, can_lead: Callable[[int], bool], *, election: Election = Election.ONLINE,
          replicas: Sequence[int] | None = None, isr: Sequence[int] | None = None,
          adding: Sequence[int] | None = None, removing: Sequence[int] | None = None) -> Change | None:
    """The partition after the change (targets left None stay as they are); None for a no-op."""
    target = Assignment.of(part.replicas if replicas is None else replicas, part.isr if isr is None else isr,
                           part.leader, part.adding if adding is None else adding,
                           part.removing if removing is None else removing)
    target = _complete_reassignment(target)
    leader, unclean = _elect(part, target, can_lead, election)
    new_isr = (leader,) if unclean else target.isr
    new = Assignment(target.replicas, new_isr, leader, target.adding, target.removing)
    if new == part:
        return None
    dropped = not set(part.replicas) <= set(new.replicas)
    return Change(new, bump_epoch=leader != part.leader or dropped, unclean=unclean)


def _complete_reassignment(t: Assignment) -> Assignment:
    if not t.reassigning:
        return t
    replicas = tuple(r for r in t.replicas if r not in t.removing)
    isr = tuple(r for r in t.isr if r not in t.removing)
    if not replicas or not isr or not set(replicas) <= set(isr):
        return t
    return Assignment(replicas, isr, t.leader)


def _elect(part: Assignment, t: Assignment, can_lead: Callable[[int], bool], election: Election) -> tuple[int, bool]:
    """(leader, unclean?) for the target state; the current leader when no other choice is made."""
    def valid(r: int) -> bool:
        return r in t.isr and can_lead(r)

    if election is Election.PREFERRED and t.replicas and valid(t.replicas[0]):
        return t.replicas[0], False
    if part.leader != NO_LEADER and valid(part.leader):
        return part.leader, False
    for r in t.replicas:
        if valid(r):
            return r, False
    if election is Election.UNCLEAN:
        for r in t.replicas:
            if can_lead(r):
                return r, True
    # No valid leader: the partition goes (or stays) offline.
    return NO_LEADER, False
