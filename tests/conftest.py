"""Settings every test gets: the CLI's audit log and incident history go to the test's own directory, never
to ~."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _private_audit_log(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path_factory.getbasetemp() / "audit" / "audit.log"
    monkeypatch.setenv("KAFKA_TXN_AUDIT_LOG", str(path))
    monkeypatch.setenv("KAFKA_TXN_HISTORY", str(path.parent / "history.db"))
    return path
