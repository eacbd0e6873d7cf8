"""The CLI under faults: leadership moving during an abort."""

from __future__ import annotations

from pathlib import Path

from kafka_txn_broker import EmbeddedCluster
from kafka_txn_broker.testing.scenarios import HANGING_PARTITION, ScenarioOptions, run_scenario
from kafka_txn_tools.admin.abort import AbortTarget, execute, validate
from kafka_txn_tools.connection.client import AdminClient
from kafka_txn_tools.connection.config import ClientSettings
from kafka_txn_tools.models import TopicPartition
from tests.e2e.test_cli_hanging import BACKDATE_MS, CONFIG, committed_after_hang, read_committed


def test_abort_follows_the_leader_when_it_moves_between_validation_and_marker(tmp_path: Path) -> None:
    with EmbeddedCluster(nodes=3, data_dir=tmp_path, config=CONFIG) as cluster:
        bs = cluster.bootstrap_servers
        [result] = run_scenario("late-write-after-abort", bs, ScenarioOptions(backdate_ms=BACKDATE_MS))
        hang = result.hanging[0]
        committed_after_hang(bs, hang.topic)
        tp = TopicPartition(hang.topic, HANGING_PARTITION)
        with AdminClient(ClientSettings(bootstrap_servers=bs), timeout_ms=10_000) as client:
            check = validate(client, AbortTarget(tp, start_offset=hang.start_offset))
            old_leader = check.leader
            cluster.stop_node(old_leader)  # the operator confirmed; meanwhile the leader went away
            outcome = execute(client, check)
        assert check.leader != old_leader
        assert any("moved from broker" in n for n in check.notes)
        assert not outcome.still_open
        assert outcome.after.last_stable_offset == outcome.after.high_watermark
        assert any(v.endswith(b"-after-2") for v in read_committed(bs, hang.topic))  # the consumer resumed
