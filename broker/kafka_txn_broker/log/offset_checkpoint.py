"""Kafka's offset checkpoint files (OffsetCheckpointFile): `cleaner-offset-checkpoint` and
`log-start-offset-checkpoint` in each log dir, one `topic partition offset` line per log.

Format: version 0, a count, then the lines. A file is replaced atomically (write, fsync, rename), so a
crash leaves the old or the new one; an unreadable file reads as empty (each user says why that is safe).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]


def read_checkpoints(path: Path) -> dict[TopicPartition, int]:
    try:
        lines = path.read_text().splitlines()
        if not lines or lines[0].strip() != "0":
            return {}
        found: dict[TopicPartition, int] = {}
        for line in lines[2:2 + int(lines[1])]:
            topic, partition, offset = line.rsplit(" ", 2)
            found[(topic, int(partition))] = int(offset)
        return found
    except (OSError, ValueError, IndexError) as exc:
        if not isinstance(exc, FileNotFoundError):
            log.warning("ignoring the unreadable checkpoint file %s: %s", path, exc)
        return {}


def write_checkpoints(path: Path, offsets: Mapping[TopicPartition, int]) -> None:
    lines = ["0", str(len(offsets)), *(f"{t} {p} {o}" for (t, p), o in sorted(offsets.items()))]
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as f:
        f.write("\n".join(lines) + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
