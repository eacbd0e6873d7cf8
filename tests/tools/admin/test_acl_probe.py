"""find-hanging's ACL warning: when silent ACL filtering could have changed the answer, with plain data."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from kafka_txn_tools.admin import acl_probe
from kafka_txn_tools.admin.scan import ScanReport, Scope
from kafka_txn_tools.models import HangingReason, HangingTransaction, ScanError, TopicPartition
from tests.tools.admin.fakes import producer

TP = TopicPartition("orders", 0)


def result(reason: HangingReason) -> HangingTransaction:
    return HangingTransaction(TP, producer(7, start=10), reason, "", 0)


@pytest.mark.parametrize("code, bindings, enforced", [
    (54, 0, False),  # SECURITY_DISABLED: no authorizer
    (31, 0, True),  # CLUSTER_AUTHORIZATION_FAILED: an authorizer refused us
    (0, 2, True),  # ACL bindings exist
    (0, 0, False),  # an answer without bindings: nothing can be hidden by ACLs (and proves no authorizer)
    (35, 0, None), (-1, 0, None),  # anything else proves nothing: no claim
])
def test_the_probe_claims_only_what_the_answer_proves(code: int, bindings: int, enforced: bool | None) -> None:
    assert acl_probe.interpret(code, bindings) is enforced


def test_the_probe_asks_for_every_binding() -> None:
    req = acl_probe.probe_request()
    assert (req.resource_type_filter, req.resource_name_filter, req.pattern_type_filter, req.operation,
            req.permission_type) == (1, None, 1, 1, 1)


def test_whole_cluster_scans_may_miss_hidden_topics() -> None:
    assert acl_probe.may_be_incomplete(Scope(all=True), ScanReport())
    assert acl_probe.may_be_incomplete(Scope(broker_id=1), ScanReport())
    assert not acl_probe.may_be_incomplete(Scope(topic="orders"), ScanReport())


def test_verdicts_a_hidden_id_or_topic_can_cause() -> None:
    topic = Scope(topic="orders")
    for reason in (HangingReason.NO_TRANSACTIONAL_ID, HangingReason.PARTITION_NOT_IN_TRANSACTION):
        assert acl_probe.may_be_incomplete(topic, ScanReport(results=[result(reason)]))
    for reason in (HangingReason.TRANSACTIONAL_ID_NOT_FOUND, HangingReason.EPOCH_MISMATCH, HangingReason.LATE):
        assert not acl_probe.may_be_incomplete(topic, ScanReport(results=[result(reason)]))
    refused = ScanError("TOPIC_AUTHORIZATION_FAILED", "refused", partition=TP, api="DescribeProducers", code=29)
    assert acl_probe.may_be_incomplete(topic, ScanReport(errors=[refused]))


class FakeClient:
    """Just the two private hooks acls_enforced uses, answering with `code`."""

    def __init__(self, code: int, bindings: int = 0) -> None:
        self.code = code
        self.bindings = bindings
        self.sent: list[Any] = []

    async def _send(self, request: Any) -> Any:
        self.sent.append(request)
        return SimpleNamespace(error_code=self.code, resources=[object()] * self.bindings)

    def _run(self, fn: Any) -> Any:
        coro = fn()
        try:
            coro.send(None)
        except StopIteration as done:
            return done.value
        raise AssertionError("the fake never suspends")


def test_the_warning_needs_an_enforcing_cluster() -> None:
    hanging = ScanReport(results=[result(HangingReason.NO_TRANSACTIONAL_ID)])
    with_acls, refused, without, empty = FakeClient(0, 3), FakeClient(31), FakeClient(54), FakeClient(0)
    assert acl_probe.scan_warning(with_acls, Scope(topic="orders"), hanging) == acl_probe.WARNING  # type: ignore[arg-type]
    assert acl_probe.scan_warning(refused, Scope(topic="orders"), hanging) == acl_probe.WARNING  # type: ignore[arg-type]
    assert acl_probe.scan_warning(without, Scope(topic="orders"), hanging) is None  # type: ignore[arg-type]
    # A broker answering without error and without ACLs (Tansu does) proves no authorizer hides anything.
    assert acl_probe.scan_warning(empty, Scope(topic="orders"), hanging) is None  # type: ignore[arg-type]
    quiet = FakeClient(0)
    assert acl_probe.scan_warning(quiet, Scope(topic="orders"), ScanReport()) is None  # type: ignore[arg-type]
    assert quiet.sent == []  # nothing that could be hidden: no request at all
