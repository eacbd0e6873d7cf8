"""Which admin APIs a command needs, and one error when the cluster lacks one.

Brokers advertise their APIs in ApiVersions. Apache Kafka added DescribeProducers in 2.8 and
ListTransactions / DescribeTransactions in 3.0 (KIP-664); Kafka-compatible brokers may lack them
altogether. A command that needs a missing API stops before it sends anything, with one exit code
and a message naming the API, instead of failing later in a way that looks like a network fault.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from kafka_txn_tools.errors import MissingApi


@dataclass(frozen=True)
class AdminApi:
    name: str
    key: int
    min_version: int  # the oldest version our requests can use
    since: str  # the Apache Kafka release that has it


APIS = {a.name: a for a in (
    AdminApi("WriteTxnMarkers", 27, 0, "Apache Kafka 0.11 (KIP-98)"),
    AdminApi("InitProducerId", 22, 3, "Apache Kafka 2.5 (v3, KIP-360)"),
    AdminApi("DescribeProducers", 61, 0, "Apache Kafka 2.8 (KIP-664)"),
    AdminApi("DescribeTransactions", 65, 0, "Apache Kafka 3.0 (KIP-664)"),
    AdminApi("ListTransactions", 66, 0, "Apache Kafka 3.0 (KIP-664)"),
    AdminApi("ElectLeaders", 43, 0, "Apache Kafka 2.2 (KIP-183)"),
    AdminApi("AlterPartitionReassignments", 45, 0, "Apache Kafka 2.4 (KIP-455)"),
    # v2 is the first with an isolation level: find-hanging's first pass reads the LSO with it.
    AdminApi("ListOffsets", 2, 2, "Apache Kafka 0.11 (KIP-98)"),
)}

COORDINATOR_VIEW = ("ListTransactions", "DescribeTransactions")


class SupportsApis(Protocol):
    def supports(self, api: str) -> bool: ...


def missing(client: SupportsApis, apis: Iterable[str]) -> list[str]:
    return [api for api in apis if not client.supports(api)]


def missing_api_error(api: str, command: str, fix: str | None = None) -> MissingApi:
    info = APIS[api]
    return MissingApi(
        api, f"the cluster does not support {api} (since {info.since}), which `kafka-txn {command}` needs: its "
             "brokers are older, or Kafka-compatible brokers without it", fix)


def require(client: SupportsApis, command: str, *apis: str) -> None:
    """Raise MissingApi for the first API in `apis` the cluster does not offer."""
    for api in missing(client, apis):
        raise missing_api_error(api, command)
