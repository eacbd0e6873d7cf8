"""SharePartitionView.held_at_lso: a read_committed share group that has delivered everything below an LSO under
the high watermark is held there, whether its persisted start offset reached the LSO or, as Kafka 4.4.0 persists
it (one state write behind), still sits below it with every record up to the LSO acknowledged or archived."""

from __future__ import annotations

from kafka_txn_tools.admin.share_groups import SharePartitionView


def view(start: int, acknowledged: int = 0, archived: int = 0, available: int = 0, state_read: bool = True,
         lso: int = 6, hw: int = 10) -> SharePartitionView:
    return SharePartitionView("t", 0, start, None, lso, hw, acknowledged, archived, available, 1, state_read)


def test_held_at_its_start_offset_or_with_everything_below_the_lso_delivered() -> None:
    assert view(6).held_at_lso
    assert view(0, acknowledged=5, archived=1).held_at_lso  # what Kafka 4.4.0 answered (the marker archived)


def test_not_held_while_records_below_the_lso_wait_or_when_that_cannot_be_told() -> None:
    assert not view(0, acknowledged=4, archived=1).held_at_lso  # one record not delivered yet
    assert not view(0, acknowledged=4, archived=1, available=1).held_at_lso  # one released, to deliver again
    assert not view(0, acknowledged=5, archived=1, state_read=False).held_at_lso  # the state was not read
    assert not view(6, lso=10).held_at_lso  # nothing past the LSO: nothing is held back
