"""describe-producers: the producer state partition replicas hold (DescribeProducers), leaders or any replica."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from kafka_txn_tools.admin.api import ClusterApi
from kafka_txn_tools.admin.scan import Scope, plan_requests
from kafka_txn_tools.connection.capabilities import require
from kafka_txn_tools.models import PartitionProducers, ScanError


@dataclass
class ProducersReport:
    replicas: list[PartitionProducers] = field(default_factory=list)
    errors: list[ScanError] = field(default_factory=list)


def describe_producers(
    client: ClusterApi, scope: Scope, open_only: bool,
    progress: Callable[[int], None] | None = None, on_total: Callable[[int], None] | None = None,
) -> ProducersReport:
    """--all asks every replica (or, with a broker id, that broker's); --topic the leaders or one replica."""
    require(client, "describe-producers", "DescribeProducers")
    by_broker, errors = plan_requests(client.metadata([scope.topic] if scope.topic else None), scope)
    if on_total is not None:
        on_total(sum(map(len, by_broker.values())))
    replicas, errs = client.describe_producers(by_broker, open_only=open_only, progress=progress)
    replicas.sort(key=lambda r: (r.partition, r.broker_id))
    return ProducersReport(replicas, [*errors, *errs])
