"""kafka_txn_broker.gc_pause: the collector is off inside a bulk section, back on after the last one ends (across
threads), and left off when it was off before."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator

import pytest

from kafka_txn_broker.gc_pause import bulk


@pytest.fixture(autouse=True)
def collector_on() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_off_inside_and_on_after() -> None:
    with bulk():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_on_again_after_an_error_inside() -> None:
    with pytest.raises(ValueError), bulk():
        raise ValueError("decoding failed")
    assert gc.isenabled()


def test_overlapping_sections_on_two_threads_resume_when_the_last_ends() -> None:
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()
    seen: list[bool] = []

    def other() -> None:
        first_in.wait()
        with bulk():
            second_in.set()
            first_out.wait()
            seen.append(gc.isenabled())  # the first section ended, this one still runs

    thread = threading.Thread(target=other)
    thread.start()
    with bulk():
        first_in.set()
        second_in.wait()
    first_out.set()
    thread.join()
    assert seen == [False]
    assert gc.isenabled()


def test_a_collector_switched_off_before_stays_off() -> None:
    gc.disable()
    with bulk(), bulk():
        pass
    assert not gc.isenabled()
