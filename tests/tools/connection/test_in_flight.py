"""connection/in_flight.py: a broker's requests beyond the limit wait, and go in the order they came.

The coroutines are stepped by hand here, as kafka-python's loop steps them: a coroutine that must wait yields
the Future it waits for."""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any

import pytest

from kafka_txn_tools.connection.in_flight import InFlightLimit


def step(coro: Coroutine[Any, Any, None]) -> Any:
    """Run `coro` until it waits (the Future it waits for) or ends (None)."""
    try:
        return coro.send(None)
    except StopIteration:
        return None


def test_requests_beyond_the_limit_wait_and_are_let_through_one_per_answer_in_order() -> None:
    limit = InFlightLimit(2)
    assert step(limit.acquire(1)) is None and step(limit.acquire(1)) is None
    assert step(limit.acquire(2)) is None  # another broker has its own slots
    third, fourth = limit.acquire(1), limit.acquire(1)
    third_turn, fourth_turn = step(third), step(fourth)
    assert third_turn is not None and fourth_turn is not None and limit.in_flight(1) == 2
    limit.release(1)  # an answer: the first to wait goes
    assert third_turn.is_done and not fourth_turn.is_done
    assert step(third) is None and limit.in_flight(1) == 2
    limit.release(1)
    assert step(fourth) is None and limit.in_flight(1) == 2
    for node in (1, 1, 2):
        limit.release(node)
    assert (limit.in_flight(1), limit.in_flight(2)) == (0, 0)


def test_a_limit_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1, not 0"):
        InFlightLimit(0)


def test_a_failure_to_reach_the_broker_fails_the_requests_waiting_for_it_at_once() -> None:
    """A broker that does not answer: the burst's requests waiting for a slot fail with the first one's error
    instead of waiting one timeout each in turn; the request after them tries the broker again."""
    limit = InFlightLimit(1)
    assert step(limit.acquire(7)) is None
    second, third = limit.acquire(7), limit.acquire(7)
    assert step(second) is not None and step(third) is not None
    timed_out = TimeoutError("broker 7 did not answer")
    limit.fail_waiting(7, timed_out)
    for waiting in (second, third):
        with pytest.raises(TimeoutError, match="did not answer"):
            step(waiting)
    limit.release(7)  # the failed request's own slot
    assert limit.in_flight(7) == 0
    assert step(limit.acquire(7)) is None and limit.in_flight(7) == 1
    limit.fail_waiting(8, timed_out)  # nobody waiting there: nothing happens
