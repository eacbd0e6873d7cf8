"""`bulk()`: Python's cyclic garbage collector paused while a big message is built or decoded - a Metadata,
ListOffsets or DescribeProducers answer of thousands of partitions, on the broker or in a client.

Every object made then is kept until the message is encoded or parsed, so a collection in the middle frees
nothing; each one walks the objects made so far and moves them to an older generation, and enough of them there
start a full collection of the whole heap. On the broker that heap holds every replica's state: a full collection
at 60,000 replicas took about 150 ms, once in every two or three 20,000-partition Metadata answers; in a client,
collections were about half the time of decoding such an answer. The collector runs again when the last bulk
section under way ends (on whatever garbage there is then), unless it was off before the first began.

Threading: the sections may overlap across threads (a client's caller and its I/O thread); a lock keeps the
count. The pause is process-wide, as the collector is: keep a section to synchronous work (no await inside).
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_depth = 0  # sections under way
_resume = False  # whether the collector was on when the first of them began


@contextmanager
def bulk() -> Iterator[None]:
    global _depth, _resume
    with _lock:
        if _depth == 0:
            _resume = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _resume:
                gc.enable()
