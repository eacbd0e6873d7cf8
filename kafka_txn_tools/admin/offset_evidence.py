"""What the log holds at an offset: the evidence behind "already done" and "no transaction starts there".

When no open transaction starts at the offset an abort names, the leader's producer state alone cannot
tell a transaction that was completed from an offset that never started one. The log can: the batch
holding the offset says whether it is transactional and whose it is, and a control batch (COMMIT or
ABORT marker) of the same producer after it proves the transaction was completed. Only that marker
makes an abort "already done"; everything else is a refusal that says what is there.

`read` fetches whole batches from the offset (read_uncommitted, up to `max_bytes`); `judge` is pure.
"""

from __future__ import annotations

from dataclasses import dataclass

from kafka_txn_tools.admin.api import ClusterApi
from kafka_txn_tools.models import TopicPartition

# How far past the offset to look for the producer's marker: a completed transaction's marker follows
# its last record, so this bounds the size of a transaction whose completion can be proven.
MAX_EVIDENCE_BYTES = 8 << 20


@dataclass(frozen=True)
class Batch:
    """The header facts of one record batch."""

    base_offset: int
    last_offset: int
    producer_id: int
    producer_epoch: int
    transactional: bool
    control: bool
    commit: bool | None = None  # a marker: COMMIT (True) or ABORT (False); None: not a marker


@dataclass(frozen=True)
class Evidence:
    """The batch holding the offset (None: no record there any more) and the first marker of its
    producer after it (None: none in what was read)."""

    batch: Batch | None
    marker: Batch | None = None
    bytes_read: int = 0
    error: str | None = None  # the log could not be read (e.g. OFFSET_OUT_OF_RANGE)


def batches(raw: bytes) -> list[Batch]:
    """The batches of a Fetch answer, markers with their kind."""
    from kafka_txn_broker.formats.errors import CorruptRecordError
    from kafka_txn_broker.formats.record_batch import parse_control_record
    from kafka_txn_tools.batches import iter_batches

    out = []
    for header, view in iter_batches(raw, "fetched log"):
        commit = None
        if header.is_control:
            try:
                commit = parse_control_record(view)[0]
            except CorruptRecordError:
                commit = None  # a control record of another kind: not a transaction marker
        out.append(Batch(header.base_offset, header.last_offset, header.producer_id, header.producer_epoch,
                         header.is_transactional, header.is_control, commit))
    return out


def judge(found: list[Batch], offset: int, bytes_read: int = 0) -> Evidence:
    """The batch holding `offset` and the first marker of its producer after it."""
    holding = next((b for b in found if b.base_offset <= offset <= b.last_offset), None)
    if holding is None:
        return Evidence(None, bytes_read=bytes_read)
    marker = next((b for b in found if b.base_offset > holding.last_offset and b.control and b.commit is not None
                   and b.producer_id == holding.producer_id and b.producer_epoch >= holding.producer_epoch), None)
    return Evidence(holding, marker, bytes_read)


def read(client: ClusterApi, tp: TopicPartition, leader: int, offset: int,
         max_bytes: int = MAX_EVIDENCE_BYTES) -> Evidence:
    """Fetch from `offset` on the leader and judge what is there."""
    data, errors = client.read_log({tp: (leader, offset)}, max_bytes)
    from kafka_txn_tools.batches import SegmentError

    raw = data.get(tp, b"")
    if errors and not raw:
        return Evidence(None, error=errors[0].error)
    try:
        return judge(batches(raw), offset, len(raw))
    except SegmentError as exc:
        return Evidence(None, error=f"CORRUPT_MESSAGE ({exc})")
