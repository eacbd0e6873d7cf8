"""Session timers on plain millisecond values."""

from __future__ import annotations

from kafka_txn_broker.group.modern.session_timers import SessionTimers


def test_a_session_expires_once_at_its_deadline():
    t = SessionTimers()
    t.schedule("g", "m1", 100)
    t.schedule("g", "m2", 200)
    assert t.expired(99) == []
    assert t.expired(100) == [("g", "m1")]
    assert t.expired(150) == []
    assert t.expired(1000) == [("g", "m2")]


def test_rescheduling_moves_the_deadline_and_cancel_stops_it():
    t = SessionTimers()
    t.schedule("g", "m1", 100)
    t.schedule("g", "m1", 300)
    t.schedule("g", "m2", 100)
    t.cancel("g", "m2")
    assert t.expired(200) == []
    assert t.deadline("g", "m1") == 300
    assert t.expired(300) == [("g", "m1")]
