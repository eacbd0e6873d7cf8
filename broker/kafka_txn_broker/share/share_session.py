"""Share sessions (Kafka's ShareSession / ShareSessionCache): per (group, member) on one broker, the
share-partitions a member fetches from and the epoch its next request must carry.

- epoch 0 opens a session (replacing the member's previous one, whose records are then released);
- each later ShareFetch or ShareAcknowledge carries the current epoch, and the next one the epoch + 1
  (SHARE_SESSION_NOT_FOUND without a session, INVALID_SHARE_SESSION_EPOCH for another epoch);
- epoch -1 closes it: acknowledgements in that request are applied, then the session goes and what the
  member still holds is released.

Pure bookkeeping: releasing records is the SharePartitionManager's job. Event-loop owned.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from kafka_txn_broker.formats.errors import (
    InvalidShareSessionEpochError,
    ShareSessionLimitReachedError,
    ShareSessionNotFoundError,
)

INITIAL_EPOCH = 0
FINAL_EPOCH = -1

TopicIdPartition = tuple[uuid.UUID, int]


@dataclass(slots=True)
class ShareSession:
    group_id: str
    member_id: str
    epoch: int = 1  # the epoch the next request must carry
    partitions: list[TopicIdPartition] = field(default_factory=list)  # in the order the member added them
    connection: object | None = None

    def add(self, tps: list[TopicIdPartition]) -> None:
        known = set(self.partitions)
        for tp in tps:
            if tp not in known:
                known.add(tp)
                self.partitions.append(tp)

    def forget(self, tps: list[TopicIdPartition]) -> None:
        gone = set(tps)
        self.partitions = [tp for tp in self.partitions if tp not in gone]


class ShareSessionCache:
    def __init__(self, max_sessions: int = 2000) -> None:
        self.max_sessions = max_sessions
        self.sessions: dict[tuple[str, str], ShareSession] = {}

    def get(self, group_id: str, member_id: str) -> ShareSession | None:
        return self.sessions.get((group_id, member_id))

    def open(self, group_id: str, member_id: str, connection: object | None = None) -> tuple[ShareSession,
                                                                                           ShareSession | None]:
        """A new session at epoch 0; also the member's previous session, now gone (or None)."""
        old = self.sessions.pop((group_id, member_id), None)
        if len(self.sessions) >= self.max_sessions:
            if old is not None:
                self.sessions[(group_id, member_id)] = old
            raise ShareSessionLimitReachedError(f"{self.max_sessions} share sessions are open on this broker")
        session = self.sessions[(group_id, member_id)] = ShareSession(group_id, member_id, connection=connection)
        return session, old

    def advance(self, group_id: str, member_id: str, epoch: int) -> ShareSession:
        """Check a request's epoch against the member's session and move the session to the next one."""
        session = self.sessions.get((group_id, member_id))
        if session is None:
            raise ShareSessionNotFoundError(f"no share session for member {member_id} of group {group_id}")
        if epoch != session.epoch:
            raise InvalidShareSessionEpochError(
                f"share session epoch {epoch} of member {member_id}; the session expects {session.epoch}")
        session.epoch = 1 if session.epoch == 2**31 - 1 else session.epoch + 1
        return session

    def close(self, group_id: str, member_id: str) -> ShareSession | None:
        return self.sessions.pop((group_id, member_id), None)

    def of_connection(self, connection: object) -> list[ShareSession]:
        return [s for s in self.sessions.values() if s.connection is connection]
