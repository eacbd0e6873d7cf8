"""Could ACLs have hidden part of a find-hanging scan? (a known source of false hanging reports upstream)

Kafka leaves out, without any error, what the principal may not DESCRIBE: topics from Metadata (so
--all and --broker-id scan less), transactional ids from ListTransactions (so an open transaction
looks like it has no transactional id: "hanging"), and topics from DescribeTransactions' partitions
(so a partition looks "not in the transaction"). Refusals that do come back as errors
(TOPIC_AUTHORIZATION_FAILED from DescribeProducers, ...) are reported with the scan's errors already.

Whether ACLs are enforced at all is asked with one DescribeAcls for a name no ACL uses: a broker
without an authorizer answers SECURITY_DISABLED; with one, it answers (or refuses with
CLUSTER_AUTHORIZATION_FAILED). Nothing else is learned or changed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafka_txn_tools.models import HangingReason

if TYPE_CHECKING:
    from kafka_txn_tools.admin.client import AdminClient
    from kafka_txn_tools.admin.scan import ScanReport, Scope

PROBE_NAME = "__kafka_txn_acl_probe__"
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

    # TRANSACTIONAL_ID (5), LITERAL (3), operation and permission ANY (1).
    return DescribeAclsRequest(resource_type_filter=5, resource_name_filter=PROBE_NAME, pattern_type_filter=3,
                               principal_filter=None, host_filter=None, operation=1, permission_type=1)


def interpret(error_code: int) -> bool | None:
    """True: an authorizer runs; False: none does; None: cannot tell (e.g. a non-Kafka broker's error)."""
    if error_code == SECURITY_DISABLED:
        return False
    if error_code in (0, CLUSTER_AUTHORIZATION_FAILED):
        return True
    return None


def acls_enforced(client: AdminClient) -> bool | None:
    import kafka.errors as kerrors

    async def go() -> Any:
        return await client._send(probe_request())  # the admin client's own request path

    try:
        return interpret(int(client._run(go).error_code))
    except kerrors.KafkaError:
        return None


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
