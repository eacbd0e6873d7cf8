"""Parse `kafka-dump-log.sh` text output: producer snapshots and `__transaction_state` segments.

Snapshot dumps (one line per producer, after `Dumping <dir>/<offset>.snapshot`):

- 2.x:      `producerId: P producerEpoch: E coordinatorEpoch: C currentTxnFirstOffset: Some(116) [batch part]`
- 3.1-3.4:  as 2.x plus `lastTimestamp: T`
- 3.5+:     `currentTxnFirstOffset: OptionalLong[116]` / `OptionalLong.empty`

with the batch part `firstSequence: S0 lastSequence: S lastOffset: O offsetDelta: D timestamp: T`
present only when the producer has batch metadata (older versions leave a trailing space).

`__transaction_state` dumps with `--transaction-log-decoder` (record lines start with `|`):

- up to 3.9: `key: transaction_metadata::transactionalId=ID payload: producerId:P,producerEpoch:E,
  state=Ongoing,partitions=[t-0,u-3],txnLastUpdateTimestamp=MS,txnTimeoutMs=MS` (`<DELETE>` = tombstone)
- 4.0+: `key: {"type":"0","data":{"transactionalId":"ID"}} payload: {"version":"1","data":{...}}`
  where transactionStatus is a number (newer builds: the state name).

Broker, topic and partition come from the `Dumping` path (`.../node-<id>/<topic>-<n>/<file>`); the
broker may instead be named by the text file (`broker-<id>...txt`) or passed in.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Any

from kafka_txn_broker.formats.partitioning import TXN_TOPIC
from kafka_txn_broker.formats.transactions import STATE_NAMES
from kafka_txn_tools.dumps import transaction_log as txlog
from kafka_txn_tools.dumps.logdir import parse_partition_dir
from kafka_txn_tools.dumps.schema import Row

_DUMPING = re.compile(r"^Dumping (.+?)\s*$")
_SNAPSHOT_LINE = re.compile(
    r"^producerId: (?P<pid>-?\d+) producerEpoch: (?P<epoch>-?\d+) coordinatorEpoch: (?P<coord>-?\d+) "
    r"currentTxnFirstOffset: (?P<txn>\S+)"
    r"(?: lastTimestamp: (?P<last_ts>-?\d+))?"
    r"(?: firstSequence: (?P<first_seq>-?\d+) lastSequence: (?P<last_seq>-?\d+)"
    r" lastOffset: (?P<last_offset>-?\d+)"
    r" offsetDelta: (?P<delta>-?\d+) timestamp: (?P<batch_ts>-?\d+))?\s*$"
)
_TXN_FIRST = re.compile(r"^(?:OptionalLong\[(-?\d+)\]|Some\((-?\d+)\)|(-?\d+)|OptionalLong\.empty|None)$")
_RECORD_LINE = re.compile(
    r"^\|?\s*offset: (?P<offset>\d+) (?:CreateTime|LogAppendTime|NoTimestampType): (?P<ts>-?\d+) "
    r".*? key: (?P<key>.*?) payload: (?P<payload>.*?)\s*$"
)
_OLD_KEY = re.compile(r"^transaction_metadata::transactionalId=(?P<tid>.*)$")
_OLD_PAYLOAD = re.compile(
    r"^producerId:(?P<pid>-?\d+),producerEpoch:(?P<epoch>-?\d+),state=(?P<state>\w+),"
    r"partitions=\[(?P<parts>.*)\],txnLastUpdateTimestamp=(?P<update>-?\d+),txnTimeoutMs=(?P<timeout>-?\d+)$"
)
_BROKER_IN_NAME = re.compile(r"(?:node|broker)-(\d+)")
_NODE_COMPONENT = re.compile(r"^(?:node|broker)-(\d+)$")


class DumpLogTextError(ValueError):
    """The text is not `kafka-dump-log.sh` output this parser understands."""


@dataclass
class _Section:
    path: PurePath
    broker_id: int
    topic: str
    partition: int
    kind: str  # "snapshot" | "txnlog" | "other"
    snapshot_offset: int | None = None
    records: list[txlog.TxnLogRecord] = field(default_factory=list)


def _txn_first_offset(text: str, where: str) -> int:
    match = _TXN_FIRST.match(text)
    if match is None:
        raise DumpLogTextError(f"{where}: cannot read currentTxnFirstOffset {text!r}")
    value = next((g for g in match.groups() if g is not None), None)
    return -1 if value is None or int(value) < 0 else int(value)


def parse_snapshot_line(line: str, where: str = "line") -> dict[str, int] | None:
    """The producer fields of one snapshot-dump line, or None when the line is not an entry."""
    match = _SNAPSHOT_LINE.match(line.rstrip("\n"))
    if match is None:
        return None
    g = match.groupdict()
    batch_ts = int(g["batch_ts"]) if g["batch_ts"] is not None else -1
    # 2.x prints no lastTimestamp: the last batch's timestamp is the same value there.
    last_ts = int(g["last_ts"]) if g["last_ts"] is not None else batch_ts
    return {
        "producer_id": int(g["pid"]),
        "producer_epoch": int(g["epoch"]),
        "coordinator_epoch": int(g["coord"]),
        "current_txn_start_offset": _txn_first_offset(g["txn"], where),
        "last_timestamp_ms": last_ts,
        "last_sequence": int(g["last_seq"]) if g["last_seq"] is not None else -1,
    }


def _status(value: Any, where: str) -> str:
    if isinstance(value, str) and value in STATE_NAMES:
        return value
    try:
        return STATE_NAMES[int(value)]
    except (ValueError, IndexError, TypeError) as exc:
        raise DumpLogTextError(f"{where}: unknown transactionStatus {value!r}") from exc


def _json_record(key: str, payload: str, where: str) -> tuple[str, txlog.TxnMetadata | None]:
    try:
        tid = str(json.loads(key)["data"]["transactionalId"])
        if payload.strip() in ("<DELETE>", "null"):
            return tid, None
        data = json.loads(payload)["data"]
    except (ValueError, KeyError, TypeError) as exc:
        raise DumpLogTextError(f"{where}: cannot read the 4.0+ JSON transaction record: {exc}") from exc
    partitions = tuple(
        (str(tp["topic"]), int(p)) for tp in data.get("transactionPartitions") or [] for p in tp.get("partitionIds", [])
    )
    start = data.get("transactionStartTimestampMs")
    return tid, txlog.TxnMetadata(
        tid,
        int(data["producerId"]),
        int(data["producerEpoch"]),
        int(data["transactionTimeoutMs"]),
        _status(data["transactionStatus"], where),
        partitions,
        int(data["transactionLastUpdateTimestampMs"]),
        None if start is None else int(start),
        # Tagged fields (value v1+), written when not their default: what decisions need (admin/decisions.py).
        int(data.get("previousProducerId", -1)),
        int(data.get("nextProducerId", -1)),
        int(data.get("clientTransactionVersion", 0)),
    )


def _old_record(key: str, payload: str, where: str) -> tuple[str, txlog.TxnMetadata | None]:
    key_match = _OLD_KEY.match(key)
    if key_match is None:
        raise DumpLogTextError(f"{where}: key {key!r} is not transaction_metadata::transactionalId=...")
    tid = key_match.group("tid")
    if payload == "<DELETE>":
        return tid, None
    m = _OLD_PAYLOAD.match(payload)
    if m is None:
        raise DumpLogTextError(f"{where}: cannot read the transaction payload {payload!r}")
    parts = []
    for item in filter(None, (p.strip() for p in m.group("parts").split(","))):
        topic, _, index = item.rpartition("-")
        parts.append((topic, int(index)))
    state = _status(m.group("state"), where)
    return tid, txlog.TxnMetadata(
        tid,
        int(m.group("pid")),
        int(m.group("epoch")),
        int(m.group("timeout")),
        state,
        tuple(parts),
        int(m.group("update")),
        None,
    )


def parse_record_line(line: str, where: str = "line") -> txlog.TxnLogRecord | None:
    """One `| offset: ...` record of a `--transaction-log-decoder` dump; None for other lines."""
    match = _RECORD_LINE.match(line.rstrip("\n"))
    if match is None:
        return None
    key, payload = match.group("key"), match.group("payload")
    decode = _json_record if key.lstrip().startswith("{") else _old_record
    tid, meta = decode(key, payload, where)
    return txlog.TxnLogRecord(int(match.group("offset")), int(match.group("ts")), tid, meta)


def _broker_for(dump_path: PurePath, text_file: Path, override: int | None) -> int | None:
    if override is not None:
        return override
    for part in reversed(dump_path.parts):
        match = _NODE_COMPONENT.match(part)
        if match:
            return int(match.group(1))
    match = _BROKER_IN_NAME.search(text_file.name)
    if match:
        return int(match.group(1))
    return None


def _open_section(dump_path: str, text_file: Path, broker_override: int | None, number: int) -> _Section:
    path = PurePath(dump_path)
    parsed = parse_partition_dir(path.parent.name)
    if parsed is None:
        return _Section(path, -1, "", -1, "other")
    broker = _broker_for(path, text_file, broker_override)
    if broker is None:
        raise DumpLogTextError(
            f"{text_file}:{number}: cannot tell which broker dumped {dump_path}: name the text file "
            "broker-<id>-....txt, keep node-<id> in the dumped path, or pass the broker id"
        )
    topic, partition = parsed
    if path.name.endswith(".snapshot"):
        offset = int(path.name.split(".")[0]) if path.name.split(".")[0].isdigit() else None
        return _Section(path, broker, topic, partition, "snapshot", snapshot_offset=offset)
    if path.name.endswith(".log") and topic == TXN_TOPIC:
        return _Section(path, broker, topic, partition, "txnlog")
    return _Section(path, broker, topic, partition, "other")


def _sections(
    lines: Iterable[str], text_file: Path, broker: int | None
) -> Iterator[tuple[_Section, list[dict[str, int]]]]:
    section: _Section | None = None
    entries: list[dict[str, int]] = []
    for number, line in enumerate(lines, 1):
        header = _DUMPING.match(line)
        if header:
            if section is not None:
                yield section, entries
            section, entries = _open_section(header.group(1), text_file, broker, number), []
            continue
        if section is None or section.kind == "other":
            continue
        where = f"{text_file}:{number}"
        if section.kind == "snapshot":
            entry = parse_snapshot_line(line, where)
            if entry is not None:
                entries.append(entry)
        else:
            record = parse_record_line(line, where)
            if record is not None:
                section.records.append(record)
    if section is not None:
        yield section, entries


def parse_dump_log_text(
    path: str | os.PathLike[str], broker_id: int | None = None, capture_time_ms: int | None = None,
    decisions: list[Row] | None = None,
) -> tuple[list[Row], list[Row]]:
    """(producer rows, coordinator rows) of one dump-log text file; capture time = file mtime if not given.
    Every PrepareCommit / PrepareAbort record of `--transaction-log-decoder` output is appended to `decisions`
    as a `decisions` row (dumps/schema.py), when given."""
    text_file = Path(path)
    captured = capture_time_ms if capture_time_ms is not None else text_file.stat().st_mtime_ns // 1_000_000
    # Only the latest snapshot per replica counts, as when reading the files themselves.
    snapshots: dict[tuple[int, str, int], tuple[_Section, list[dict[str, int]]]] = {}
    # Transaction records of the same coordinator partition may span several dumped segments.
    txn_records: dict[tuple[int, int], list[txlog.TxnLogRecord]] = {}
    seen_any = False
    with open(text_file, encoding="utf-8", errors="replace") as src:
        for section, entries in _sections(src, text_file, broker_id):
            seen_any = True
            if section.kind == "snapshot":
                key = (section.broker_id, section.topic, section.partition)
                held = snapshots.get(key)
                if held is None or (section.snapshot_offset or -1) >= (held[0].snapshot_offset or -1):
                    snapshots[key] = (section, entries)
            elif section.kind == "txnlog":
                txn_records.setdefault((section.broker_id, section.partition), []).extend(section.records)
    if not seen_any:
        raise DumpLogTextError(f"{text_file}: no 'Dumping <file>' line: is this kafka-dump-log.sh output?")
    producers = [
        _producer_row(section, e, captured) for _, (section, entries) in sorted(snapshots.items()) for e in entries
    ]
    if decisions is not None:
        decisions += [txlog.decision_row(rec, txn_partition, broker) for (broker, txn_partition), records
                      in sorted(txn_records.items()) for rec in records if txlog.is_prepare(rec)]
    coordinators = [
        txlog.to_row(meta, broker, captured, "dump-log-text")
        for (broker, _), records in sorted(txn_records.items())
        for _, meta in sorted(txlog.latest_states(sorted(records, key=lambda r: r.offset)).items())
    ]
    return producers, coordinators


def _producer_row(section: _Section, entry: dict[str, int], captured: int) -> Row:
    return {
        "broker_id": section.broker_id,
        "topic": section.topic,
        "partition": section.partition,
        "is_leader": None,
        **entry,
        "snapshot_offset": section.snapshot_offset,
        "capture_time_ms": captured,
        "source": "dump-log-text",
    }


def looks_like_dump_log_text(path: str | os.PathLike[str]) -> bool:
    """True when the file starts (after blank lines) with a `Dumping ` line."""
    try:
        with open(path, encoding="utf-8", errors="replace") as src:
            for line in src:
                if line.strip():
                    return line.startswith("Dumping ")
    except OSError:
        return False
    return False
