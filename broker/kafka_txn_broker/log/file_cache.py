"""A process-wide LRU of open file descriptors shared by every segment and index.

Tens of thousands of idle partition logs live in one process, so no log keeps a file open: each I/O
borrows a descriptor from this cache (opening the file if needed) and the least recently used idle
descriptors are closed once more than `capacity` are open. A borrowed descriptor is pinned, so another
thread's eviction never closes it mid-read. I/O uses os.pread/os.pwrite at explicit positions: no
shared file position, no user-space buffering to flush.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager, suppress

_FLAGS = os.O_RDWR | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)


class FileCache:
    def __init__(self, capacity: int = 256) -> None:
        self.capacity = capacity
        self._fds: OrderedDict[str, int] = OrderedDict()
        self._pins: dict[int, int] = {}  # borrowed descriptors -> borrow count
        self._orphans: set[int] = set()  # forgotten while borrowed: closed when returned
        self._lock = threading.Lock()

    @contextmanager
    def fd(self, path: str, *, create: bool = False) -> Iterator[int]:
        """Borrow a read-write descriptor for `path` (FileNotFoundError unless `create`)."""
        fd = self.borrow(path, create=create)
        try:
            yield fd
        finally:
            self.give_back(fd)

    # borrow/give_back are the context manager's halves: the hot I/O helpers below call them
    # directly with try/finally, which saves a generator per read or write.
    def borrow(self, path: str, *, create: bool = False) -> int:
        with self._lock:
            fd = self._fds.get(path)
            if fd is None:
                fd = os.open(path, _FLAGS | (os.O_CREAT if create else 0), 0o644)
                self._fds[path] = fd
                self._pins[fd] = 1
                self._evict_locked()
                return fd
            self._fds.move_to_end(path)
            self._pins[fd] = self._pins.get(fd, 0) + 1
            return fd

    def give_back(self, fd: int) -> None:
        with self._lock:
            left = self._pins[fd] - 1
            if left:
                self._pins[fd] = left
                return
            del self._pins[fd]
            if fd in self._orphans:
                self._orphans.discard(fd)
                os.close(fd)
            self._evict_locked()

    def write_open(self, path: str, data: bytes | bytearray | memoryview, position: int) -> int:
        """pwrite to `path` if its descriptor is open already, under the lock (so no eviction can close it
        meanwhile, without pinning it): the bytes written, or -1 when it is not open. Every log append
        passes here; one lock round instead of borrow's and give_back's."""
        with self._lock:
            fd = self._fds.get(path)
            if fd is None:
                return -1
            self._fds.move_to_end(path)
            return os.pwrite(fd, data, position)

    def _evict_locked(self) -> None:
        if len(self._fds) <= self.capacity:
            return
        for path, fd in list(self._fds.items()):
            if len(self._fds) <= self.capacity:
                break
            if fd not in self._pins:
                del self._fds[path]
                os.close(fd)

    def close(self, path: str) -> None:
        """Forget `path` (before it is deleted, renamed or recreated): the next borrow reopens it."""
        with self._lock:
            fd = self._fds.pop(path, None)
            if fd is None:
                return
            if fd in self._pins:
                self._orphans.add(fd)
            else:
                os.close(fd)

    def close_under(self, directory: str) -> None:
        prefix = directory.rstrip(os.sep) + os.sep
        for path in [p for p in list(self._fds) if p.startswith(prefix)]:
            self.close(path)

    def open_count(self) -> int:
        return len(self._fds) + len(self._orphans)


FILE_CACHE = FileCache()


def read_at(path: str, size: int, position: int) -> bytes:
    fd = FILE_CACHE.borrow(path)
    try:
        return os.pread(fd, size, position)
    finally:
        FILE_CACHE.give_back(fd)


def read_all(path: str) -> bytes:
    with FILE_CACHE.fd(path) as fd:
        size = os.fstat(fd).st_size
        return os.pread(fd, size, 0)


def write_at(path: str, data: bytes | bytearray | memoryview, position: int) -> None:
    written = FILE_CACHE.write_open(path, data, position)
    if written == len(data):
        return
    if written > 0:
        data, position = memoryview(data)[written:], position + written
    fd = FILE_CACHE.borrow(path, create=True)
    try:
        view = memoryview(data)
        while view:  # pwrite may write less than asked (a signal, a disk about to be full)
            n = os.pwrite(fd, view, position)
            view = view[n:]
            position += n
    finally:
        FILE_CACHE.give_back(fd)


def truncate(path: str, size: int) -> None:
    with FILE_CACHE.fd(path, create=True) as fd:
        os.ftruncate(fd, size)


def fsync(path: str) -> None:
    try:
        with FILE_CACHE.fd(path) as fd:
            os.fsync(fd)
    except FileNotFoundError:
        pass


def remove(path: str) -> None:
    FILE_CACHE.close(path)
    with suppress(FileNotFoundError):
        os.remove(path)
