"""Share records a transaction holds TX_PENDING (KIP-1289), read from the brokers' metrics.

No Kafka API lists the share records a transaction holds: KIP-1289 gives operators metrics
(TxnPendingRecordsCount and its companions). A broker that labels them per share-partition and
transaction (the embedded broker does: group, topic, partition, producer id and transactional id) tells
who holds what, and for how long. This module reads them from Prometheus text (the format of a broker's
or a JMX exporter's /metrics endpoint); `holds` and `past` are pure, `read_metrics` does the I/O.

A transaction that has held records TX_PENDING longer than the brokers' max transaction timeout is one
its coordinator should have ended: the group cannot get those records back until it ends
(`stalled_groups` names the group). `force-terminate` (or the producer) ends it: the abort gives the
records back to their member, and they are delivered again once its lock runs out. Staging is written in
the transaction to the group's `__share_group_state` partition, so `kafka-txn abort` can end it there too,
when its coordinator no longer knows it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

from kafka_txn_tools.admin import advice
from kafka_txn_tools.models import (
    ONGOING_STATES,
    SHARE_ACKS_PENDING,
    TWO_PHASE_COMMIT_TIMEOUT_MS,
    HangingTransaction,
    RowKind,
    ScanError,
    TransactionDescription,
)

SHARE_STATE_TOPIC = "__share_group_state"

PENDING_RECORDS = "kafka_server_sharepartition_txnpendingrecords"
PENDING_AGE = "kafka_server_sharepartition_txnpendingoldestagems"
_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)')
_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?')
_UNESCAPE = {"\\\\": "\\", '\\"': '"', "\\n": "\n"}


@dataclass(frozen=True, slots=True)
class ShareHold:
    """Records one transaction holds TX_PENDING on one share-partition, as one broker reports them; `action`
    and `commands` once `advise` has judged the transaction."""

    node: str
    group: str
    topic: str
    partition: int
    producer_id: int
    transactional_id: str | None
    records: int
    oldest_age_ms: int
    action: str = ""
    commands: tuple[str, ...] = ()
    cleared_by: str | None = None  # as HangingTransaction's

    def to_row(self) -> dict[str, Any]:
        return {"kind": RowKind.SHARE.value, "reason": SHARE_ACKS_PENDING, "node": self.node, "group": self.group,
                "topic": self.topic, "partition": self.partition, "producer_id": self.producer_id,
                "transactional_id": self.transactional_id, "records": self.records,
                "oldest_age_ms": self.oldest_age_ms, "stalled_groups": [self.group],
                "action": self.action or unjudged_action(self), "commands": list(self.commands),
                "cleared_by": self.cleared_by}


def unjudged_action(h: ShareHold) -> str:
    """What ends a hold whose transaction could not be described."""
    return (f"end the transaction: its producer commits or aborts it, or fencing its transactional id "
            f"(force-terminate) aborts it and gives the {h.records} records back to their member, delivered again "
            "once its lock runs out; if its coordinator lost it, abort its open transaction on the group's "
            "__share_group_state partition")


def advise(h: ShareHold, d: TransactionDescription | None, not_found: bool, now_ms: int,
           invocation: advice.Invocation, share_state_rows: Sequence[HangingTransaction] = ()) -> ShareHold:
    """The hold with what ends it, judged from its transaction's description `d` (None: not described;
    `not_found`: its coordinator does not know the id). Fencing through the coordinator ends it where the
    coordinator runs it (`--force` exactly when force-terminate would refuse without it); where the coordinator
    lost it, the open transaction on the group's `__share_group_state` partition is aborted instead (the
    partition rows of the same scan that belong to its producer give those commands)."""
    from kafka_txn_tools.admin.fence import needs_force

    back = (f"the abort gives the {h.records} records back to their member; they are delivered again once its "
            "lock runs out")
    txn = h.transactional_id
    if txn is None or (d is None and not not_found):
        return replace(h, action=unjudged_action(h))
    if d is not None and d.timeout_ms >= TWO_PHASE_COMMIT_TIMEOUT_MS:
        return replace(h, action=(f"held by its external transaction manager (KIP-939): that manager must commit "
                                  f"or abort {txn!r}; an abort gives the {h.records} records back"))
    if d is not None and d.state in ONGOING_STATES and d.producer_id == h.producer_id:
        force = needs_force(d, now_ms)
        why = (" (--force: it is still within its transaction timeout, so its coordinator would end it later by "
               "itself; fencing now fails its producer, which must restart)") if force else ""
        return replace(h, action=f"end the transaction: fence {txn!r} with the command below{why}; {back}",
                       commands=(advice.force_terminate(invocation, txn, force),))
    mine = [r for r in share_state_rows if r.partition.topic == SHARE_STATE_TOPIC
            and r.producer.producer_id == h.producer_id and r.reason.is_hanging and r.commands]  # aborts only
    if d is None:
        where = "its coordinator does not know it"
    elif d.producer_id != h.producer_id:
        where = f"{txn!r} now belongs to producer {d.producer_id}, so fencing it would not reach this transaction"
    else:
        where = f"its coordinator holds {txn!r} as {d.state}: it no longer runs this transaction"
    return replace(h, action=(f"{where}: abort its open transaction on the group's {SHARE_STATE_TOPIC} partition"
                              + (" with the command below" if mine else " (find-hanging --all lists it)")
                              + f"; {back}"),
                   commands=advice.unique(c for r in mine for c in r.commands))


def samples(text: str) -> Iterator[tuple[str, dict[str, str], float]]:
    """(name, labels, value) of each sample line of Prometheus text; comments and bad lines are skipped."""
    for line in text.splitlines():
        found = _SAMPLE.match(line.strip())
        if found is None or line.lstrip().startswith("#"):
            continue
        name, label_text, value = found.groups()
        try:
            number = float(value)
        except ValueError:
            continue
        yield name, _labels(label_text or ""), number


def _labels(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for m in _LABEL.finditer(text):
        out[m.group(1)] = re.sub(r'\\[\\"n]', lambda e: _UNESCAPE[e.group(0)], m.group(2))
    return out


def holds(text: str) -> list[ShareHold]:
    """Every (share-partition, transaction) the text reports with records held TX_PENDING."""
    records: dict[tuple[str, ...], int] = {}
    ages: dict[tuple[str, ...], int] = {}
    for name, labels, value in samples(text):
        if name not in (PENDING_RECORDS, PENDING_AGE):
            continue
        key = tuple(labels.get(k, "") for k in ("node", "group", "topic", "partition", "producer_id",
                                                "transactional_id"))
        (records if name == PENDING_RECORDS else ages)[key] = int(value)
    out = []
    for key, count in records.items():
        node, group, topic, partition, producer_id, txn_id = key
        if count > 0 and partition.isdigit() and producer_id.lstrip("-").isdigit():
            out.append(ShareHold(node, group, topic, int(partition), int(producer_id), txn_id or None, count,
                                 ages.get(key, 0)))
    return sorted(out, key=lambda h: (h.group, h.topic, h.partition, h.producer_id, h.node))


def past(found: Iterable[ShareHold], max_ms: int) -> list[ShareHold]:
    """The holds older than `max_ms` (strictly, as find-hanging's timeout rule)."""
    return [h for h in found if h.oldest_age_ms > max_ms]


def read_metrics(urls: Sequence[str], timeout_s: float) -> tuple[list[ShareHold], list[ScanError]]:
    """Every hold the endpoints report; an endpoint that cannot be read is an error (a partial answer)."""
    import urllib.error
    import urllib.request

    found: list[ShareHold] = []
    errors: list[ScanError] = []
    for url in urls:
        try:
            with urllib.request.urlopen(url, timeout=timeout_s) as response:  # noqa: S310 (the user's URL)
                text = response.read().decode("utf-8", "replace")
        except (OSError, ValueError, urllib.error.URLError) as exc:
            errors.append(ScanError("METRICS_UNREADABLE", f"metrics endpoint {url} could not be read: {exc}",
                                    api="metrics"))
            continue
        found += holds(text)
    return sorted(found, key=lambda h: (h.group, h.topic, h.partition, h.producer_id, h.node)), errors


def in_scope(found: Iterable[ShareHold], topic: str | None, partition: int | None) -> list[ShareHold]:
    """The holds on the scanned topic (and partition), as the rest of find-hanging's scope."""
    return [h for h in found if (topic is None or h.topic == topic) and (partition is None or h.partition == partition)]


def of_transaction(found: Iterable[ShareHold], producer_id: int, transactional_id: str) -> list[ShareHold]:
    """What one transaction holds: by producer id (a broker that cannot name the transactional id still
    reports the producer id), unless the broker names another transactional id."""
    return [h for h in found if h.producer_id == producer_id and h.transactional_id in (None, transactional_id)]


def hold_row(h: ShareHold) -> dict[str, Any]:
    """One hold as `describe` lists it under its transaction."""
    return {"group": h.group, "topic": h.topic, "partition": h.partition, "records": h.records,
            "oldest_age_ms": h.oldest_age_ms, "node": h.node}


def of_share_partition(found: Iterable[ShareHold], group: str, topic: str, partition: int) -> list[dict[str, Any]]:
    """Who holds records of one share-partition TX_PENDING, as `describe-share-group` lists them."""
    return [{"producer_id": h.producer_id, "transactional_id": h.transactional_id, "records": h.records,
             "oldest_age_ms": h.oldest_age_ms, "node": h.node}
            for h in found if (h.group, h.topic, h.partition) == (group, topic, partition)]
