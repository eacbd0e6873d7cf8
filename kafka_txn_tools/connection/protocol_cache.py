"""kafka-python's protocol classes built from a cache kept across runs: the same work, the same results, once.

kafka-python 3 builds each message class when its module imports, from the message's JSON schema (it reads the
file, strips the comments with a regular expression and parses it), and at the first use of each version of a
message it generates the source of that version's encoder or decoder and compiles it. A find-hanging run paid
about 25 ms for the schemas of the ~110 classes its imports build and about 20 ms compiling 22 codecs
(measured 2026-12-07, alternating runs against a 10,000-partition Apache Kafka), on every run, for results that
depend only on kafka-python's release and the interpreter.

`install()` puts a cache in front of both: kafka-python's ``load_json`` (its own schemas only) and the ``compile``
its codec generator calls. Entries are kept as marshal's bytes (the format of .pyc files): a parsed schema, or the
code object compiled from one generated source (keyed by the source itself, so a different source is a different
entry).
Each hit is unmarshalled afresh, so no two callers share an object and nothing a caller changes reaches the
file. New entries are written at exit, merged with what another process wrote meanwhile, by an atomic rename.
A missing, unreadable or corrupt file is rebuilt; a directory that cannot be written is used read-only or not at
all. The file is named by kafka-python's release, the interpreter's bytecode tag and marshal's version, so an
upgrade of either starts a new one.

Where: ``$KAFKA_TXN_CACHE_DIR``, else ``$XDG_CACHE_HOME/kafka-txn``, else ``~/.cache/kafka-txn``; about 0.4 MB
for find-hanging's messages, at most a few MB for every message kafka-python has.

Only the command-line entry points install it (cli/entry.py), before kafka-python's protocol modules import;
the libraries never change how a process builds kafka-python's classes. It touches kafka-python's private
module globals (``load_json``, the codec module's ``compile``): kafka-python is pinned (pyproject.toml), and
tests/tools/connection/test_protocol_cache.py checks the classes and codecs built both ways are the same.

Threading: `install()` on the main thread before other threads start. The hooks may run on kafka-python's I/O
thread too (a codec's first use); a lock guards the table.
"""

from __future__ import annotations

import atexit
import hashlib
import marshal
import os
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

VERSION = 1  # of this file's layout


def cache_path() -> Path:
    """The cache file for this kafka-python release and interpreter."""
    from kafka.version import __version__ as kafka_python

    base = os.environ.get("KAFKA_TXN_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "kafka-txn")
    name = f"protocol-{VERSION}-kafka-python-{kafka_python}-{sys.implementation.cache_tag}-m{marshal.version}.bin"
    return Path(base) / name


class ProtocolCache:
    """Entries by key (a schema's name, or a generated source's file name and digest): their marshal bytes.
    `load()` reads the file; `save()` writes what is new."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._entries: dict[str, bytes] = {}
        self._new: dict[str, bytes] = {}

    def load(self) -> None:
        self._entries = _read(self.path)

    def get(self, key: str) -> Any:
        """The entry's object, made afresh; None when not cached."""
        with self._lock:
            data = self._entries.get(key)
        return None if data is None else marshal.loads(data)

    def put(self, key: str, value: Any) -> None:
        data = marshal.dumps(value)
        with self._lock:
            self._entries[key] = self._new[key] = data

    def save(self) -> None:
        """What this process added, merged into the file as it is now; never raises (a cache is optional)."""
        with self._lock:
            if not self._new:
                return
            merged = {**_read(self.path), **self._new}
            self._new = {}
        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".protocol-")
            try:
                with os.fdopen(fd, "wb") as f:
                    marshal.dump(merged, f)
                os.replace(tmp, self.path)
            except BaseException:
                os.unlink(tmp)
                raise
        except OSError:
            pass  # read-only home, full disk: the next run builds again

    def load_json(self, original: Callable[..., Any]) -> Callable[..., Any]:
        """kafka-python's ``load_json(msg_type, package=None)`` with this cache in front, for kafka-python's own
        schemas: the file is named by its release. Another package's (the broker's definitions of the messages
        kafka-python lacks) can change under the same name, so they are always read."""
        def load_json(msg_type: str, package: Any = None) -> Any:
            if package is not None:
                return original(msg_type, package)
            key = f"json:{msg_type}"
            found = self.get(key)
            if found is None:
                found = original(msg_type, package)
                self.put(key, found)
            return found

        return load_json

    def compile(self, source: Any, filename: Any, mode: str, *args: Any, **kwargs: Any) -> Any:
        """``compile`` for kafka-python's generated codecs: a source seen before gives its code object back."""
        if args or kwargs or not isinstance(source, str):
            return compile(source, filename, mode, *args, **kwargs)
        key = f"code:{filename}:{mode}:{hashlib.sha256(source.encode()).hexdigest()}"
        found = self.get(key)
        if found is None:
            found = compile(source, filename, mode)
            self.put(key, found)
        return found


def _read(path: Path) -> dict[str, bytes]:
    try:
        with open(path, "rb") as f:
            found = marshal.load(f)
    except (OSError, EOFError, ValueError, TypeError):
        return {}
    if not isinstance(found, dict) or not all(isinstance(k, str) and isinstance(v, bytes) for k, v in found.items()):
        return {}
    return found


def install(path: Path | None = None) -> ProtocolCache | None:
    """Put the cache in front of kafka-python's schema loading and codec compiling, before its protocol classes
    are built; None (nothing done) when they already are, or kafka-python is not installed."""
    if "kafka.protocol.api_data" in sys.modules or "kafka.protocol.api_header" in sys.modules:
        return None  # classes built already: a cache now would hold half of them
    try:
        import kafka.protocol.schemas as schemas
        from kafka.protocol.schemas.fields import struct
    except ImportError:
        return None
    cache = ProtocolCache(path or cache_path())
    cache.load()
    schemas.load_json = cache.load_json(schemas.load_json)  # api_data and api_header import it by this name
    struct.compile = cache.compile  # the codec generator's global `compile`
    atexit.register(cache.save)
    return cache
