"""Synthetic cluster state with ground truth, in all three sweep input kinds.

A cluster of brokers hosts topics whose partitions are replicated (leader first); every replica
carries producer state. Producer counts per partition are heavy-tailed (Pareto). Background
producers are idempotent or transactional with closed or recent open transactions; on top, known
cases are injected: healthy open, boundary (exactly at the timeout: not late), late-but-live,
hanging for each reason, replica divergence, and (for log dirs) transactions a stale snapshot still
shows open but that later segments commit. `ground-truth.json` lists what a correct sweep reports.

Writers: `write_dump` (Parquet/JSONL dump dir, streamed in chunks: 10M rows without holding them),
`write_logdirs` (real `.snapshot` files, segments with markers, `__transaction_state-N` segments),
`write_dump_log_text` (kafka-dump-log.sh text in every style).

    python -m tests.support.generator OUT [--kind dump|logdir|text|all] [--rows N] ...
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from kafka_txn_broker.formats import producer_snapshot as snap
from kafka_txn_broker.formats.partitioning import TXN_TOPIC, partition_for
from kafka_txn_broker.formats.record_batch import build_batch, build_control_batch
from kafka_txn_broker.formats.transactions import DEFAULT_MAX_TRANSACTION_TIMEOUT_MS, LATE_TRANSACTION_BUFFER_MS
from kafka_txn_tools.dumps import transaction_log as txlog
from kafka_txn_tools.dumps.parquet import PRODUCER_SCHEMA, TRANSACTION_SCHEMA
from kafka_txn_tools.dumps.plan import HANGING_REASONS
from kafka_txn_tools.dumps.schema import PRODUCERS, TRANSACTIONS, DumpWriter, Row
from tests.support import dump_log_render as render

MINUTE = 60_000


@dataclass
class GeneratorConfig:
    seed: int = 7
    brokers: int = 3
    topics: int = 3
    partitions_per_topic: int = 6
    replication_factor: int = 3
    mean_producers: float = 3.0
    max_producers: int = 50_000
    capture_time_ms: int = 1_700_000_000_000
    max_transaction_timeout_ms: int = DEFAULT_MAX_TRANSACTION_TIMEOUT_MS
    hanging_per_reason: int = 2
    late_live: int = 3
    healthy_open: int = 3
    divergent_per_kind: int = 1
    closed_after_snapshot: int = 2
    transactional_fraction: float = 0.2
    healthy_open_fraction: float = 0.05
    txn_state_partitions: int = 50
    chunk_partitions: int = 50_000

    @property
    def partitions(self) -> int:
        return self.topics * self.partitions_per_topic

    @classmethod
    def for_rows(cls, rows: int, **overrides: Any) -> GeneratorConfig:
        """A config whose producer-state table has about `rows` rows (all replicas)."""
        cfg = cls(**overrides)
        replicas = min(cfg.replication_factor, cfg.brokers)
        cfg.partitions_per_topic = max(1, int(rows / (cfg.mean_producers * replicas)) // cfg.topics)
        # The heavy tail makes the realized mean differ from the nominal one: rescale once.
        realized = int(Cluster(cfg).counts.sum()) * replicas
        cfg.partitions_per_topic = max(1, round(cfg.partitions_per_topic * rows / max(realized, 1)))
        return cfg


@dataclass
class Injected:
    """One injected open (or once-open) transaction with its expected verdict."""

    case: str  # healthy, boundary, late, hanging, diverge-follower, diverge-leader, closed-after-snapshot
    reason: str | None
    g: int  # global partition index
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    start_offset: int
    last_timestamp_ms: int
    transactional_id: str | None = None
    coordinator: txlog.TxnMetadata | None = None
    tombstoned: bool = False
    open_on: list[int] = field(default_factory=list)  # brokers whose replica shows it open


class Cluster:
    """Deterministic layout: partitions, replicas, producer counts, log end offsets, injections."""

    def __init__(self, cfg: GeneratorConfig) -> None:
        if cfg.replication_factor < 1 or cfg.brokers < 1:
            raise ValueError("brokers and replication factor must be at least 1")
        self.cfg = cfg
        self.rf = min(cfg.replication_factor, cfg.brokers)
        rng = np.random.default_rng(cfg.seed)
        # Pareto tail: most partitions have a handful of producers, a few have thousands.
        raw = (rng.pareto(1.6, cfg.partitions) + 1) * (cfg.mean_producers * 0.4)
        self.counts = np.clip(raw.astype(np.int64), 1, cfg.max_producers)
        self.snapshot_offset = 20_000 + (np.arange(cfg.partitions) * 7919) % 50_000
        self.topic_names = [f"events-{t:03d}" for t in range(cfg.topics)]
        self.injected = _inject(cfg, rng, self)
        self.by_partition: dict[int, list[Injected]] = {}
        for inj in self.injected:
            self.by_partition.setdefault(inj.g, []).append(inj)

    def topic(self, g: int) -> str:
        return self.topic_names[g // self.cfg.partitions_per_topic]

    def index(self, g: int) -> int:
        return g % self.cfg.partitions_per_topic

    def replicas(self, g: int) -> list[int]:
        return [((g + r) % self.cfg.brokers) + 1 for r in range(self.rf)]

    def leader(self, g: int) -> int:
        return self.replicas(g)[0]

    def markers(self, g: int) -> list[Injected]:
        return [i for i in self.by_partition.get(g, []) if i.case == "closed-after-snapshot"]

    def log_end(self, g: int, broker: int) -> int:
        """Leader one offset ahead of followers (a trailing non-producer batch), so leadership can be
        inferred from offsets when only log dirs or dump-log text are available."""
        end = int(self.snapshot_offset[g]) + len(self.markers(g))
        return end + 1 if broker == self.leader(g) else end


def _inject(cfg: GeneratorConfig, rng: np.random.Generator, cluster: Cluster) -> list[Injected]:
    now = cfg.capture_time_ms
    timeout = cfg.max_transaction_timeout_ms
    cases: list[tuple[str, str | None]] = []
    cases += [("healthy", None)] * cfg.healthy_open + [("boundary", None)]
    cases += [("late", "late")] * cfg.late_live
    cases += [("hanging", r) for r in HANGING_REASONS for _ in range(cfg.hanging_per_reason)]
    if cluster.rf > 1:
        cases += [
            ("diverge-follower", None),
            ("diverge-leader", "no-transactional-id"),
        ] * cfg.divergent_per_kind
    cases += [("closed-after-snapshot", None)] * cfg.closed_after_snapshot
    out = []
    used_offsets: dict[int, set[int]] = {}
    for n, (case, reason) in enumerate(cases):
        g = int(rng.integers(0, cfg.partitions))
        taken = used_offsets.setdefault(g, set())
        start = int(rng.integers(100, 5_000))
        while start in taken:
            start += 1
        taken.add(start)
        age = _age_for(case, n, timeout)
        inj = Injected(
            case=case,
            reason=reason,
            g=g,
            producer_id=500_000 + n,
            producer_epoch=int(rng.integers(0, 20)),
            coordinator_epoch=int(rng.integers(-1, 10)),
            start_offset=start,
            last_timestamp_ms=now - age,
        )
        _attach_coordinator(inj, cluster, n)
        out.append(inj)
    return out


def _age_for(case: str, n: int, timeout: int) -> int:
    if case == "healthy":
        return timeout // 3
    if case == "boundary":
        return timeout  # strict rule: exactly the timeout is not late
    if case == "late":
        # Alternate between late only by find-hanging's rule and late by the broker metric's too.
        return timeout + (2 * MINUTE if n % 2 else LATE_TRANSACTION_BUFFER_MS + 10 * MINUTE)
    return timeout + LATE_TRANSACTION_BUFFER_MS + (n + 1) * 7 * MINUTE


def _attach_coordinator(inj: Injected, cluster: Cluster, n: int) -> None:
    """Coordinator state that makes the injected case come out with its expected reason."""
    g, epoch = inj.g, inj.producer_epoch
    here = ((cluster.topic(g), cluster.index(g)),)
    elsewhere = ((cluster.topic((g + 1) % cluster.cfg.partitions) + "-other", cluster.index(g)),)
    updated = inj.last_timestamp_ms + 1_000
    started = inj.last_timestamp_ms - 5_000
    timeout = cluster.cfg.max_transaction_timeout_ms
    inj.open_on = cluster.replicas(g)
    if inj.case == "diverge-follower":
        inj.open_on = cluster.replicas(g)[1:2]
    elif inj.case == "diverge-leader":
        inj.open_on = cluster.replicas(g)[:1]
    kind = inj.reason if inj.case in ("hanging", "diverge-leader") else inj.case
    tid = f"app-{inj.case}-{n}"
    state, coord_epoch = "Ongoing", epoch
    parts: tuple[tuple[str, int], ...] = here
    if kind in ("no-transactional-id", "closed-after-snapshot", "diverge-follower") or (
        kind == "boundary" or (kind == "healthy" and n % 2 == 0)
    ):
        return  # no id maps to the producer: would be hanging if it were (wrongly) judged late
    if kind == "transactional-id-not-found":
        inj.tombstoned = True
    elif kind == "partition-not-in-transaction":
        state, parts = ("Ongoing" if n % 2 else "PrepareCommit"), elsewhere
    elif kind == "epoch-mismatch":
        # The coordinator's epoch is older than the partition's: its markers would be fenced.
        inj.producer_epoch = epoch = max(epoch, 1)
        coord_epoch = epoch - 1
    elif kind == "transaction-not-ongoing":
        # Completed: with the partition still listed (a lost marker) or already cleared.
        state, parts = ("CompleteCommit", here) if n % 2 else ("Empty", ())
    elif kind == "late" and n % 3 == 0:
        state, coord_epoch = "PrepareCommit", epoch + 1  # transaction version 2 bumps at EndTxn
    inj.transactional_id = tid
    inj.coordinator = txlog.TxnMetadata(tid, inj.producer_id, coord_epoch, timeout, state, parts, updated, started)


# --- per-replica producer state ------------------------------------------------------------------


def injected_entry(cluster: Cluster, inj: Injected, broker: int, final: bool = True) -> snap.SnapshotEntry | None:
    """The injected producer as `broker`'s replica holds it (None: the replica never saw it).

    final=False gives the state a stale snapshot shows for closed-after-snapshot cases.
    """
    is_open = broker in inj.open_on
    if inj.case == "diverge-leader" and not is_open:
        return None  # the follower lags behind the transaction's first batch
    last_offset = inj.start_offset + 3
    committed_later = inj.case == "closed-after-snapshot"
    if committed_later and final:
        marker_ts = cluster.cfg.capture_time_ms - 30_000
        return snap.SnapshotEntry(
            inj.producer_id,
            inj.producer_epoch,
            3,
            last_offset,
            3,
            marker_ts,
            max(inj.coordinator_epoch, 0) + 1,
            -1,
        )
    if not is_open and not committed_later:
        # the leader already wrote the marker; this replica has it closed
        return snap.SnapshotEntry(
            inj.producer_id,
            inj.producer_epoch,
            3,
            last_offset,
            3,
            inj.last_timestamp_ms + 60_000,
            max(inj.coordinator_epoch, 0),
            -1,
        )
    return snap.SnapshotEntry(
        inj.producer_id,
        inj.producer_epoch,
        3,
        last_offset,
        3,
        inj.last_timestamp_ms,
        inj.coordinator_epoch,
        inj.start_offset,
    )


@dataclass
class Chunk:
    """Background producers of partitions [g0, g1), before replication (numpy columns)."""

    g0: int
    g1: int
    g: np.ndarray
    pid: np.ndarray
    epoch: np.ndarray
    last_seq: np.ndarray
    last_ts: np.ndarray
    coord_epoch: np.ndarray
    txn_start: np.ndarray
    transactional: np.ndarray
    last_offset: np.ndarray


def iter_chunks(cluster: Cluster) -> Iterator[Chunk]:
    cfg = cluster.cfg
    pid_base = 1_000_000
    for g0 in range(0, cfg.partitions, cfg.chunk_partitions):
        g1 = min(cfg.partitions, g0 + cfg.chunk_partitions)
        rng = np.random.default_rng([cfg.seed, g0])
        counts = cluster.counts[g0:g1]
        n = int(counts.sum())
        g = np.repeat(np.arange(g0, g1), counts)
        transactional = rng.random(n) < cfg.transactional_fraction
        healthy_open = transactional & (rng.random(n) < cfg.healthy_open_fraction)
        leo = cluster.snapshot_offset[g]
        last_ts = cfg.capture_time_ms - rng.integers(1_000, 7 * 86_400_000, n)
        last_ts = np.where(
            healthy_open,
            cfg.capture_time_ms - rng.integers(1_000, cfg.max_transaction_timeout_ms // 2, n),
            last_ts,
        )
        # Background open transactions start near the log end: above every injected (old) one.
        txn_start = np.where(healthy_open, leo - rng.integers(10, 60, n), -1)
        yield Chunk(
            g0,
            g1,
            g,
            pid_base + np.arange(n, dtype=np.int64),
            rng.integers(0, 5, n).astype(np.int32),
            rng.integers(0, 100_000, n).astype(np.int32),
            last_ts.astype(np.int64),
            np.where(transactional, rng.integers(0, 30, n), -1).astype(np.int32),
            txn_start.astype(np.int64),
            transactional,
            (leo - rng.integers(60, 10_000, n)).astype(np.int64),
        )
        pid_base += n


def _strings(values: list[str], index: np.ndarray) -> pa.Array:
    return pa.DictionaryArray.from_arrays(pa.array(index, pa.int32()), pa.array(values)).cast(pa.string())


def background_producer_table(cluster: Cluster, chunk: Chunk, capture_for: dict[int, int]) -> pa.Table:
    """Every replica's copy of the chunk's background producers (identical on all replicas)."""
    parts = []
    cfg = cluster.cfg
    for r in range(cluster.rf):
        broker = ((chunk.g + r) % cfg.brokers + 1).astype(np.int32)
        n = len(chunk.g)
        parts.append(
            pa.table(
                {
                    "broker_id": broker,
                    "topic": _strings(cluster.topic_names, (chunk.g // cfg.partitions_per_topic).astype(np.int32)),
                    "partition": (chunk.g % cfg.partitions_per_topic).astype(np.int32),
                    "is_leader": np.full(n, r == 0),
                    "producer_id": chunk.pid,
                    "producer_epoch": chunk.epoch,
                    "last_sequence": chunk.last_seq,
                    "last_timestamp_ms": chunk.last_ts,
                    "coordinator_epoch": chunk.coord_epoch,
                    "current_txn_start_offset": chunk.txn_start,
                    "snapshot_offset": pa.nulls(n, pa.int64()),
                    "capture_time_ms": np.array([capture_for[int(b)] for b in range(cfg.brokers + 1)])[broker],
                    "source": pa.array(["describe-producers"] * 1).take(pa.array(np.zeros(n, dtype=np.int32))),
                },
                schema=PRODUCER_SCHEMA,
            )
        )
    return pa.concat_tables(parts)


def background_transactions(cluster: Cluster, chunk: Chunk) -> list[txlog.TxnMetadata]:
    """Coordinator state of the chunk's transactional background producers."""
    out = []
    cfg = cluster.cfg
    for i in np.flatnonzero(chunk.transactional):
        g = int(chunk.g[i])
        is_open = chunk.txn_start[i] >= 0
        state = "Ongoing" if is_open else "CompleteCommit"
        parts = ((cluster.topic(g), cluster.index(g)),) if is_open else ()
        ts = int(chunk.last_ts[i])
        out.append(
            txlog.TxnMetadata(
                f"tx-{int(chunk.pid[i])}",
                int(chunk.pid[i]),
                int(chunk.epoch[i]),
                cfg.max_transaction_timeout_ms,
                state,
                parts,
                ts,
                ts - 2_000 if is_open else -1,
            )
        )
    return out


