"""Settings every test gets: the CLI's audit log and incident history go to the test's own directory, never to ~;
kafka-python is imported as the kafka_cluster fixture imports it, before any test module does (without its
schema loader's deprecation warnings, see kafka_txn_broker.formats.messages.kafka_python). Servers and builds some tests
share, one of each per session: a Kerberos KDC (`kdc`), an OpenID provider (`oidc`), and `installation` (this
checkout built and installed into a fresh venv, for the tests of the installed package,
tests/support/installed.py). Every test gets a tier marker, `unit`, `e2e` or `external`, from its folder, its
fixtures and what its module uses (tests/support/tiers.py); a unit test that opens a socket or a child process
fails. confluent-kafka clients log through Python logging (tests/support/librdkafka_logs.py), and a Kafka client left
open after the test or fixture that made it fails that test's teardown (tests/support/client_lifetimes.py). A parallel
run gives each worker whole modules, and keeps together what shares a server or a build (tests/support/parallel.py)."""

from __future__ import annotations

import os
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import settings

from kafka_txn_broker.formats.messages import kafka_python
from tests.support import client_lifetimes, librdkafka_logs, parallel, tiers
from tests.support.installed import Installation, build_and_install

# pytest-xdist's workers start with COLUMNS=80, which a serial run does not have: every CLI child a test starts
# would wrap its messages at 80 columns. A test that wants a width sets COLUMNS itself.
os.environ.pop("COLUMNS", None)
kafka_python.load()
# librdkafka's log lines go to Python logging (captured per test), not to the run's stderr.
librdkafka_logs.route()
# Every Kafka client is closed by the end of the test (or fixture scope) that made it.
client_lifetimes.track_kafka_python()

# The property tests draw the same examples on every default run (a run's verdict is the code's, never the
# draw's); `HYPOTHESIS_PROFILE=explore` draws new ones, more of them, to look for what the fixed draw misses.
# Loaded here, before any test module builds its own settings from the profile.
settings.register_profile("default-run", derandomize=True, database=None)
settings.register_profile("explore", derandomize=False, max_examples=1000)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default-run"))

if TYPE_CHECKING:
    from tests.broker.security.kerberos import Realm
    from tests.broker.security.oidc import Provider


def pytest_configure(config: pytest.Config) -> None:
    tiers.configure(config)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    tiers.classify(items)


@pytest.hookimpl(optionalhook=True)  # a pytest-xdist hook: known only where xdist is installed
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """`--dist loadscope` splits the run by tests/support/parallel.py's groups."""
    return parallel.make_scheduler(config, log) if config.getvalue("dist") == "loadscope" else None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, None, None]:
    """A missing program the test `needs` fails it; a unit test's set-up is held to the unit tier's rule."""
    client_lifetimes.REGISTRY.started(item)
    needs = [name for marker in item.iter_markers("needs") for name in marker.args]
    if needs:
        tiers.require(*needs)
    yield from _guarded(item)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    yield from _guarded(item)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, None, None]:
    """Once the test's fixtures (and its module's or the session's, when they end here) are torn down, the
    Kafka clients they or the test made are closed (tests/support/client_lifetimes.py)."""
    result = yield
    client_lifetimes.check(item, nextitem)
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, pytest.TestReport,
                                                                                         pytest.TestReport]:
    report = yield
    if report.failed and report.when in ("setup", "call"):
        item.stash[client_lifetimes.FAILED] = True
    return report


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(fixturedef: pytest.FixtureDef[object]) -> Generator[None, object, object]:
    client_lifetimes.REGISTRY.fixture_started(fixturedef.scope)
    try:
        return (yield)
    finally:
        client_lifetimes.REGISTRY.fixture_ended()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    leaks = client_lifetimes.summary()
    if leaks:
        terminalreporter.write_line(leaks, yellow=True)


def _guarded(item: pytest.Item) -> Generator[None, None, None]:
    if item.get_closest_marker("unit") is None:
        return (yield)
    with tiers.UnitGuard() as guard:
        result = yield
    tiers.judge(item, guard)
    return result


@pytest.fixture(autouse=True)
def _private_audit_log(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path_factory.getbasetemp() / "audit" / "audit.log"
    monkeypatch.setenv("KAFKA_TXN_AUDIT_LOG", str(path))
    monkeypatch.setenv("KAFKA_TXN_HISTORY", str(path.parent / "history.db"))
    return path


@pytest.fixture(scope="session")
def installation(tmp_path_factory: pytest.TempPathFactory) -> Installation:
    """The wheel built from this checkout, installed with [spark] into a fresh venv (once per run)."""
    return build_and_install(tmp_path_factory.mktemp("installed"))


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    """One local SparkSession for the whole run (sweeps in-process reuse the active one: Spark is slow to start),
    for the Spark tests and the end-to-end sweeps alike."""
    from kafka_txn_tools.spark.session import JAVA_MISSING, find_java, get_session

    if find_java() is None:  # a missing server fails, never skips (`dev.sh setup` installs it)
        pytest.fail(f"Spark tests need java: {JAVA_MISSING}; `bash scripts/dev.sh setup` installs it", pytrace=False)
    session = get_session("local[2]", app_name="kafka-txn-tests")
    yield session
    session.stop()


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
    """A missing server is a failure, never a skip: `scripts/dev.sh` installs what these tests need."""
    pytest.fail(reason)


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
