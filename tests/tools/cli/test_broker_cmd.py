"""`kafka-txn broker start`: one ready line, clean shutdown on SIGTERM, usage errors for bad config."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.e2e.helpers import BrokerProcess


def test_start_prints_one_bootstrap_line_and_stops_cleanly(tmp_path: Path) -> None:
    broker = BrokerProcess(tmp_path, 3, 0)
    bootstrap = broker.start()
    hosts = bootstrap.split(",")
    assert len(hosts) == 3 and all(h.startswith("127.0.0.1:") for h in hosts)
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    p.produce("snap", value=b"x")
    assert p.flush(30) == 0
    assert broker.terminate() == 0
    # Clean shutdown wrote a producer snapshot on every replica of the partition that has data.
    assert len(list(tmp_path.glob("node-*/snap-0/*.snapshot"))) >= 1
    assert broker.proc is not None and broker.proc.stdout is not None
    assert broker.proc.stdout.read() == ""  # nothing but the one line on stdout
    for n in range(3):
        assert (tmp_path / f"node-{n}" / "meta.properties").exists()


def test_unknown_property_is_a_usage_error(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "kafka_txn_tools", "broker", "start", "--data-dir", str(tmp_path),
                          "--set", "num.partitons=3"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert "unknown broker property 'num.partitons'" in out.stderr
    assert "Traceback" not in out.stderr