def coordinator_of(cluster: Cluster, tid: str) -> int:
    return cluster.leader(partition_for(tid, cluster.cfg.txn_state_partitions))


def _txn_row(cluster: Cluster, meta: txlog.TxnMetadata, dead: bool, capture: int) -> Row:
    row = txlog.to_row(meta, coordinator_of(cluster, meta.transactional_id), capture, "describe-transactions")
    if dead:
        # DescribeTransactions answered TRANSACTIONAL_ID_NOT_FOUND: only ListTransactions' pid is known.
        row.update(state="Dead", timeout_ms=None, start_time_ms=None, last_update_ms=None, partitions=None)
    return row


# --- ground truth --------------------------------------------------------------------------------


def ground_truth(cluster: Cluster, kind: str = "dump") -> dict[str, Any]:
    """Expected sweep results for one input kind.

    An expired id (tombstoned) reads as transactional-id-not-found in a live dump (listed, then
    not describable) but as no-transactional-id from logs, where the tombstone removes the id.
    """
    cfg = cluster.cfg
    now = cfg.capture_time_ms
    timeout = cfg.max_transaction_timeout_ms
    expected = []
    for inj in cluster.injected:
        if inj.case in ("hanging", "late", "diverge-leader"):
            reason = inj.reason
            if inj.tombstoned and kind in ("logdir", "text"):
                reason = "no-transactional-id"
            expected.append(
                {
                    "topic": cluster.topic(inj.g),
                    "partition": cluster.index(inj.g),
                    "producer_id": inj.producer_id,
                    "start_offset": inj.start_offset,
                    "verdict": "late" if reason == "late" else "hanging",
                    "reason": reason,
                    "leader_broker_id": cluster.leader(inj.g),
                }
            )
    late_partitions: dict[str, int] = {str(b): 0 for b in range(1, cfg.brokers + 1)}
    for g, injs in cluster.by_partition.items():
        on_leader = [i for i in injs if injected_entry(cluster, i, cluster.leader(g)) is not None]
        open_on_leader = [i for i in on_leader if cluster.leader(g) in i.open_on and i.case != "closed-after-snapshot"]
        if open_on_leader:
            oldest = min(open_on_leader, key=lambda i: i.start_offset)
            if oldest.last_timestamp_ms > 0 and now - oldest.last_timestamp_ms > timeout + LATE_TRANSACTION_BUFFER_MS:
                late_partitions[str(cluster.leader(g))] += 1
    divergence = [
        {
            "topic": cluster.topic(i.g),
            "partition": cluster.index(i.g),
            "producer_id": i.producer_id,
            "kind": "open-on-follower-not-leader" if i.case == "diverge-follower" else "open-on-leader-not-follower",
        }
        for i in cluster.injected
        if i.case in ("diverge-follower", "diverge-leader")
    ]
    return {
        "as_of_ms": now,
        "max_transaction_timeout_ms": timeout,
        "config": asdict(cfg),
        "expected": sorted(expected, key=lambda r: (r["topic"], r["partition"], r["producer_id"])),
        "plan": expected_plan(cluster, kind),
        "late_partitions_by_broker": late_partitions,
        "divergence": sorted(divergence, key=lambda r: (r["topic"], r["partition"], r["producer_id"])),
        "producer_rows": int(cluster.counts.sum()) * cluster.rf + _injected_row_count(cluster),
    }


