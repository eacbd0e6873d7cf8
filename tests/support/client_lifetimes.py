"""No Kafka client outlives the test (or fixture) that made it.

A client left open after its test keeps its threads retrying brokers that test has stopped: librdkafka prints
"Connect to ... failed: Connection refused" for every retry, kafka-python logs its own warnings, both into
later tests' output or the run's. This module keeps the rule checkable, without timing: every client of
confluent-kafka (Producer, Consumer, ShareConsumer, AdminClient; registered by tests/support/librdkafka_logs.py)
and of kafka-python (KafkaProducer, KafkaConsumer, KafkaAdminClient), whether a test or the code under test
makes it, is registered with its owner when it is made:

- made by a test, or by a function-scoped fixture: owned by that test; it must be closed (or gone: a
  confluent-kafka client is destroyed with its last reference) once the test's teardown is over;
- made by a module-, class- or package-scoped fixture: owned by its module, checked after the module's last
  test; by a session-scoped fixture: checked after the run's last test.

A client still open then fails its owner's teardown, naming where it was made (`KAFKA_TXN_CLIENT_LEAKS=report`
only counts them). The run's summary says how many were found. A garbage collection runs only when an open
client is found, to tell a reference cycle from a leak: the check costs nothing when nothing leaks.

Threading: clients may be made and closed on any thread; the registry's list is guarded by its lock. The owner
(`started`, the fixture scopes) is set by pytest's hooks on the main thread; a client made on another thread
while a test runs belongs to that test.
"""

from __future__ import annotations

import contextlib
import gc
import os
import sys
import threading
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENV = "KAFKA_TXN_CLIENT_LEAKS"  # "fail" (the default) or "report"
ATTRIBUTE = "_kafka_txn_lifetime"  # the client's own Record, so that close() can mark it
SESSION = "session"


class Item(Protocol):
    """What the check reads of a pytest item."""

    @property
    def nodeid(self) -> str: ...


@dataclass(eq=False)
class Record:
    """One client: what it is, where it was made, who owns it, whether it was closed."""

    kind: str
    where: str
    owner: str  # a test's node id, a module's path, or SESSION
    ref: weakref.ReferenceType[Any]
    closed: bool = False

    def open(self) -> bool:
        return not self.closed and self.ref() is not None


def _module_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


