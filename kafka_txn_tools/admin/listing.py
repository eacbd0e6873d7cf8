"""list: ListTransactions on every broker, with client-side filtering where a broker is too old.

ListTransactions v0 has no duration filter and v1 no transactional-id pattern. Such brokers are asked
without the filter and their answers filtered here, with a warning: the pattern with Python's regex
engine as a full match (Java's `matches()` semantics), the duration from DescribeTransactions start
times against the tool's clock (the broker would use its own).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from kafka_txn_broker.formats.transactions import STATE_NAMES
from kafka_txn_tools.admin.api import ClusterApi
from kafka_txn_tools.connection.capabilities import require
from kafka_txn_tools.errors import UsageError
from kafka_txn_tools.models import ScanError, TransactionListing

ListClient = ClusterApi


@dataclass(frozen=True)
class ListFilters:
    states: tuple[str, ...] = ()
    producer_ids: tuple[int, ...] = ()
    duration_ms: int | None = None
    pattern: str | None = None
    broker_ids: tuple[int, ...] = ()


def normalize_states(states: Iterable[str]) -> tuple[str, ...]:
    """Accept any case (`ongoing`) and answer with Kafka's spelling (`Ongoing`)."""
    by_lower = {s.lower(): s for s in STATE_NAMES}
    out = []
    for s in states:
        key = s.replace("-", "").replace("_", "").lower()
        if key not in by_lower:
            raise UsageError(f"unknown transaction state {s!r}", f"use one of {', '.join(STATE_NAMES)}")
        out.append(by_lower[key])
    return tuple(out)


@dataclass
class Listed:
    listings: list[TransactionListing] = field(default_factory=list)
    errors: list[ScanError] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def list_transactions(client: ListClient, filters: ListFilters, now_ms: Callable[[], int]) -> Listed:
    require(client, "list", "ListTransactions")
    known = client.metadata([]).broker_ids()
    brokers = list(filters.broker_ids) or known
    unknown = sorted(set(brokers) - set(known))
    if unknown:
        raise UsageError(f"broker {unknown[0]} is not in the cluster", f"brokers are {', '.join(map(str, known))}")
    if filters.pattern is not None:
        _check_regex(filters.pattern)
    result = client.list_transactions(brokers, filters.states, filters.producer_ids, filters.duration_ms,
                                      filters.pattern)
    listed = Listed(errors=list(result.errors))
    for listing in result.listings:
        dropped = result.unfiltered.get(listing.coordinator_id, set())
        pattern = filters.pattern if "pattern" in dropped else None
        if pattern is not None and not re.fullmatch(pattern, listing.transactional_id):
            continue
        listed.listings.append(listing)
    for broker, dropped in sorted(result.unfiltered.items()):
        version = "v2 (transactional-id pattern)" if "pattern" in dropped else "v1 (duration filter)"
        listed.warnings.append(f"broker {broker} does not support ListTransactions {version}: "
                               f"filtered client-side ({', '.join(sorted(dropped))})")
    if filters.duration_ms is not None and any("duration" in d for d in result.unfiltered.values()):
        _filter_duration_client_side(client, listed, result.unfiltered, filters.duration_ms, now_ms())
    listed.listings.sort(key=lambda t: (t.coordinator_id, t.transactional_id))
    return listed


def _check_regex(pattern: str) -> None:
    try:
        re.compile(pattern)
    except re.error as exc:
        raise UsageError(f"--transactional-id-pattern {pattern!r} is not a valid regular expression ({exc})") from None


def _filter_duration_client_side(
    client: ListClient, listed: Listed, unfiltered: dict[int, set[str]], duration_ms: int, now: int,
) -> None:
    """Keep listings from filter-less brokers whose transaction has run longer than `duration_ms`."""
    todo = [t for t in listed.listings if "duration" in unfiltered.get(t.coordinator_id, set())]
    described = client.describe_transactions({t.transactional_id for t in todo})
    listed.errors.extend(described.errors)
    drop = set()
    for t in todo:
        d = described.descriptions.get(t.transactional_id)
        # The broker-side rule: only transactions with a start time, running strictly longer.
        if d is None or d.start_time_ms < 0 or now - d.start_time_ms <= duration_ms:
            drop.add((t.coordinator_id, t.transactional_id))
    listed.listings = [t for t in listed.listings if (t.coordinator_id, t.transactional_id) not in drop]