def expected_plan(cluster: Cluster, kind: str = "dump") -> list[dict[str, Any]]:
    """The abort plan's entries a correct sweep writes (the hanging transactions, never the late-but-live
    ones), each as the injection made it: the open batch's offsets, epochs and timestamp as the replicas hold
    it, the id the coordinator maps to (none when no id maps to the producer, or the id's tombstone removed it
    from the logs), the partition's leader and the replicas that show the transaction open, and no command: the
    generated inputs do not record how to reach their cluster, and a command without one is refused as printed
    (a sweep given -b, or a real `kafka-txn dump`, prints the abort by its start offset with it)."""
    entries = []
    for inj in cluster.injected:
        if inj.case not in ("hanging", "diverge-leader"):
            continue
        forgotten = inj.tombstoned and kind in ("logdir", "text")
        entries.append({
            "topic": cluster.topic(inj.g),
            "partition": cluster.index(inj.g),
            "start_offset": inj.start_offset,
            "producer_id": inj.producer_id,
            "producer_epoch": inj.producer_epoch,
            "coordinator_epoch": inj.coordinator_epoch,
            "reason": "no-transactional-id" if forgotten else inj.reason,
            "last_timestamp_ms": inj.last_timestamp_ms,
            "transactional_id": None if forgotten else inj.transactional_id,
            "leader_broker_id": cluster.leader(inj.g),
            "replica_broker_ids": sorted(inj.open_on),
            "commands": [],
        })
    return sorted(entries, key=lambda e: (e["topic"], e["partition"], e["producer_id"]))


