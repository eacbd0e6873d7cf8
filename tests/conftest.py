"""Settings every test gets: the CLI's audit log goes to the test's own directory, never to ~; kafka-python is
imported as the kafka_cluster fixture imports it, before any test module does (without its schema loader's
deprecation warnings, see kafka_txn_broker.formats.kafka_python)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_txn_broker.formats import kafka_python

kafka_python.load()


@pytest.fixture(autouse=True)
def _private_audit_log(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path_factory.getbasetemp() / "audit" / "audit.log"
    monkeypatch.setenv("KAFKA_TXN_AUDIT_LOG", str(path))
    return path
