"""Clusters for the partition admin APIs' wire tests: an open one, and one whose ACL authorizer denies the
anonymous principal everything (no ACLs, allow.everyone.if.no.acl.found=false)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kafka_txn_broker.embedded import EmbeddedCluster

SMALL = {"offsets.topic.num.partitions": 1, "transaction.state.log.num.partitions": 1}
DENY_ALL = {**SMALL, "authorizer.class.name": "acl", "allow.everyone.if.no.acl.found": False}


@contextmanager
def cluster_of(tmp_path: Path, nodes: int = 3, **config: Any) -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(nodes=nodes, data_dir=tmp_path / "kafka", config={**SMALL, **config}) as c:
        yield c