def _injected_row_count(cluster: Cluster) -> int:
    return sum(1 for i in cluster.injected for b in cluster.replicas(i.g) if injected_entry(cluster, i, b) is not None)


def write_ground_truth(cluster: Cluster, out: Path, kind: str) -> Path:
    path = out / "ground-truth.json"
    path.write_text(json.dumps(ground_truth(cluster, kind), indent=2) + "\n", encoding="utf-8")
    return path


# --- writers -------------------------------------------------------------------------------------


def write_dump(cfg: GeneratorConfig, out_dir: str | os.PathLike[str], fmt: str = "parquet") -> Path:
    """A dump dir as `kafka-txn dump` writes it, chunk by chunk."""
    cluster = Cluster(cfg)
    out = Path(out_dir)
    # Brokers answer a few seconds apart; "now" is the latest of them.
    capture_for = {b: cfg.capture_time_ms - (cfg.brokers - b) * 1_000 for b in range(cfg.brokers + 1)}
    writer = DumpWriter(out, fmt, capture_time_ms=cfg.capture_time_ms)
    injected_rows = []
    for inj in cluster.injected:
        for broker in cluster.replicas(inj.g):
            entry = injected_entry(cluster, inj, broker)
            if entry is not None:
                injected_rows.append(_producer_row(cluster, inj.g, broker, entry, capture_for[broker]))
    writer.add(PRODUCERS, injected_rows)
    txn_rows = [
        _txn_row(cluster, i.coordinator, i.tombstoned, cfg.capture_time_ms)
        for i in cluster.injected
        if i.coordinator is not None
    ]
    writer.add(TRANSACTIONS, txn_rows)
    for chunk in iter_chunks(cluster):
        writer.add_table(PRODUCERS, background_producer_table(cluster, chunk, capture_for))
        metas = background_transactions(cluster, chunk)
        if metas:
            writer.add_table(TRANSACTIONS, _txn_table(cluster, metas, cfg.capture_time_ms))
    writer.close()
    write_ground_truth(cluster, out, "dump")
    return out


