"""docs/share_txn_loop.py (the loop of docs/share-groups.md) runs as written against the embedded broker: every input
processed once, its outputs visible to a read_committed reader, the inputs acknowledged."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from kafka_txn_broker import EmbeddedCluster
from kafka_txn_broker.clock import ManualClock
from tests.e2e.share_support import produce, set_group_configs, share_partitions
from tests.tools.clients.support import ENABLED, committed_output

EXAMPLE = Path(__file__).resolve().parents[3] / "docs" / "share_txn_loop.py"


def test_the_example_loop_processes_every_record_exactly_once(tmp_path: Path) -> None:
    with EmbeddedCluster(nodes=1, data_dir=tmp_path, config=ENABLED, clock=ManualClock()) as c:
        c.create_topic("in", 2, 1)
        c.create_topic("out", 1, 1)
        set_group_configs(c.bootstrap_servers, "workers", share_auto_offset_reset="earliest")
        sent = produce(c.bootstrap_servers, "in", 40, 2)
        done = subprocess.run([sys.executable, str(EXAMPLE), "--bootstrap-server", c.bootstrap_servers,
                               "--group", "workers", "--input", "in", "--output", "out", "--transactional-id",
                               "worker-1", "--max-records", "40", "--idle-seconds", "20"],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "processed 40 records"
        assert sorted(committed_output(c, 40)) == sorted(v.upper() for v in sent)
        parts = share_partitions(c, "workers")
        assert {tp: (s["start"], s["ACQUIRED"], s["TX_PENDING"]) for tp, s in parts.items()} == {
            ("in", 0): (20, 0, 0), ("in", 1): (20, 0, 0)}