class Registry:
    """The clients made so far that may still be open, and the owner a new one gets."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._records: list[Record] = []
        self._test = SESSION  # the running test's node id, SESSION outside any test
        self._scopes: list[str] = []  # the scopes of the fixtures being set up, innermost last
        self.leaks: list[str] = []

    # ---- what the hooks tell it ------------------------------------------------------------------------
    def started(self, item: Item) -> None:
        self._test = item.nodeid

    def fixture_started(self, scope: str) -> None:
        self._scopes.append(scope)

    def fixture_ended(self) -> None:
        self._scopes.pop()

    # ---- what the clients tell it ----------------------------------------------------------------------
    def register(self, client: Any, kind: str, where: str | None = None) -> Record:
        record = Record(kind, where or made_where(), self._owner(), weakref.ref(client))
        with contextlib.suppress(AttributeError):  # a type without a __dict__: only its end is seen
            setattr(client, ATTRIBUTE, record)
        with self._lock:
            self._records.append(record)
        return record

    def _owner(self) -> str:
        scope = self._scopes[-1] if self._scopes else "function"
        if scope == "session" or self._test == SESSION:
            return SESSION
        return self._test if scope == "function" else _module_of(self._test)

    # ---- the check -------------------------------------------------------------------------------------
    def left_open(self, item: Item, nextitem: Item | None, drop: Any = None) -> list[str]:
        """After a test's teardown: the clients its ending owners left open, as lines naming them. `drop`,
        called first when any seems open, releases the references pytest still holds for the test."""
        owners = ending(item, nextitem)
        self._test = SESSION  # until the next test starts
        with self._lock:
            mine = [r for r in self._records if r.owner in owners]
        if any(r.open() for r in mine):
            if drop is not None:
                drop()
            gc.collect()  # a client in a reference cycle is gone after a collection, not leaked
        left = [r for r in mine if r.open()]
        with self._lock:
            self._records = [r for r in self._records if r.owner not in owners and r.open()]
        lines = [f"{r.kind} made at {r.where}, owned by {r.owner}" for r in left]
        self.leaks.extend(lines)
        return lines


def ending(item: Item, nextitem: Item | None) -> set[str]:
    """The owners that end with this test's teardown: the test; its module when the next test is in another
    one (pytest tears the module's fixtures down then); the session after the last test."""
    owners = {item.nodeid}
    if nextitem is None or _module_of(nextitem.nodeid) != _module_of(item.nodeid):
        owners.add(_module_of(item.nodeid))
    if nextitem is None:
        owners.add(SESSION)
    return owners


def made_where() -> str:
    """The first frame outside this module, the clients' packages and the wrappers around them: file:line."""
    frame: Any = sys._getframe(1)
    while frame is not None:
        name = frame.f_code.co_filename
        if not any(part in name for part in ("client_lifetimes", "librdkafka_logs", "/kafka/", "confluent_kafka")):
            try:
                return f"{Path(name).resolve().relative_to(ROOT)}:{frame.f_lineno}"
            except ValueError:
                return f"{name}:{frame.f_lineno}"
        frame = frame.f_back
    return "?"


REGISTRY = Registry()


def register(client: Any, kind: str) -> None:
    """Called by every tracked client's constructor, once it succeeded."""
    if getattr(client, ATTRIBUTE, None) is None:  # once, whichever class's __init__ ran last
        REGISTRY.register(client, kind)


def closed(client: Any) -> None:
    record = getattr(client, ATTRIBUTE, None)
    if record is not None:
        record.closed = True


def track_kafka_python() -> None:
    """kafka-python's clients are Python classes: their __init__ and close are wrapped in place."""
    import kafka

    for name in ("KafkaProducer", "KafkaConsumer", "KafkaAdminClient"):
        cls: Any = getattr(kafka, name)
        if not getattr(cls, "_kafka_txn_tracked", False):
            cls.__init__ = _registering(cls.__init__, name)
            cls.close = _closing(cls.close)
            cls._kafka_txn_tracked = True


def _registering(init: Any, kind: str) -> Any:
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        register(self, kind)

    return __init__


def _closing(close: Any) -> Any:
    def closing(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return close(self, *args, **kwargs)
        finally:
            closed(self)

    return closing


FAILED = pytest.StashKey[bool]()  # set by tests/conftest.py when the test's set-up or call failed


def check(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """After a test's teardown (tests/conftest.py): fail it for each client its ending owners left open. A test
    that failed already is not failed again for the clients its traceback still holds (they are counted)."""

    def drop() -> None:
        # The test's fixture values stay with the item until pytest's protocol drops them, right after this
        # check: a client a fixture closed (or whose last reference the item holds) is no leak. Drop them now.
        funcargs = getattr(item, "funcargs", None)
        if isinstance(funcargs, dict):
            funcargs.clear()

    left = REGISTRY.left_open(item, nextitem, drop)
    if left and os.environ.get(ENV, "fail") != "report" and not item.stash.get(FAILED, False):
        pytest.fail("Kafka clients left open after the test or fixture that made them (close them: `with`, "
                    "close() in a finally, or a fixture that closes what it yields):\n  " + "\n  ".join(left),
                    pytrace=False)


def summary() -> str | None:
    """The run's count of clients left open, for its terminal summary."""
    leaks = REGISTRY.leaks
    if not leaks:
        return None
    return f"{len(leaks)} Kafka client(s) left open after the test or fixture that made them:\n  " + \
        "\n  ".join(leaks)