def _txn_table(cluster: Cluster, metas: list[txlog.TxnMetadata], capture: int) -> pa.Table:
    rows = [_txn_row(cluster, m, False, capture) for m in metas]
    return pa.Table.from_pylist(rows, schema=TRANSACTION_SCHEMA)


def _producer_row(
    cluster: Cluster,
    g: int,
    broker: int,
    e: snap.SnapshotEntry,
    capture: int,
    source: str = "describe-producers",
    is_leader: bool | None = True,
    snapshot_offset: int | None = None,
) -> Row:
    return {
        "broker_id": broker,
        "topic": cluster.topic(g),
        "partition": cluster.index(g),
        "is_leader": (broker == cluster.leader(g)) if is_leader else None,
        "producer_id": e.producer_id,
        "producer_epoch": e.producer_epoch,
        "last_sequence": e.last_sequence,
        "last_timestamp_ms": e.timestamp,
        "coordinator_epoch": e.coordinator_epoch,
        "current_txn_start_offset": e.current_txn_first_offset,
        "snapshot_offset": snapshot_offset,
        "capture_time_ms": capture,
        "source": source,
    }


def _chunk_entries(chunk: Chunk) -> dict[int, list[snap.SnapshotEntry]]:
    by_g: dict[int, list[snap.SnapshotEntry]] = {}
    for i in range(len(chunk.g)):
        by_g.setdefault(int(chunk.g[i]), []).append(
            snap.SnapshotEntry(
                int(chunk.pid[i]),
                int(chunk.epoch[i]),
                int(chunk.last_seq[i]),
                int(chunk.last_offset[i]),
                0,
                int(chunk.last_ts[i]),
                int(chunk.coord_epoch[i]),
                int(chunk.txn_start[i]),
            )
        )
    return by_g


