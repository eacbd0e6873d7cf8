"""Settings every test gets: the CLI's audit log goes to the test's own directory, never to ~. Servers some
tests share: a Kerberos KDC (`kdc`) and an OpenID provider (`oidc`), one of each per session."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tests.broker.security.kerberos import Realm
    from tests.broker.security.oidc import Provider


@pytest.fixture(autouse=True)
def _private_audit_log(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path_factory.getbasetemp() / "audit" / "audit.log"
    monkeypatch.setenv("KAFKA_TXN_AUDIT_LOG", str(path))
    return path


@pytest.fixture(scope="session")
def kdc() -> Iterator[Realm]:
    """One throwaway MIT Kerberos realm (KAFKA.TEST) per session; this process uses its krb5.conf."""
    from tests.broker.security.kerberos import Realm, missing_binaries

    missing = missing_binaries()
    if missing:
        _unavailable(f"MIT Kerberos ({', '.join(missing)}) is not installed: run `bash scripts/dev.sh setup`")
    realm = Realm().start()
    try:
        yield realm
    finally:
        realm.stop()


def _unavailable(reason: str) -> None:
    """Skip locally; in CI (which runs scripts/dev.sh setup first) a missing tool is a failure."""
    if os.environ.get("CI"):
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def oidc() -> Iterator[Provider]:
    """One OpenID provider (panva's oidc-provider under node) per session, for the OAUTHBEARER tests."""
    from tests.broker.security.oidc import Provider, missing

    problem = missing()
    if problem:
        _unavailable(f"{problem}: run `bash scripts/dev.sh setup`")
    provider = Provider().start()
    try:
        yield provider
    finally:
        provider.stop()
