"""Who is held back: the groups whose position on a partition is at or beyond its last stable offset.

A read_committed consumer cannot read past the LSO, so a group whose committed offset has reached it makes
no progress on that partition until the transaction holding the LSO ends; its lag is the records up to the
high watermark it cannot get. Consumer groups (classic and KIP-848) come from ListGroups on every broker and
OffsetFetch at each group's coordinator; share groups (KIP-932) from their start offsets moved past the records
already delivered above them (DescribeShareGroupOffsets' start offset and lag, with the high watermark read
before), those with share.isolation.level=read_committed only: a read_uncommitted share group reads past the LSO.
Only the partitions of find-hanging's results are asked about, once per run.
"""

from __future__ import annotations

from collections.abc import Mapping

from kafka_txn_tools.admin import hanging
from kafka_txn_tools.admin.api import ClusterApi
from kafka_txn_tools.admin.scan_memory import ScanMemory
from kafka_txn_tools.connection.wire import SHARE_GROUP_TYPE
from kafka_txn_tools.models import PartitionOffsets, StalledGroup, TopicPartition

CONSUMER, SHARE = "consumer", "share"


def held_back(client: ClusterApi, broker_ids: list[int], offsets: Mapping[TopicPartition, PartitionOffsets],
              memory: ScanMemory | None = None,
              ) -> tuple[dict[TopicPartition, tuple[StalledGroup, ...] | None], list[str]]:
    """The stalled groups of each partition (None: its LSO is unknown), and notes on what could not be read.
    `memory`: a scan loop's (admin/scan_memory.py): its group list and FindCoordinator answers."""
    known = sorted(tp for tp, o in offsets.items() if o.last_stable_offset is not None)
    if not known:
        return {}, []
    kept = memory.group_list() if memory is not None else None
    groups, errors = (kept, []) if kept is not None else client.list_groups(broker_ids)
    coordinators = memory.coordinators if memory is not None else None
    share = [g for g, kind in groups if kind == SHARE_GROUP_TYPE]
    consumers = [g for g, kind in groups if kind != SHARE_GROUP_TYPE]
    committed, consumer_errors = client.committed_offsets(consumers, known, coordinators)
    starts, share_errors = client.share_group_offsets(share, known, coordinators,
                                                      {tp: offsets[tp].high_watermark for tp in known})
    records = [hanging.CommittedOffset(g, kind, tp, offset)
               for kind, found in ((CONSUMER, committed), (SHARE, starts))
               for g, by_tp in found.items() for tp, offset in by_tp.items()]
    failed = [*errors, *consumer_errors, *share_errors]
    if memory is not None:
        memory.keep_groups(None if failed else groups)
    notes = [f"stalled groups may be incomplete: {e.message}" for e in failed]
    return {tp: hanging.stalled_groups(tp, offsets[tp], records) for tp in known}, notes
