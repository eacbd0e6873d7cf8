"""The unit tier's guard (tests/support/tiers.py) records what breaks the tier's rule, and only that. These
tests open sockets and child processes themselves, so they are `e2e`."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest

from tests.support import tiers

pytestmark = pytest.mark.e2e


def test_a_listening_socket_and_a_connection_to_it_are_recorded() -> None:
    with socket.socket() as server, tiers.UnitGuard() as guard:
        server.bind(("127.0.0.1", 0))
        server.listen()
        with socket.create_connection(server.getsockname(), timeout=5):
            pass
    assert [what.split("(")[0] for what in guard.done] == ["socket.bind", "socket.connect"]


def test_a_refused_connection_and_a_unix_socket_are_not() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()  # bound, never listening: a connection to it is refused
        with tiers.UnitGuard() as guard:
            with pytest.raises(ConnectionRefusedError):
                socket.create_connection(closed, timeout=5)
            with socket.socket(socket.AF_UNIX) as unix:
                unix.close()
    assert guard.done == []


def test_a_child_process_is_recorded_and_fails_the_test() -> None:
    with tiers.UnitGuard() as guard:
        subprocess.run([sys.executable, "-c", "pass"], check=True)
    assert len(guard.done) == 1 and "child process" in guard.done[0]
    with pytest.raises(pytest.fail.Exception, match="must open no TCP/IP socket"):
        tiers.judge(_Item(), guard)  # type: ignore[arg-type]  # judge reads only the nodeid


def test_the_patches_are_gone_afterwards() -> None:
    before = (socket.socket.__dict__.get("connect"), subprocess.Popen.__init__)
    with tiers.UnitGuard():
        pass
    assert (socket.socket.__dict__.get("connect"), subprocess.Popen.__init__) == before


class _Item:
    nodeid = "tests/x.py::test_y"
