"""TransactionStateManager's monotonic marks at their boundaries: a transition's mark, the marks of a load
(from the recorded wall-clock age), and ids without a mark (measured on the wall clock).

Kafka's rules (TransactionStateManager): a transaction times out when txnStartTimestamp + txnTimeoutMs < now
(strictly), an id expires when txnLastUpdateTimestamp <= now - transactional.id.expiration.ms; here elapsed
time is monotonic (the module docstring), so a wall-clock step changes neither.
"""

from __future__ import annotations

from kafka_txn_broker.formats import errors as E
from kafka_txn_broker.formats.transaction_log import TransactionLogValue
from kafka_txn_broker.formats.transactions import TransactionState
from kafka_txn_broker.txn.transaction_metadata import TransactionMetadata
from tests.broker.txn.test_state_manager import NOW, make, write

S = TransactionState
TP = ("t", 0)


def test_an_id_changed_by_a_transition_expires_on_the_monotonic_clock() -> None:
    sm, _log, clock = make(**{"transactional.id.expiration.ms": 60_000})
    sm.load_partition(0, 1)
    epoch, md = sm.put_if_not_exists(TransactionMetadata("a", 42, txn_last_update_timestamp=NOW))
    assert sm.append_transaction_to_log("a", epoch, md.prepare_increment_producer_epoch(60_000, None, NOW)) == E.NONE
    clock.set_wall(NOW + 3_600_000)  # the wall clock steps an hour ahead: no time has passed
    assert sm.remove_expired_transactional_ids(clock.millis()) == []
    clock.advance(59_999)
    assert sm.remove_expired_transactional_ids(clock.millis()) == []
    clock.advance(1)
    assert sm.remove_expired_transactional_ids(clock.millis()) == ["a"]


def test_an_id_without_a_mark_idle_for_no_time_is_kept_even_with_a_1_ms_expiration() -> None:
    sm, _log, clock = make(**{"transactional.id.expiration.ms": 1})
    sm.load_partition(0, 1)
    sm.put_if_not_exists(TransactionMetadata("a", 42, producer_epoch=0, txn_last_update_timestamp=NOW))
    assert sm.remove_expired_transactional_ids(clock.millis()) == []  # 0 ms idle < 1 ms
    clock.advance(1)
    assert sm.remove_expired_transactional_ids(clock.millis()) == ["a"]


def test_a_transaction_loaded_the_instant_it_started_times_out_a_full_timeout_later() -> None:
    sm, log, clock = make()
    write(log, "running", TransactionLogValue(10, 0, 60_000, S.ONGOING, (TP,), NOW, NOW))
    sm.load_partition(0, 1)
    clock.advance(60_000)  # exactly the timeout: not yet (strictly after)
    assert sm.timed_out_transactions(clock.millis()) == []
    clock.advance(1)
    assert sm.timed_out_transactions(clock.millis()) == [("running", 10, 0)]


def test_a_loaded_id_expires_exactly_its_expiration_after_its_last_update() -> None:
    sm, log, clock = make(**{"transactional.id.expiration.ms": 60_000})
    write(log, "idle", TransactionLogValue(11, 0, 60_000, S.COMPLETE_COMMIT, (), NOW, NOW))
    clock.advance(10_000)
    sm.load_partition(0, 1)  # updated 10 s before the load
    clock.advance(49_999)
    assert sm.remove_expired_transactional_ids(clock.millis()) == []
    clock.advance(1)
    assert sm.remove_expired_transactional_ids(clock.millis()) == ["idle"]


def test_an_id_loaded_the_instant_it_was_updated_expires_a_full_expiration_later() -> None:
    sm, log, clock = make(**{"transactional.id.expiration.ms": 60_000})
    write(log, "idle", TransactionLogValue(11, 0, 60_000, S.COMPLETE_ABORT, (), NOW, NOW))
    sm.load_partition(0, 1)
    clock.advance(59_999)
    assert sm.remove_expired_transactional_ids(clock.millis()) == []
    clock.advance(1)
    assert sm.remove_expired_transactional_ids(clock.millis()) == ["idle"]
