"""From the caller's acknowledgements to TxnShareAcknowledge batches. KIP-1289 allows only ACCEPT (1) and
REJECT (3) in a transaction (KIP-932's types: GAP 0, ACCEPT 1, RELEASE 2, REJECT 3, RENEW 4)."""

from __future__ import annotations

from typing import Any

import pytest

from kafka_txn_tools.clients.acks import ACCEPT, REJECT, AckBatch, acks_from_messages, normalize, release_polled


def test_touching_offsets_of_one_type_merge_into_one_batch_in_offset_order() -> None:
    got = normalize({("in", 0): [(7, ACCEPT), (5, ACCEPT), (6, ACCEPT), (8, 9, ACCEPT)]})
    assert got == {("in", 0): [AckBatch(5, 9, ACCEPT)]}


def test_a_change_of_type_or_a_gap_starts_a_new_batch() -> None:
    got = normalize({("in", 0): [(0, 2, ACCEPT), (3, REJECT), (4, ACCEPT), (6, ACCEPT)], ("in", 1): [(0, REJECT)]})
    assert got == {("in", 0): [AckBatch(0, 2, ACCEPT), AckBatch(3, 3, REJECT), AckBatch(4, 4, ACCEPT),
                               AckBatch(6, 6, ACCEPT)],
                   ("in", 1): [AckBatch(0, 0, REJECT)]}


def test_a_partition_with_nothing_to_acknowledge_is_left_out() -> None:
    assert normalize({("in", 0): [], ("in", 1): [(3, ACCEPT)]}) == {("in", 1): [AckBatch(3, 3, ACCEPT)]}


@pytest.mark.parametrize("kind", [0, 2, 4, 5, -1])
def test_types_without_transactional_meaning_are_refused(kind: int) -> None:
    with pytest.raises(ValueError, match="only ACCEPT \\(1\\) and REJECT \\(3\\)"):
        normalize({("in", 0): [(1, kind)]})


@pytest.mark.parametrize("kind", [True, "ACCEPT", 1.0, None])
def test_a_type_that_is_not_an_int_is_refused(kind: Any) -> None:
    with pytest.raises(ValueError, match="must be ACCEPT"):
        normalize({("in", 0): [(1, kind)]})


@pytest.mark.parametrize("items", [[(1, ACCEPT), (1, ACCEPT)], [(0, 3, ACCEPT), (3, REJECT)], [(2, 5, ACCEPT),
                                                                                                (4, 9, ACCEPT)]])
def test_an_offset_named_twice_is_refused(items: list[Any]) -> None:
    with pytest.raises(ValueError, match="more than once"):
        normalize({("in", 0): items})


@pytest.mark.parametrize("item", [(-1, ACCEPT), (5, 4, ACCEPT), (1,), (1, 2, 3, 4), [1, ACCEPT], ("1", ACCEPT)])
def test_malformed_items_are_refused(item: Any) -> None:
    with pytest.raises(ValueError):
        normalize({("in", 0): [item]})


@pytest.mark.parametrize("key", ["in", ("in",), (0, "in"), ("in", "0")])
def test_keys_must_be_topic_and_partition(key: Any) -> None:
    with pytest.raises(ValueError, match="keyed by"):
        normalize({key: [(1, ACCEPT)]})


class Msg:
    def __init__(self, topic: str, partition: int, offset: int, error: object = None) -> None:
        self._t, self._p, self._o, self._e = topic, partition, offset, error

    def topic(self) -> str:
        return self._t

    def partition(self) -> int:
        return self._p

    def offset(self) -> int:
        return self._o

    def error(self) -> object:
        return self._e


def test_acks_from_messages_skips_error_events_and_keeps_the_type() -> None:
    msgs = [Msg("a", 0, 4), Msg("a", 0, 5), Msg("b", 1, 9), Msg("a", 0, -1, error="PARTITION_EOF")]
    assert acks_from_messages(msgs, REJECT) == {("a", 0): [(4, REJECT), (5, REJECT)], ("b", 1): [(9, REJECT)]}
    with pytest.raises(ValueError):
        acks_from_messages(msgs, 2)


def test_release_polled_hands_every_record_back_with_release() -> None:
    class Consumer:
        def __init__(self) -> None:
            self.acked: list[tuple[int, int]] = []

        def acknowledge(self, m: Msg, kind: int) -> None:
            self.acked.append((m.offset(), kind))

    c = Consumer()
    release_polled(c, [Msg("a", 0, 4), Msg("a", 0, 5), Msg("a", 0, -1, error="EOF")])
    assert c.acked == [(4, 2), (5, 2)]  # RELEASE is 2 in KIP-932 (librdkafka's AcknowledgeType.RELEASE)