def replica_entries(
    cluster: Cluster, g: int, broker: int, background: list[snap.SnapshotEntry], final: bool = True
) -> list[snap.SnapshotEntry]:
    entries = list(background)
    for inj in cluster.by_partition.get(g, []):
        entry = injected_entry(cluster, inj, broker, final)
        if entry is not None:
            entries.append(entry)
    return entries


def _touch(path: Path, ms: int) -> None:
    os.utime(path, ns=(ms * 1_000_000, ms * 1_000_000))


def write_logdirs(cfg: GeneratorConfig, out_dir: str | os.PathLike[str]) -> Path:
    """Broker log dirs: out/node-<id>/<topic>-<p>/ with snapshots, segments and __transaction_state."""
    cluster = Cluster(cfg)
    out = Path(out_dir)
    for broker in range(1, cfg.brokers + 1):
        node = out / f"node-{broker}"
        node.mkdir(parents=True, exist_ok=True)
        if broker % 2 == 1:  # the others are identified by their node-<id> path only
            (node / "meta.properties").write_text(f"version=1\nnode.id={broker}\ncluster.id=synthetic\n")
    for chunk in iter_chunks(cluster):
        entries = _chunk_entries(chunk)
        for g in range(chunk.g0, chunk.g1):
            for broker in cluster.replicas(g):
                _write_partition_dir(cluster, out / f"node-{broker}", g, broker, entries.get(g, []))
    _write_transaction_logs(cluster, out, text_style=None)
    for path in out.rglob("*"):
        if path.is_file():
            _touch(path, cfg.capture_time_ms)
    write_ground_truth(cluster, out, "logdir")
    return out


