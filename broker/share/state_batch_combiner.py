"""Combine persisted state batches (Kafka's PersisterStateBatchCombiner): newer batches override the
offsets they cover, batches below the start offset are dropped, and neighbours in the same state with
the same delivery count are merged. Pure.

    combine([StateBatch(0, 9, 0, 1)], [StateBatch(3, 4, 2, 1)], start_offset=2)
    # -> [StateBatch(2, 2, 0, 1), StateBatch(3, 4, 2, 1), StateBatch(5, 9, 0, 1)]
"""

from __future__ import annotations

from collections.abc import Iterable

from kafka_txn_broker.formats.share_coordinator_records import StateBatch


def combine(current: Iterable[StateBatch], newer: Iterable[StateBatch], start_offset: int) -> list[StateBatch]:
    result: list[StateBatch] = [b for b in sorted(current) if b.last_offset >= start_offset]
    for b in sorted(newer):
        if b.last_offset < start_offset:
            continue
        result = _overlay(result, b._replace(first_offset=max(b.first_offset, start_offset)))
    return _trim_and_merge(result, start_offset)


def _overlay(batches: list[StateBatch], new: StateBatch) -> list[StateBatch]:
    out: list[StateBatch] = []
    placed = False
    for b in batches:
        if b.last_offset < new.first_offset or b.first_offset > new.last_offset:
            if not placed and b.first_offset > new.last_offset:
                out.append(new)
                placed = True
            out.append(b)
            continue
        if b.first_offset < new.first_offset:
            out.append(b._replace(last_offset=new.first_offset - 1))
        if not placed:
            out.append(new)
            placed = True
        if b.last_offset > new.last_offset:
            out.append(b._replace(first_offset=new.last_offset + 1))
    if not placed:
        out.append(new)
    return out


def _trim_and_merge(batches: list[StateBatch], start_offset: int) -> list[StateBatch]:
    out: list[StateBatch] = []
    for b in batches:
        if b.last_offset < start_offset:
            continue
        b = b._replace(first_offset=max(b.first_offset, start_offset))
        if out and out[-1].last_offset + 1 == b.first_offset and out[-1][2:] == b[2:]:
            out[-1] = out[-1]._replace(last_offset=b.last_offset)
        else:
            out.append(b)
    return out
