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
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafka_txn_tools.models import HangingReason

if TYPE_CHECKING:
    from kafka_txn_tools.admin.client import AdminClient
    from kafka_txn_tools.admin.scan import ScanReport, Scope

ANY = 1  # ResourceType / PatternType / AclOperation / AclPermissionType ANY
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


def interpret(error_code: int, bindings: int = 0) -> bool | None:
    """True: ACLs are in force; False: nothing can be hidden by ACLs; None: cannot tell."""
    if error_code == SECURITY_DISABLED:
        return False
    if error_code == CLUSTER_AUTHORIZATION_FAILED:
        return True
    if error_code == 0:
        return bindings > 0
    return None


def acls_enforced(client: AdminClient) -> bool | None:
    import kafka.errors as kerrors

    async def go() -> Any:
        return await client._send(probe_request())  # the admin client's own request path

    try:
        answer = client._run(go)
    except kerrors.KafkaError:
        return None
    return interpret(int(answer.error_code), len(answer.resources or ()))


def may_be_incomplete(scope: Scope, report: ScanReport) -> bool:
    """Could silent ACL filtering have changed this scan's answer (before asking the broker)?"""
    if any(e.error in AUTHORIZATION_ERRORS for e in report.errors):
        return True
    whole_cluster = scope.topic is None  # Metadata hides topics from --all / --broker-id scans
    return whole_cluster or any(r.reason in ACL_SENSITIVE for r in report.results)


def scan_warning(client: AdminClient, scope: Scope, report: ScanReport) -> str | None:
    """The warning find-hanging prints when ACLs may have hidden transactional ids or topics."""
    if not may_be_incomplete(scope, report):
        return None
    return WARNING if acls_enforced(client) else None