def _write_snapshot(path: Path, entries: list[snap.SnapshotEntry]) -> None:
    # Any name, unlike snap.write_snapshot: the noise below includes a `.deleted` snapshot.
    path.write_bytes(snap.encode_snapshot(entries))


def _write_partition_dir(
    cluster: Cluster, node: Path, g: int, broker: int, background: list[snap.SnapshotEntry]
) -> None:
    pdir = node / f"{cluster.topic(g)}-{cluster.index(g)}"
    pdir.mkdir(parents=True, exist_ok=True)
    start = int(cluster.snapshot_offset[g])
    stale = replica_entries(cluster, g, broker, background, final=False)
    _write_snapshot(pdir / snap.snapshot_file_name(start), stale)
    if g % 4 == 0:
        # Noise the reader must ignore: an older snapshot claiming an open transaction, a newer
        # snapshot being deleted, and a partition dir Kafka is deleting.
        bogus = [snap.SnapshotEntry(9_999_999, 0, 0, 10, 0, 1, -1, 5)]
        _write_snapshot(pdir / snap.snapshot_file_name(start - 1_000), bogus)
        _write_snapshot(pdir / (snap.snapshot_file_name(start + 5_000) + ".deleted"), bogus)
        gone = node / f"{cluster.topic(g)}-{cluster.index(g)}.a1b2c3d4e5f60718293a4b5c6d7e8f90-delete"
        gone.mkdir(exist_ok=True)
        _write_snapshot(gone / snap.snapshot_file_name(start), bogus)
    segment = bytearray()
    offset = start
    for inj in cluster.markers(g):
        final = injected_entry(cluster, inj, broker)
        assert final is not None
        segment += build_control_batch(
            inj.producer_id, inj.producer_epoch, True, final.coordinator_epoch, final.timestamp, base_offset=offset
        )
        offset += 1
    if broker == cluster.leader(g):
        segment += build_batch([(None, b"plain")], timestamp_ms=cluster.cfg.capture_time_ms - 1_000, base_offset=offset)
    (pdir / f"{start:020d}.log").write_bytes(bytes(segment))


def _txn_log_records(cluster: Cluster) -> dict[int, list[tuple[txlog.TxnLogRecord, bool]]]:
    """Records per __transaction_state partition: (record, is the id's last record)."""
    metas: list[tuple[txlog.TxnMetadata, bool]] = [
        (m, False) for c in iter_chunks(cluster) for m in background_transactions(cluster, c)
    ]
    metas += [(i.coordinator, i.tombstoned) for i in cluster.injected if i.coordinator is not None]
    by_partition: dict[int, list[tuple[txlog.TxnLogRecord, bool]]] = {}
    for meta, tombstoned in metas:
        n = partition_for(meta.transactional_id, cluster.cfg.txn_state_partitions)
        recs = by_partition.setdefault(n, [])
        first = txlog.TxnMetadata(
            meta.transactional_id,
            meta.producer_id,
            max(meta.producer_epoch - 1, 0),
            meta.timeout_ms,
            "Empty",
            (),
            meta.last_update_ms - 60_000,
            -1,
        )
        history: list[tuple[txlog.TxnMetadata | None, int]] = [
            (first, meta.last_update_ms - 60_000),
            (meta, meta.last_update_ms),
        ]
        if tombstoned:
            history.append((None, meta.last_update_ms + 5_000))
        for k, (value, ts) in enumerate(history):
            tid = meta.transactional_id
            recs.append((txlog.TxnLogRecord(len(recs), ts, tid, value), k == len(history) - 1))
    return by_partition


