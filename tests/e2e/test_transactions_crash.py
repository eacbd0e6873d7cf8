"""Kill -9 after PREPARE_COMMIT is durable, before any marker: after a restart the commit completes and
is visible exactly once. The broker runs as a child process; the coordinator's test-only fault hook
(KAFKA_TXN_BROKER_FAULT=exit-after-prepare-commit) makes it die with exit code 137 at that point."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaAdminClient

from kafka_txn_broker.formats.partitioning import TXN_TOPIC, partition_for
from kafka_txn_broker.txn.coordinator import FAULT_ENV, FAULT_EXIT_AFTER_PREPARE_COMMIT
from kafka_txn_tools.dumps.transaction_log import read_transaction_log
from tests.e2e.helpers import BrokerProcess, consume_all, free_port_block


def test_commit_completes_after_a_crash_between_prepare_and_markers(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    port = free_port_block(3)
    monkeypatch.setenv(FAULT_ENV, FAULT_EXIT_AFTER_PREPARE_COMMIT)
    broker = BrokerProcess(tmp_path, 3, port)
    bootstrap = broker.start()
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic("crash", num_partitions=3, replication_factor=3)])["crash"].result(30)
        producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "crash-app", "log_level": 0})
        producer.init_transactions(30)
        producer.begin_transaction()
        for i in range(30):
            producer.produce("crash", value=b"%d" % i)
        producer.flush(10)
        with pytest.raises(KafkaException):
            producer.commit_transaction(3)  # the coordinator dies after writing PREPARE_COMMIT
        assert broker.proc is not None and broker.proc.wait(30) == 137
        assert _state_on_disk(tmp_path, "crash-app") == "PrepareCommit"  # the decision is durable, no COMPLETE

        monkeypatch.delenv(FAULT_ENV)
        bootstrap = broker.start()  # same ports, same data: the new coordinator re-drives the commit
        records = consume_all(bootstrap, "crash", 3, read_committed=True)
        values = sorted(int(v) for recs in records.values() for _, _, v in recs)
        assert values == list(range(30))  # visible, exactly once
        _wait_for_state(bootstrap, "crash-app", "CompleteCommit")
    finally:
        if broker.proc is not None and broker.proc.poll() is None:
            broker.terminate()


def _state_on_disk(data_dir: Path, txn_id: str) -> str:
    """The id's latest record in __transaction_state, read from the log files (the sweep's reader)."""
    partition_dir = f"{TXN_TOPIC}-{partition_for(txn_id, 50)}"
    states = {read_transaction_log(d)[txn_id].state for d in data_dir.glob(f"node-*/{partition_dir}")}
    (state,) = states  # every replica holds the same record
    return state


def _wait_for_state(bootstrap: str, txn_id: str, state: str) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        deadline = time.monotonic() + 20
        while True:
            current = admin.describe_transactions([txn_id])[txn_id].state.value
            if current == state or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert current == state
    finally:
        admin.close()
