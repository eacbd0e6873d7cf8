"""The embedded broker emulating Apache Kafka release X (`kafka.version.emulate`) advertises
in ApiVersions what real X advertises. The expected ranges are the real broker's answer, asked live.

The default run checks KAFKA_TXN_KAFKA_RELEASE (default 4.4.0); each other tested release with
    KAFKA_TXN_KAFKA_RELEASE=3.9.2 python3 -m pytest -q tests/external/fidelity/test_api_versions.py
    KAFKA_TXN_KAFKA_RELEASE=3.3.2 python3 -m pytest -q tests/external/fidelity/test_api_versions.py

What the embedded broker cannot match, each with its reason (it advertises less, never more):
- APIs it does not implement at all (UNIMPLEMENTED_REASON): not advertised.
- NARROWER: versions it does not serve.
"""

from __future__ import annotations

from typing import Any

import kafka_txn_broker.formats.messages as m
from kafka_txn_broker.apis.registry import load_all
from kafka_txn_broker.testing.raw_client import RawKafkaClient
from tests.external.fidelity.conftest import Pair

UNIMPLEMENTED_REASON = "the embedded broker does not implement this API, so it does not advertise it"
# Keys the embedded broker uses for an API of its own that is not Kafka's API of that key.
NOT_KAFKAS = {94: "KIP-1289's draft TxnShareAcknowledge (off while emulating a release); Kafka 4.4's API 94 is "
                  "another one, not implemented"}
# API key -> why the embedded broker's range is narrower than Kafka's.
NARROWER = {
    0: "Produce v0-v2 (message formats v0/v1) are not served: record batches (v2 format) only",
    1: "Fetch v0-v3 (message formats v0/v1, 3.x only) are not served",
    2: "ListOffsets v0 (3.x only: MaxNumOffsets) is not served",
    8: "OffsetCommit v0-v1 (3.x) and v10 (4.4: topic ids) are not served: kafka-python 3.0.12's schema stops at v9 "
       "for the broker's codec",
    9: "OffsetFetch v0 (3.x) and v10 (4.4: topic ids) are not served",
    18: "ApiVersions v5 (4.4) is not served: the codec's schema stops at v4",
    19: "CreateTopics v0-v1 (3.x only) are not served",
    20: "DeleteTopics v0 (3.x only) is not served",
    23: "OffsetForLeaderEpoch v0-v1 (3.x only) are not served",
    28: "TxnOffsetCommit v6 (4.4) is not served: the codec's schema stops at v5",
    29: "DescribeAcls v0 (3.x only) is not served",
    30: "CreateAcls v0 (3.x only) is not served",
    31: "DeleteAcls v0 (3.x only) is not served",
    32: "DescribeConfigs v0 (3.x only) is not served",
    35: "DescribeLogDirs v0 (3.x only) is not served",
    42: "DeleteGroups v3 (4.4) is not served: the codec's schema stops at v2",
}


def api_versions(bootstrap: str) -> Any:
    with RawKafkaClient(bootstrap, client_id="fidelity") as client:
        return client.send(m.ApiVersionsRequest[3](client_software_name="fidelity", client_software_version="1"), 3,
                           response_class=m.ApiVersionsResponse)


def ranges(answer: Any) -> dict[int, tuple[int, int]]:
    return {k.api_key: (k.min_version, k.max_version) for k in answer.api_keys}


def test_api_versions_match_the_real_release(fidelity_pair: Pair) -> None:
    real, ours = ranges(api_versions(fidelity_pair.real.bootstrap_servers)), ranges(
        api_versions(fidelity_pair.ours.bootstrap_servers))
    implemented = set(load_all()) - set(NOT_KAFKAS)
    problems = []
    for key in sorted(set(real) | set(ours)):
        theirs, mine = real.get(key), ours.get(key)
        if theirs == mine:
            continue
        if mine is None and key not in implemented:
            continue  # UNIMPLEMENTED_REASON
        if theirs is not None and mine is not None and key in NARROWER and \
                theirs[0] <= mine[0] <= mine[1] <= theirs[1]:
            continue
        problems.append(f"API {key}: Apache Kafka {fidelity_pair.release} advertises {theirs}, embedded {mine}")
    assert not problems, "\n".join(problems)


def test_narrower_ranges_are_still_narrower(fidelity_pair: Pair) -> None:
    """A NARROWER entry that now matches Kafka for every tested release is to be removed (checked per release:
    the entries that apply to this one must differ)."""
    real, ours = ranges(api_versions(fidelity_pair.real.bootstrap_servers)), ranges(
        api_versions(fidelity_pair.ours.bootstrap_servers))
    assert any(real.get(k) != ours.get(k) for k in NARROWER)


def test_transaction_version_is_the_releases(fidelity_pair: Pair) -> None:
    """KIP-890's transaction.version, which clients read to choose TV1 or TV2: finalized at the release's level."""
    def level(answer: Any) -> int | None:
        return next((f.max_version_level for f in answer.finalized_features if f.name == "transaction.version"),
                    None)

    real, ours = api_versions(fidelity_pair.real.bootstrap_servers), api_versions(fidelity_pair.ours.bootstrap_servers)
    assert level(ours) == level(real)