def _write_transaction_logs(cluster: Cluster, out: Path, text_style: str | None) -> dict[int, str]:
    """Write __transaction_state-N segments on every replica (followers may lack the last records);
    with `text_style`, return dump-log text per broker instead of writing segments."""
    texts: dict[int, str] = {}
    for n, recs in sorted(_txn_log_records(cluster).items()):
        for r, broker in enumerate(cluster.replicas(n)):
            # A lagging follower misses some ids' latest record: the sweep must prefer the newest.
            kept = [rec for k, (rec, last) in enumerate(recs) if r == 0 or not (last and k % 3 == 0)]
            if text_style is None:
                pdir = out / f"node-{broker}" / f"{TXN_TOPIC}-{n}"
                pdir.mkdir(parents=True, exist_ok=True)
                txlog.write_segment(pdir / f"{0:020d}.log", kept, version=n % 2)
            else:
                style = render.TXN_LOG_STYLES[n % len(render.TXN_LOG_STYLES)] if text_style == "mixed" else text_style
                path = f"/var/lib/kafka/node-{broker}/{TXN_TOPIC}-{n}/{0:020d}.log"
                texts[broker] = texts.get(broker, "") + render.render_transaction_log(path, kept, style)
    return texts


def write_dump_log_text(cfg: GeneratorConfig, out_dir: str | os.PathLike[str]) -> Path:
    """kafka-dump-log.sh output: snapshot dumps per broker in every style, transaction-log dumps."""
    cluster = Cluster(cfg)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files: dict[tuple[int, str], list[str]] = {}
    for chunk in iter_chunks(cluster):
        entries = _chunk_entries(chunk)
        for g in range(chunk.g0, chunk.g1):
            style = render.SNAPSHOT_STYLES[g % len(render.SNAPSHOT_STYLES)]
            for broker in cluster.replicas(g):
                final = replica_entries(cluster, g, broker, entries.get(g, []))
                pdir = f"/var/lib/kafka/data/{cluster.topic(g)}-{cluster.index(g)}"
                text = files.setdefault((broker, style), [])
                if g % 4 == 0:  # an older snapshot dumped first: only the latest may count
                    old = [snap.SnapshotEntry(9_999_999, 0, 0, 10, 0, 1, -1, 5)]
                    text.append(render.render_snapshot(f"{pdir}/{snap.snapshot_file_name(100)}", old, style))
                end = cluster.log_end(g, broker)
                text.append(render.render_snapshot(f"{pdir}/{snap.snapshot_file_name(end)}", final, style))
    for (broker, style), parts in files.items():
        path = out / f"broker-{broker}-snapshots-{style}.txt"
        path.write_text("".join(parts), encoding="utf-8")
    texts = _write_transaction_logs(cluster, out, text_style="mixed")
    for broker, log_text in texts.items():
        (out / f"txnlog-node-{broker}.txt").write_text(log_text, encoding="utf-8")
    for path in out.glob("*.txt"):
        _touch(path, cfg.capture_time_ms)
    write_ground_truth(cluster, out, "text")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.support.generator",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("out", help="output directory")
    parser.add_argument("--kind", choices=["dump", "jsonl", "logdir", "text", "all"], default="all")
    parser.add_argument("--rows", type=int, default=0, help="approximate producer-state rows (all replicas)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--brokers", type=int, default=3)
    parser.add_argument("--topics", type=int, default=3)
    parser.add_argument("--partitions-per-topic", type=int, default=6)
    args = parser.parse_args(argv)
    base = {"seed": args.seed, "brokers": args.brokers, "topics": args.topics}
    cfg = (
        GeneratorConfig.for_rows(args.rows, **base)
        if args.rows
        else GeneratorConfig(partitions_per_topic=args.partitions_per_topic, **base)
    )
    out = Path(args.out)
    kinds = ["dump", "jsonl", "logdir", "text"] if args.kind == "all" else [args.kind]
    for kind in kinds:
        target = out / kind if len(kinds) > 1 else out
        if kind in ("dump", "jsonl"):
            write_dump(cfg, target, "parquet" if kind == "dump" else "jsonl")
        elif kind == "logdir":
            write_logdirs(cfg, target)
        else:
            write_dump_log_text(cfg, target)
        print(f"wrote {kind} to {target}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
