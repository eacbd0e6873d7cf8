"""Each case's answers from real Apache Kafka and from the embedded broker emulating it are the same after
normalisation (normalise.py); the differences that stay are in known.py, each with its reason, and expected
to differ (so a fix is noticed)."""

from __future__ import annotations

import pytest

from tests.external.fidelity.cases import ACL_CASES, CASES, TWO_NODE_CASES
from tests.external.fidelity.known import known, varies
from tests.external.fidelity.runner import CaseResult
from tests.external.fidelity.sides import RELEASE


@pytest.mark.parametrize("name", [c.name for c in CASES])
def test_same_answers_as_apache_kafka(fidelity_results: dict[str, CaseResult], name: str) -> None:
    check(fidelity_results[name])


@pytest.mark.parametrize("name", [c.name for c in ACL_CASES])
def test_same_answers_as_apache_kafka_with_an_authorizer(fidelity_acl_results: dict[str, CaseResult],
                                                         name: str) -> None:
    check(fidelity_acl_results[name])


@pytest.mark.parametrize("name", [c.name for c in TWO_NODE_CASES])
def test_same_answers_as_apache_kafka_on_two_nodes(fidelity_two_node_results: dict[str, CaseResult],
                                                   name: str) -> None:
    check(fidelity_two_node_results[name])


def check(result: CaseResult) -> None:
    name = result.case.name
    if varies(name, RELEASE):
        return  # Kafka's own answer varies from run to run (known.py): shown by the report, not asserted
    reason = known(name, RELEASE)
    if reason:
        assert result.diffs, f"{name} now answers as Kafka {RELEASE} does: remove it from known.py ({reason})"
        return
    assert result.same, f"{name} ({', '.join(result.case.apis)}) differs from Apache Kafka:\n" + "\n".join(
        result.diffs)


def test_every_api_the_cli_depends_on_is_covered() -> None:
    cli_apis = {"Metadata", "ListOffsets", "DescribeProducers", "ListTransactions", "DescribeTransactions",
                "FindCoordinator", "InitProducerId", "AddPartitionsToTxn", "EndTxn", "WriteTxnMarkers", "OffsetCommit",
                "OffsetFetch", "ListGroups", "DescribeGroups"}
    covered = {api for case in CASES + ACL_CASES + TWO_NODE_CASES for api in case.apis}
    assert cli_apis <= covered, cli_apis - covered
