"""The ACL authorizer with plain data: Kafka's rules for deny, patterns, implied operations, super users."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_txn_broker.security.acl_store import AclStore
from kafka_txn_broker.security.acls import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclError,
    Op,
    PatternType,
    Permission,
    ResourcePattern,
    ResourceType,
    parse_acl,
)
from kafka_txn_broker.security.authorizer import AclAuthorizer

TOPIC, GROUP, TXN, CLUSTER = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.TRANSACTIONAL_ID, ResourceType.CLUSTER
ALICE, BOB = "User:alice", "User:bob"
HOST = "10.0.0.1"


def authz(*lines: str, super_users: tuple[str, ...] = (), allow_if_no_acl: bool = False) -> AclAuthorizer:
    return AclAuthorizer(super_users, allow_if_no_acl, [parse_acl(line) for line in lines])


def can(a: AclAuthorizer, op: Op, rtype: ResourceType, name: str, principal: str = ALICE, host: str = HOST) -> bool:
    return a.authorize(principal, host, op, rtype, name)


def test_nothing_is_allowed_without_an_acl() -> None:
    a = authz()
    assert not can(a, Op.READ, TOPIC, "orders")
    assert not can(a, Op.CLUSTER_ACTION, CLUSTER, "kafka-cluster")


def test_allow_for_the_principal_only() -> None:
    a = authz("User:alice ALLOW Read Topic orders")
    assert can(a, Op.READ, TOPIC, "orders")
    assert not can(a, Op.READ, TOPIC, "orders", principal=BOB)
    assert not can(a, Op.WRITE, TOPIC, "orders")
    assert not can(a, Op.READ, TOPIC, "orders2")
    assert not can(a, Op.READ, GROUP, "orders")


def test_deny_wins_over_allow() -> None:
    a = authz("User:alice ALLOW All Topic orders", "User:alice DENY Write Topic orders")
    assert can(a, Op.READ, TOPIC, "orders")
    assert not can(a, Op.WRITE, TOPIC, "orders")
    # A deny for everyone covers alice too, even with her own allow.
    b = authz("User:alice ALLOW Read Topic orders", "User:* DENY Read Topic orders")
    assert not can(b, Op.READ, TOPIC, "orders")


def test_deny_all_denies_every_operation() -> None:
    a = authz("User:alice ALLOW Read Topic orders", "User:alice DENY All Topic orders")
    assert not can(a, Op.READ, TOPIC, "orders")
    assert not can(a, Op.DESCRIBE, TOPIC, "orders")


def test_implied_operations() -> None:
    for granted in ("Read", "Write", "Delete", "Alter"):
        a = authz(f"User:alice ALLOW {granted} Topic t")
        assert can(a, Op.DESCRIBE, TOPIC, "t"), granted
    a = authz("User:alice ALLOW AlterConfigs Topic t")
    assert can(a, Op.DESCRIBE_CONFIGS, TOPIC, "t")
    assert not can(a, Op.ALTER, TOPIC, "t")
    # Describe implies nothing; Create does not imply Describe.
    assert not can(authz("User:alice ALLOW Describe Topic t"), Op.READ, TOPIC, "t")
    assert not can(authz("User:alice ALLOW Create Topic t"), Op.DESCRIBE, TOPIC, "t")


def test_deny_is_not_widened_by_implication() -> None:
    # Kafka: DENY Describe does not deny Read, and DENY Read does not deny Describe granted by Write.
    a = authz("User:alice ALLOW Read Topic t", "User:alice DENY Describe Topic t")
    assert can(a, Op.READ, TOPIC, "t")
    assert not can(a, Op.DESCRIBE, TOPIC, "t")
    b = authz("User:alice ALLOW Write Topic t", "User:alice DENY Read Topic t")
    assert can(b, Op.DESCRIBE, TOPIC, "t")


def test_all_grants_everything() -> None:
    a = authz("User:alice ALLOW All Cluster kafka-cluster")
    for op in (Op.CLUSTER_ACTION, Op.ALTER, Op.DESCRIBE, Op.IDEMPOTENT_WRITE, Op.CREATE):
        assert can(a, op, CLUSTER, "kafka-cluster")


def test_prefixed_and_wildcard_patterns() -> None:
    a = authz("User:alice ALLOW Describe TransactionalId app- PREFIXED", "User:alice ALLOW Read Topic *")
    assert can(a, Op.DESCRIBE, TXN, "app-1")
    assert can(a, Op.DESCRIBE, TXN, "app-")
    assert not can(a, Op.DESCRIBE, TXN, "ap")
    assert not can(a, Op.DESCRIBE, TXN, "other-app-1")
    assert can(a, Op.READ, TOPIC, "anything")
    # A prefixed deny carves out part of a wildcard allow.
    b = authz("User:alice ALLOW Read Topic *", "User:alice DENY Read Topic secret- PREFIXED")
    assert can(b, Op.READ, TOPIC, "public")
    assert not can(b, Op.READ, TOPIC, "secret-keys")
    # The literal name "*" is a wildcard only as an ACL's pattern; a prefixed "*" is just a prefix.
    c = authz("User:alice ALLOW Read Topic * PREFIXED")
    assert not can(c, Op.READ, TOPIC, "orders")


def test_wildcard_principal_and_hosts() -> None:
    a = authz("User:* ALLOW Read Topic t host=10.0.0.1")
    assert can(a, Op.READ, TOPIC, "t", principal=BOB)
    assert not can(a, Op.READ, TOPIC, "t", host="10.0.0.2")


def test_super_users_bypass_every_acl() -> None:
    a = authz("User:* DENY All Topic t", super_users=("User:admin",))
    assert can(a, Op.WRITE, TOPIC, "t", principal="User:admin")
    assert not can(a, Op.WRITE, TOPIC, "t")


def test_allow_everyone_if_no_acl_found() -> None:
    a = authz("User:bob ALLOW Read Topic guarded", allow_if_no_acl=True)
    assert can(a, Op.WRITE, TOPIC, "open")          # no ACL applies to this topic
    assert not can(a, Op.READ, TOPIC, "guarded")    # an ACL exists, for someone else
    assert can(a, Op.READ, TOPIC, "guarded", principal=BOB)


def test_authorize_any_follows_kafkas_resource_type_rule() -> None:
    # KIP-679: an idempotent producer needs WRITE on some topic.
    assert authz("User:alice ALLOW Write Topic orders").authorize_any(ALICE, HOST, Op.WRITE, TOPIC)
    assert not authz("User:alice ALLOW Read Topic orders").authorize_any(ALICE, HOST, Op.WRITE, TOPIC)
    denied_all = authz("User:alice ALLOW Write Topic orders", "User:alice DENY Write Topic *")
    assert not denied_all.authorize_any(ALICE, HOST, Op.WRITE, TOPIC)
    covered = authz("User:alice ALLOW Write Topic app- PREFIXED", "User:alice DENY Write Topic ap PREFIXED")
    assert not covered.authorize_any(ALICE, HOST, Op.WRITE, TOPIC)
    partly = authz("User:alice ALLOW Write Topic app- PREFIXED", "User:alice DENY Write Topic app-x PREFIXED")
    assert partly.authorize_any(ALICE, HOST, Op.WRITE, TOPIC)
    assert authz(allow_if_no_acl=True).authorize_any(ALICE, HOST, Op.WRITE, TOPIC)
    assert authz(super_users=(ALICE,)).authorize_any(ALICE, HOST, Op.WRITE, TOPIC)


def binding(name: str, pattern: PatternType = PatternType.LITERAL, op: Op = Op.READ,
            rtype: ResourceType = TOPIC) -> AclBinding:
    return AclBinding(ResourcePattern(rtype, name, pattern), AccessControlEntry(ALICE, "*", op, Permission.ALLOW))


def test_filters_select_like_kafka() -> None:
    lit, star, pre = binding("orders"), binding("*"), binding("ord", PatternType.PREFIXED)
    group = binding("orders", rtype=GROUP)
    everything = [lit, star, pre, group]

    def chosen(f: AclBindingFilter) -> set[AclBinding]:
        return {b for b in everything if f.matches(b)}

    assert chosen(AclBindingFilter()) == set(everything)
    assert chosen(AclBindingFilter(TOPIC, "orders")) == {lit}
    assert chosen(AclBindingFilter(TOPIC, "orders", PatternType.MATCH)) == {lit, star, pre}
    assert chosen(AclBindingFilter(TOPIC, "ord", PatternType.PREFIXED)) == {pre}
    assert chosen(AclBindingFilter(ResourceType.ANY, "orders", PatternType.LITERAL)) == {lit, group}
    assert chosen(AclBindingFilter(principal="User:bob")) == set()
    assert chosen(AclBindingFilter(operation=Op.WRITE)) == set()


def test_acls_are_stored_and_config_acls_cannot_be_deleted(tmp_path: Path) -> None:
    static = parse_acl("User:ops ALLOW Describe Cluster kafka-cluster")
    a = AclAuthorizer(["User:admin"], False, [static], AclStore(tmp_path))
    a.create(binding("orders"))
    a.create(binding("orders"))  # creating an existing ACL is a no-op
    again = AclAuthorizer([], False, [static], AclStore(tmp_path))
    assert again.acls() == sorted([binding("orders"), static], key=str)
    deleted, refused = again.delete(AclBindingFilter())
    assert deleted == [binding("orders")] and refused == [static]
    assert AclAuthorizer([], False, [], AclStore(tmp_path)).acls() == []


def test_a_corrupt_acl_file_stops_the_broker(tmp_path: Path) -> None:
    (tmp_path / "acls.json").write_text("{not json")
    with pytest.raises(AclError, match="cannot read the ACL file"):
        AclStore(tmp_path).load()


def test_config_forms() -> None:
    as_map = parse_acl({"principal": "User:alice", "permission": "allow", "operation": "cluster_action",
                        "resource": "cluster", "name": "kafka-cluster"})
    assert as_map.entry.operation == Op.CLUSTER_ACTION and as_map.pattern.resource_type == CLUSTER
    line = parse_acl("User:alice DENY IdempotentWrite Cluster kafka-cluster host=1.2.3.4")
    assert line.entry.permission == Permission.DENY and line.entry.host == "1.2.3.4"
    assert str(parse_acl("User:a ALLOW Read Topic t- prefixed")) == "User:a ALLOW READ on TOPIC:t- (prefixed)"


@pytest.mark.parametrize("text, words", [
    ("User:alice ALLOW Read Topic", "PRINCIPAL ALLOW|DENY"),
    ("alice ALLOW Read Topic t", "must look like User:<name>"),
    ("User:alice PERMIT Read Topic t", "unknown permission"),
    ("User:alice ALLOW Fly Topic t", "unknown operation"),
    ("User:alice ALLOW Read Topic t MATCH", "only valid in a filter"),
    ("User:alice ALLOW Alter Cluster other", "literal name 'kafka-cluster'"),
    ("User:alice ALLOW Any Topic t", "only valid in a filter"),
])
def test_bad_acls_name_the_problem(text: str, words: str) -> None:
    with pytest.raises(AclError, match=words.replace("|", r"\|")):
        parse_acl(text)
