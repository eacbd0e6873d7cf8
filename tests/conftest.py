"""Settings every test gets: the CLI's audit log goes to the test's own directory, never to ~; kafka-python is
imported as the kafka_cluster fixture imports it, before any test module does (without its schema loader's
deprecation warnings, see kafka_txn_broker.formats.kafka_python). The `installation` fixture: this checkout built
and installed into a fresh venv, shared by the tests of the installed package (tests/support/installed.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_txn_broker.formats import kafka_python
from tests.support.installed import Installation, build_and_install

kafka_python.load()


@pytest.fixture(autouse=True)
def _private_audit_log(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path_factory.getbasetemp() / "audit" / "audit.log"
    monkeypatch.setenv("KAFKA_TXN_AUDIT_LOG", str(path))
    return path


@pytest.fixture(scope="session")
def installation(tmp_path_factory: pytest.TempPathFactory) -> Installation:
    """The wheel built from this checkout, installed with [spark] into a fresh venv (once per run)."""
    return build_and_install(tmp_path_factory.mktemp("installed"))
