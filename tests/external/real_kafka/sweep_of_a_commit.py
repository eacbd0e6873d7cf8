"""The sweep over a real cluster's log dirs, on the transaction its coordinator committed without one partition's
marker (Apache Kafka 4.x; staged by test_coordinator_side_real.py, which calls `sweep_agrees_with_find_hanging`
once find-hanging has reported it and before its command runs): the sweep reads the PrepareCommit record from the
`__transaction_state` segments and gives the row find-hanging gave, with the same `kafka-txn commit` command,
and leaves it out of the abort plan (abort --plan would refuse it, holding back the whole plan)."""

from __future__ import annotations

import contextlib
import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from kafka_txn_tools.cli.app import app
from kafka_txn_tools.dumps.plan import load_plan
from tests.support.real_kafka import KafkaCluster


def sweep_agrees_with_find_hanging(cluster: KafkaCluster, topic: str, live_row: dict[str, Any]) -> None:
    """Copy every node's log dir (while the cluster runs), sweep the copies with find-hanging's cluster option, and
    check the sweep's row, plan and summary against find-hanging's `live_row`."""
    from kafka_txn_tools.spark.session import get_session

    get_session("local[2]", app_name="kafka-txn-tests")  # the run's one session (tests/conftest.py's `spark`)
    with tempfile.TemporaryDirectory(prefix="sweep-committed-") as tmp:
        root = Path(tmp)
        for node_id, node in cluster.nodes.items():
            # shutil.Error: a file the running broker removed while it was copied (a rolled checkpoint, a snapshot).
            with contextlib.suppress(shutil.Error):
                shutil.copytree(node.log_dir, root / "logs" / f"node-{node_id}")
        out = root / "out"
        args = ["sweep", str(root / "logs"), "--out", str(out), "--master", "local[2]", "-o", "json",
                "--max-transaction-timeout", "1s", "--as-of", str(int(time.time() * 1000)),
                "-b", cluster.bootstrap_servers]
        r = CliRunner().invoke(app, args)
        if r.exception is not None and not isinstance(r.exception, SystemExit):
            raise r.exception
        assert r.exit_code == 0, r.stdout + r.stderr
        doc = json.loads(r.stdout)
        [row] = [t for t in doc["transactions"] if t["topic"] == topic]
        assert (row["verdict"], row["reason"], row["partition"], row["start_offset"], row["transactional_id"]) == (
            "hanging", live_row["reason"], live_row["partition"], live_row["start_offset"],
            live_row["transactional_id"])
        # The same PrepareCommit record, read from the copied segments instead of the live topic.
        assert row["coordinator_decision"] == live_row["coordinator_decision"]
        assert row["commands"] == live_row["commands"]
        assert load_plan(out / "abort-plan.yaml").entries == []
        summary = json.loads((out / "summary.json").read_text())
        assert summary["apply_plan"] == []
        [left] = summary["left_out_of_plan"]
        assert (left["topic"], left["partition"], left["commands"]) == (topic, row["partition"], row["commands"])
