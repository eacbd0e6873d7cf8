"""Could ACLs have hidden part of a find-hanging scan? (a known source of false hanging reports upstream)

Kafka leaves out, without any error, what the principal may not DESCRIBE: topics from Metadata (so
--all and --broker-id scan less), transactional ids from ListTransactions (so an open transaction
looks like it has no transactional id: "hanging"), and topics from DescribeTransactions' partitions
(so a partition looks "not in the transaction"). Refusals that do come back as errors
(TOPIC_AUTHORIZATION_FAILED from DescribeProducers, ...) are reported with the scan's errors already.

Whether ACLs can hide anything is asked with one DescribeAcls for every binding; only answers that
prove it count: SECURITY_DISABLED means no authorizer; CLUSTER_AUTHORIZATION_FAILED means an
authorizer runs and this principal is not allowed to see its ACLs; bindings in the answer mean ACLs
are in force. An answer without error and without bindings proves nothing can be hidden by ACLs,
and any other answer (an unknown error, a broker without the API) proves nothing: no warning is
claimed then. Nothing is changed.

ACLs in force hide nothing from a principal that may DESCRIBE everything, and then the warning is
not given either. Kafka has no "who am I" request, so that needs the principal the tool logs in as
(`User:<name>` for SASL PLAIN and SCRAM, as Kafka's default principal builder names it; unknown for
other mechanisms, TLS client certificates and custom principal builders) and one of two proofs:
- it is in the brokers' `super.users` (DescribeConfigs of a broker, when the broker reveals the value:
  Apache Kafka reports configs it does not define as sensitive, without a value; then this proof is
  not available);
- the bindings themselves (DescribeAcls returned them all) ALLOW it, or `User:*`, DESCRIBE (or an
  operation implying it) on the literal `*` Topic and TransactionalId from any host, and DENY it no
  DESCRIBE or ALL on either.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, NamedTuple

from kafka_txn_tools.models import HangingReason

if TYPE_CHECKING:
    from kafka_txn_tools.admin.scan import ScanReport, Scope
    from kafka_txn_tools.connection.client import AdminClient

ANY = 1  # ResourceType / PatternType / AclOperation / AclPermissionType ANY
# Kafka's codes: ResourceType, PatternType, AclOperation, AclPermissionType.
TOPIC, TRANSACTIONAL_ID, BROKER_CONFIG = 2, 5, 4
LITERAL = 3
ALL, READ, WRITE, DELETE, ALTER, DESCRIBE = 2, 3, 4, 6, 7, 8
DENY, ALLOW = 2, 3
# An ALLOW of any of these grants DESCRIBE (Kafka's implied operations); a DENY of these denies it.
GRANTS_DESCRIBE = frozenset({ALL, READ, WRITE, DELETE, ALTER, DESCRIBE})
DENIES_DESCRIBE = frozenset({ALL, DESCRIBE})
SCRAM_OR_PLAIN = frozenset({"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"})
SECURITY_DISABLED = 54
CLUSTER_AUTHORIZATION_FAILED = 31
# Verdicts an ACL-hidden transactional id or topic can produce.
ACL_SENSITIVE = frozenset({HangingReason.NO_TRANSACTIONAL_ID, HangingReason.PARTITION_NOT_IN_TRANSACTION})
AUTHORIZATION_ERRORS = frozenset({"TOPIC_AUTHORIZATION_FAILED", "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
                                  "CLUSTER_AUTHORIZATION_FAILED", "GROUP_AUTHORIZATION_FAILED"})

WARNING = ("results may be incomplete: the cluster enforces ACLs, and Kafka silently leaves out the topics and "
           "transactional ids this principal may not DESCRIBE; a hidden transactional id makes a live transaction "
           "look hanging (no-transactional-id). To be sure, run as a super user or grant DESCRIBE on Topic:* and "
           "TransactionalId:* and READ on the topics")


def probe_request() -> Any:
    from kafka.protocol.admin import DescribeAclsRequest

    return DescribeAclsRequest(resource_type_filter=ANY, resource_name_filter=None, pattern_type_filter=ANY,
                               principal_filter=None, host_filter=None, operation=ANY, permission_type=ANY)


class Binding(NamedTuple):
    """One ACL binding of a DescribeAcls answer."""

    resource_type: int
    name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission: int


class AclAnswer(NamedTuple):
    enforced: bool | None  # see `interpret`
    bindings: tuple[Binding, ...] = ()


def interpret(error_code: int, bindings: int = 0) -> bool | None:
    """True: ACLs are in force; False: nothing can be hidden by ACLs; None: cannot tell."""
    if error_code == SECURITY_DISABLED:
        return False
    if error_code == CLUSTER_AUTHORIZATION_FAILED:
        return True
    if error_code == 0:
        return bindings > 0
    return None


def bindings_of(answer: Any) -> tuple[Binding, ...]:
    return tuple(Binding(r.resource_type, r.resource_name, getattr(r, "pattern_type", LITERAL), a.principal, a.host,
                         a.operation, a.permission_type)
                 for r in answer.resources or () for a in getattr(r, "acls", None) or ())


def principal_of(kwargs: dict[str, Any]) -> str | None:
    """The principal the brokers see (Kafka's default principal builder), when the settings tell it."""
    if kwargs.get("sasl_mechanism") in SCRAM_OR_PLAIN and kwargs.get("sasl_plain_username"):
        return f"User:{kwargs['sasl_plain_username']}"
    return None


def sees_everything(principal: str | None, bindings: Iterable[Binding], super_users: Iterable[str]) -> str | None:
    """Why `principal` can be shown to DESCRIBE every topic and transactional id (None: it cannot be)."""
    if principal is None:
        return None
    if principal in set(super_users):
        return f"{principal} is in super.users"
    mine = [b for b in bindings if b.principal in (principal, "User:*")]
    denied = any(b.permission == DENY and b.operation in DENIES_DESCRIBE
                 and b.resource_type in (TOPIC, TRANSACTIONAL_ID) for b in mine)
    granted = {b.resource_type for b in mine if b.permission == ALLOW and b.operation in GRANTS_DESCRIBE
               and b.name == "*" and b.pattern_type == LITERAL and b.host == "*"}
    if not denied and {TOPIC, TRANSACTIONAL_ID} <= granted:
        return f"the ACLs allow {principal} to DESCRIBE every topic and transactional id"
    return None


def acls_enforced(client: AdminClient) -> bool | None:
    return describe_acls(client).enforced


def describe_acls(client: AdminClient) -> AclAnswer:
    import kafka.errors as kerrors

    try:
        answer = client.send(probe_request())
    except kerrors.KafkaError:
        return AclAnswer(None)
    found = bindings_of(answer)
    return AclAnswer(interpret(int(answer.error_code), len(answer.resources or ())), found)


def super_users(client: AdminClient) -> list[str]:
    """The brokers' super.users, when a broker reveals it (DescribeConfigs of one broker); [] otherwise."""
    import kafka.errors as kerrors
    from kafka.protocol.admin import DescribeConfigsRequest

    try:
        broker = client.metadata([]).broker_ids()[:1]
        if not broker:
            return []
        resource = DescribeConfigsRequest.DescribeConfigsResource(
            resource_type=BROKER_CONFIG, resource_name=str(broker[0]), configuration_keys=["super.users"])
        answer = client.send(DescribeConfigsRequest(resources=[resource], include_synonyms=False,
                                                    include_documentation=False), broker[0])
    except (kerrors.KafkaError, OSError, ValueError):  # no proof: the warning stays
        return []
    values = [c.value for r in answer.results if not r.error_code for c in r.configs
              if c.name == "super.users" and c.value and not c.is_sensitive]
    return [u.strip() for v in values for u in v.split(";") if u.strip()]


def may_be_incomplete(scope: Scope, report: ScanReport) -> bool:
    """Could silent ACL filtering have changed this scan's answer (before asking the broker)?"""
    if any(e.error in AUTHORIZATION_ERRORS for e in report.errors):
        return True
    whole_cluster = scope.topic is None  # Metadata hides topics from --all / --broker-id scans
    return whole_cluster or any(r.reason in ACL_SENSITIVE for r in report.results)


def scan_warning(client: AdminClient, scope: Scope, report: ScanReport) -> str | None:
    """The warning find-hanging prints when ACLs may have hidden transactional ids or topics, and nothing
    shows this principal sees them all."""
    if not may_be_incomplete(scope, report):
        return None
    answer = describe_acls(client)
    if not answer.enforced:
        return None
    # Bindings came back: this principal may read the ACLs, so they tell what it is allowed (a super user
    # always may; a principal refused DescribeAcls is no super user).
    principal = principal_of(client.settings.kwargs)
    evidence = principal is not None and bool(answer.bindings) and (
        sees_everything(principal, answer.bindings, ()) or sees_everything(principal, (), super_users(client)))
    return None if evidence else WARNING
