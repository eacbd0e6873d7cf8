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


def acl(resource_type: int, name: str, principal: str, operation: int, permission: int = acl_probe.ALLOW,
        pattern: int = acl_probe.LITERAL, host: str = "*") -> Any:
    """One resource of a DescribeAcls answer holding one binding (the response's shape)."""
    return SimpleNamespace(resource_type=resource_type, resource_name=name, pattern_type=pattern, acls=[
        SimpleNamespace(principal=principal, host=host, operation=operation, permission_type=permission)])


OTHERS = [acl(acl_probe.TOPIC, "orders", "User:alice", acl_probe.READ)] * 3


class FakeClient:
    """The transport's send() the probe uses: DescribeAcls answered with `code` and `resources`, DescribeConfigs
    of a broker with `super_users` (None: the value is sensitive, as Apache Kafka reports it)."""

    def __init__(self, code: int, resources: list[Any] | None = None, user: str | None = None,
                 super_users: str | None = None) -> None:
        from kafka_txn_tools.models import BrokerInfo, ClusterInfo

        self.code, self.resources, self.super_users = code, resources or [], super_users
        self.settings = SimpleNamespace(kwargs={"sasl_mechanism": "SCRAM-SHA-512", "sasl_plain_username": user}
                                        if user else {})
        self.sent: list[Any] = []
        self.metadata = lambda topics: ClusterInfo((BrokerInfo(3, "h", 1),), ())

    def send(self, request: Any, node: int | None = None) -> Any:
        self.sent.append(request)
        if type(request).__name__.startswith("DescribeConfigs"):
            value = SimpleNamespace(name="super.users", value=self.super_users,
                                    is_sensitive=self.super_users is None)
            return SimpleNamespace(results=[SimpleNamespace(error_code=0, configs=[value])])
        return SimpleNamespace(error_code=self.code, resources=self.resources)


def test_the_warning_needs_an_enforcing_cluster() -> None:
    hanging = ScanReport(results=[result(HangingReason.NO_TRANSACTIONAL_ID)])
    with_acls, refused, without, empty = FakeClient(0, OTHERS), FakeClient(31), FakeClient(54), FakeClient(0)
    assert acl_probe.scan_warning(with_acls, Scope(topic="orders"), hanging) == acl_probe.WARNING  # type: ignore[arg-type]
    assert acl_probe.scan_warning(refused, Scope(topic="orders"), hanging) == acl_probe.WARNING  # type: ignore[arg-type]
    assert acl_probe.scan_warning(without, Scope(topic="orders"), hanging) is None  # type: ignore[arg-type]
    # A broker answering without error and without ACLs (Tansu does) proves no authorizer hides anything.
    assert acl_probe.scan_warning(empty, Scope(topic="orders"), hanging) is None  # type: ignore[arg-type]
    quiet = FakeClient(0)
    assert acl_probe.scan_warning(quiet, Scope(topic="orders"), ScanReport()) is None  # type: ignore[arg-type]
    assert quiet.sent == []  # nothing that could be hidden: no request at all


def test_no_warning_for_a_principal_in_super_users() -> None:
    whole = Scope(all=True)
    admin = FakeClient(0, OTHERS, user="admin", super_users="User:ops; User:admin")
    assert acl_probe.scan_warning(admin, whole, ScanReport()) is None  # type: ignore[arg-type]
    alice = FakeClient(0, OTHERS, user="alice", super_users="User:admin")
    assert acl_probe.scan_warning(alice, whole, ScanReport()) == acl_probe.WARNING  # type: ignore[arg-type]
    # Apache Kafka reports super.users as sensitive (no value): no proof, the warning stays.
    hidden = FakeClient(0, OTHERS, user="admin", super_users=None)
    assert acl_probe.scan_warning(hidden, whole, ScanReport()) == acl_probe.WARNING  # type: ignore[arg-type]
    # A principal the tool cannot name (TLS certificates, GSSAPI, OAUTHBEARER) cannot be shown to be one.
    anonymous = FakeClient(0, OTHERS, super_users="User:admin")
    assert acl_probe.scan_warning(anonymous, whole, ScanReport()) == acl_probe.WARNING  # type: ignore[arg-type]


T, TX = acl_probe.TOPIC, acl_probe.TRANSACTIONAL_ID


@pytest.mark.parametrize("bindings, sees", [
    ([acl(T, "*", "User:ops", acl_probe.DESCRIBE), acl(TX, "*", "User:ops", acl_probe.WRITE)], True),
    ([acl(T, "*", "User:*", acl_probe.ALL), acl(TX, "*", "User:ops", acl_probe.DESCRIBE)], True),
    ([acl(T, "*", "User:ops", acl_probe.DESCRIBE)], False),  # transactional ids may still be hidden
    ([acl(T, "*", "User:ops", acl_probe.DESCRIBE), acl(TX, "app-", "User:ops", acl_probe.DESCRIBE,
                                                       pattern=4)], False),  # a prefix is not everything
    ([acl(T, "*", "User:ops", acl_probe.DESCRIBE), acl(TX, "*", "User:ops", acl_probe.DESCRIBE, host="10.0.0.1")],
     False),  # from one host only: which host the broker sees is not known here
    ([acl(T, "*", "User:ops", acl_probe.DESCRIBE), acl(TX, "*", "User:ops", acl_probe.DESCRIBE),
      acl(T, "secret", "User:ops", acl_probe.DESCRIBE, permission=acl_probe.DENY)], False),
    ([acl(T, "*", "User:ops", acl_probe.DESCRIBE), acl(TX, "*", "User:ops", acl_probe.DESCRIBE),
      acl(T, "secret", "User:ops", acl_probe.READ, permission=acl_probe.DENY)], True),  # READ denied, not DESCRIBE
    ([acl(T, "*", "User:alice", acl_probe.DESCRIBE), acl(TX, "*", "User:alice", acl_probe.DESCRIBE)], False),
])
def test_wildcard_describe_grants_are_evidence_too(bindings: list[Any], sees: bool) -> None:
    found = acl_probe.bindings_of(SimpleNamespace(resources=bindings))
    assert (acl_probe.sees_everything("User:ops", found, ()) is not None) is sees


def test_the_principal_is_known_only_where_kafka_names_it_from_the_login() -> None:
    assert acl_probe.principal_of({"sasl_mechanism": "PLAIN", "sasl_plain_username": "ops"}) == "User:ops"
    assert acl_probe.principal_of({"sasl_mechanism": "SCRAM-SHA-256", "sasl_plain_username": "ops"}) == "User:ops"
    assert acl_probe.principal_of({"sasl_mechanism": "GSSAPI"}) is None
    assert acl_probe.principal_of({"security_protocol": "SSL"}) is None
