"""`leader-epoch-checkpoint`: a partition's leader epochs and their start offsets, on disk.

The epoch cache is otherwise rebuilt from the leader epoch stamped on each batch, which loses an epoch
once compaction removed all of its batches. Kafka keeps this file for the same reason; the format is
Kafka's: a version line (0), a count line, then one "epoch start-offset" line per entry. It is
replaced atomically (temporary file, fsync, rename), so a crash leaves the old or the new file.
"""

from __future__ import annotations

import os
from pathlib import Path

FILE_NAME = "leader-epoch-checkpoint"
_VERSION = 0


def write(directory: str | os.PathLike[str], entries: list[tuple[int, int]]) -> None:
    path = Path(directory) / FILE_NAME
    tmp = path.with_name(FILE_NAME + ".tmp")
    body = "".join(f"{epoch} {start}\n" for epoch, start in entries)
    with open(tmp, "w", encoding="ascii") as out:
        out.write(f"{_VERSION}\n{len(entries)}\n{body}")
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, path)


def read(directory: str | os.PathLike[str]) -> list[tuple[int, int]]:
    """The entries, or [] when the file is missing or not a version-0 checkpoint (the header scan then
    stands alone: a damaged file can only cost what compaction removed, never a wrong answer)."""
    try:
        lines = (Path(directory) / FILE_NAME).read_text(encoding="ascii").split("\n")
        if int(lines[0]) != _VERSION:
            return []
        count = int(lines[1])
        entries = [(int(e), int(s)) for e, s in (line.split() for line in lines[2:2 + count])]
    except (OSError, ValueError, IndexError, UnicodeDecodeError):
        return []
    return entries if len(entries) == count else []
