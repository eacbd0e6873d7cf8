"""The check that no Kafka client outlives the test or fixture that made it (tests/support/client_lifetimes.py):
which owner a client gets, when each owner is checked, and what counts as open. A private Registry is used, so
the run's own check of these tests is not disturbed; the last test goes through the real clients' wrappers."""

from __future__ import annotations

import gc
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.support import client_lifetimes
from tests.support.client_lifetimes import SESSION, Registry


@dataclass
class FakeItem:
    nodeid: str
    stash: dict[Any, Any] = field(default_factory=dict)


class Client:
    """Stands for a client: closing it is what the wrappers report."""

    def close(self) -> None:
        client_lifetimes.closed(self)


A1, A2, B1 = FakeItem("tests/a.py::one"), FakeItem("tests/a.py::two"), FakeItem("tests/b.py::one")


def made_by(registry: Registry, item: FakeItem, scope: str | None = None) -> Client:
    registry.started(item)
    if scope is not None:
        registry.fixture_started(scope)
    client = Client()
    registry.register(client, "Producer", where="here:1")
    if scope is not None:
        registry.fixture_ended()
    return client


def test_a_client_the_test_leaves_open_is_named_when_the_test_ends() -> None:
    registry = Registry()
    keep = made_by(registry, A1)
    assert registry.left_open(A1, A2) == ["Producer made at here:1, owned by tests/a.py::one"]
    assert registry.leaks == ["Producer made at here:1, owned by tests/a.py::one"]
    assert registry.left_open(A2, B1) == []  # reported once, with its own test
    keep.close()


def test_closed_destroyed_and_cyclic_clients_are_not_leaks() -> None:
    registry = Registry()
    made_by(registry, A1).close()
    made_by(registry, A1)  # its last reference gone at once: destroyed, as a confluent-kafka client would be
    gc.disable()  # no collection but the check's own
    try:
        cyclic: list[Any] = [made_by(registry, A1)]
        cyclic.append(cyclic)  # garbage only a collection finds
        del cyclic
        assert registry.left_open(A1, A2) == []
    finally:
        gc.enable()


def test_a_module_fixtures_client_is_checked_when_its_module_ends() -> None:
    registry = Registry()
    module_client = made_by(registry, A1, scope="module")
    function_client = made_by(registry, A1, scope="function")
    assert registry.left_open(A1, A2) == ["Producer made at here:1, owned by tests/a.py::one"]
    registry.started(A2)
    assert registry.left_open(A2, B1) == ["Producer made at here:1, owned by tests/a.py"]
    del module_client, function_client


def test_a_session_fixtures_client_is_checked_after_the_last_test() -> None:
    registry = Registry()
    keep = made_by(registry, A1, scope="session")
    assert registry.left_open(A1, B1) == []
    registry.started(B1)
    assert registry.left_open(B1, None) == ["Producer made at here:1, owned by session"]
    del keep
    assert made_by(registry, FakeItem(SESSION)) is not None  # made outside any test: the session's


def test_drop_releases_what_the_item_still_holds_before_the_verdict() -> None:
    registry = Registry()
    held = {"producer": made_by(registry, A1)}  # a fixture's value, as item.funcargs holds it
    assert registry.left_open(A1, A2, drop=held.clear) == []


def test_a_real_client_is_registered_with_this_test_and_its_close_is_seen(request: pytest.FixtureRequest) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": "127.0.0.1:9", "log_level": 0})  # nothing listens: no broker needed
    record = getattr(producer, client_lifetimes.ATTRIBUTE)
    assert (record.kind, record.owner, record.open()) == ("Producer", request.node.nodeid, True)
    assert record.where.startswith("tests/support/test_leaked_clients.py:")
    producer.close()
    assert not record.open()


def test_report_mode_counts_without_failing(monkeypatch: pytest.MonkeyPatch) -> None:
    registry = Registry()
    monkeypatch.setattr(client_lifetimes, "REGISTRY", registry)
    keep = made_by(registry, A1)
    monkeypatch.setenv(client_lifetimes.ENV, "report")
    client_lifetimes.check(A1, A2)  # type: ignore[arg-type]
    assert client_lifetimes.summary() == ("1 Kafka client(s) left open after the test or fixture that made them:\n"
                                          "  Producer made at here:1, owned by tests/a.py::one")
    registry.started(A2)
    made_by(registry, A2)
    monkeypatch.setenv(client_lifetimes.ENV, "fail")
    keep2 = made_by(registry, A2)
    with pytest.raises(pytest.fail.Exception, match="owned by tests/a.py::two"):
        client_lifetimes.check(A2, B1)  # type: ignore[arg-type]
    del keep, keep2


def test_check_releases_the_fixture_values_the_item_still_holds(monkeypatch: pytest.MonkeyPatch) -> None:
    # pytest drops item.funcargs only after the teardown hooks: a client a fixture yielded and closed, or
    # whose last reference the item holds, is no leak.
    registry = Registry()
    monkeypatch.setattr(client_lifetimes, "REGISTRY", registry)
    item = FakeItem(A1.nodeid)
    item.funcargs = {"producer": made_by(registry, item)}  # type: ignore[attr-defined]
    client_lifetimes.check(item, A2)  # type: ignore[arg-type]
    assert registry.leaks == []


def test_a_test_that_failed_already_is_not_failed_again_for_what_its_traceback_holds(
        monkeypatch: pytest.MonkeyPatch) -> None:
    registry = Registry()
    monkeypatch.setattr(client_lifetimes, "REGISTRY", registry)
    item = FakeItem(A1.nodeid)
    item.stash[client_lifetimes.FAILED] = True
    keep = made_by(registry, item)
    client_lifetimes.check(item, A2)  # type: ignore[arg-type]
    assert registry.leaks == ["Producer made at here:1, owned by tests/a.py::one"]  # counted, not failed
    del keep
