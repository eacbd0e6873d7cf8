"""Producer ids come from durable blocks: never reissued, even after a crash or restart."""

from __future__ import annotations

from pathlib import Path

from kafka.protocol.producer import InitProducerIdRequest, InitProducerIdResponse

from kafka_txn_broker import EmbeddedCluster
from kafka_txn_broker.server.cluster_metadata import ClusterMetadata
from kafka_txn_broker.server.producer_id_manager import ProducerIdManager
from tests.broker.wire import roundtrip


def test_blocks_survive_reopen_without_close(tmp_path: Path) -> None:
    meta = ClusterMetadata(tmp_path, range(3))
    a, b = ProducerIdManager(meta, 10), ProducerIdManager(meta, 10)
    issued = [a.generate() for _ in range(15)] + [b.generate() for _ in range(3)]
    # No close(): like kill -9, only what was fsynced counts.
    reopened = ClusterMetadata(tmp_path, range(3))
    later = [ProducerIdManager(reopened, 10).generate() for _ in range(5)]
    assert len(set(issued)) == len(issued)
    assert min(later) > max(issued)


def _init_pid(cluster: EmbeddedCluster) -> int:
    req = InitProducerIdRequest[1](transactional_id=None, transaction_timeout_ms=60000)
    resp = roundtrip(cluster.bootstrap_servers, req, InitProducerIdResponse)
    assert resp.error_code == 0
    return int(resp.producer_id)


def test_init_producer_id_over_the_wire_is_fresh_after_restart(tmp_path: Path) -> None:
    with EmbeddedCluster(nodes=2, data_dir=tmp_path) as cluster:
        first = [_init_pid(cluster) for _ in range(3)]
        cluster.restart()
        after = _init_pid(cluster)
    assert len(set(first)) == 3 and after > max(first)
