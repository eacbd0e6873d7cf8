"""The monitor's SIGTERM and SIGINT handlers (cli/commands/monitor.py's `_on_signals`).

A handler runs in the main thread between two bytecodes. One that takes a lock the main thread may hold at that
moment (`Event.set()` while the main thread is inside that event's `wait()`) deadlocks the process: the monitor
then never exits after a SIGTERM. So the handlers only append the signal to a list, which the main loop polls.
"""

from __future__ import annotations

import os
import signal

from kafka_txn_tools.cli.commands.monitor import _on_signals


def test_a_signal_is_only_noted_and_the_old_handlers_come_back() -> None:
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    asked, restore = _on_signals()
    try:
        os.kill(os.getpid(), signal.SIGTERM)
        os.kill(os.getpid(), signal.SIGINT)  # noted too: neither stops this test, nor sets anything else
        assert asked == [signal.SIGTERM, signal.SIGINT]
    finally:
        restore()
    assert {sig: signal.getsignal(sig) for sig in before} == before
