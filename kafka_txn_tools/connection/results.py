"""What the admin client's cluster-wide reads answer beyond the models: the answers of every broker asked,
merged, with the errors of those that failed (one broker's failure never stops a scan)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from kafka_txn_tools.models import ScanError, TransactionDescription, TransactionListing

# Called with the number of partitions just read, as DescribeProducers answers come in.
Progress = Callable[[int], None]


@dataclass
class ListResult:
    """ListTransactions from every broker asked; `unfiltered` names brokers that could not apply a filter."""

    listings: list[TransactionListing] = field(default_factory=list)
    errors: list[ScanError] = field(default_factory=list)
    # broker id -> filters the broker could not apply ("duration", "pattern"); the caller filters.
    unfiltered: dict[int, set[str]] = field(default_factory=dict)


@dataclass
class DescribeResult:
    descriptions: dict[str, TransactionDescription] = field(default_factory=dict)
    not_found: set[str] = field(default_factory=set)
    errors: list[ScanError] = field(default_factory=list)
