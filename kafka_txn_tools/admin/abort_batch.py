"""The abort flow for one transaction or a whole plan, shared by `kafka-txn abort` and `kafka-transactions abort`.

1. `prepare`: validate every target (admin/abort.py) and settle what cannot be written: already
   done, refused (a mismatch, or live / unreadable coordinator without --force), failed. Nothing is
   written here, so a plan is checked whole before the first marker.
2. The front end shows what will be written and gets a confirmation (prompts are theirs).
3. `write`: each remaining marker, re-checked just before it is written.

Results are plain data for rendering and for the audit log.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from kafka_txn_tools.admin.abort import AbortCheck, AbortClient, AbortOutcome, AbortTarget, execute, validate
from kafka_txn_tools.admin.errors import KafkaTxnError, MissingApi, NothingToDo, Refused
from kafka_txn_tools.dumps.plan import AbortPlan


class AbortResult(StrEnum):
    ABORTED = "aborted"
    ALREADY_DONE = "already-done"
    REFUSED = "refused"
    FAILED = "failed"
    DRY_RUN = "dry-run"
    CANCELLED = "cancelled"


@dataclass
class AbortItem:
    """One transaction to abort: its target, what validation found, and how it ended."""

    target: AbortTarget
    check: AbortCheck | None = None
    result: AbortResult | None = None  # None: validated, waiting to be written
    message: str = ""
    error: KafkaTxnError | None = None  # why it failed validation, for single-abort exit codes
    outcome: AbortOutcome | None = None

    @property
    def pending(self) -> bool:
        return self.result is None and self.check is not None

    def settle(self, result: AbortResult, message: str) -> None:
        self.result, self.message = result, message


def targets_of(plan: AbortPlan) -> list[AbortTarget]:
    from kafka_txn_tools.models import TopicPartition

    return [AbortTarget(TopicPartition(e.topic, e.partition), e.start_offset, e.producer_id, e.producer_epoch,
                        e.coordinator_epoch) for e in plan.entries]


def prepare(client: AbortClient, targets: Sequence[AbortTarget], force: bool) -> list[AbortItem]:
    """Validate each target; settle the ones that cannot be written. Writes nothing.

    A cluster without WriteTxnMarkers raises MissingApi for the whole batch.
    """
    items = [AbortItem(t) for t in targets]
    for item in items:
        try:
            item.check = validate(client, item.target)
        except MissingApi:
            raise
        except NothingToDo as exc:
            item.settle(AbortResult.ALREADY_DONE, exc.message)
            item.error = exc
            continue
        except Refused as exc:
            item.settle(AbortResult.REFUSED, str(exc))
            item.error = exc
            continue
        except KafkaTxnError as exc:
            item.settle(AbortResult.FAILED, str(exc))
            item.error = exc
            continue
        if item.check.refusal and not force:
            item.settle(AbortResult.REFUSED, f"{item.check.refusal}; pass --force to abort anyway")
    return items


def pending(items: Sequence[AbortItem]) -> list[AbortItem]:
    return [i for i in items if i.pending]


def unverifiable(items: Sequence[AbortItem]) -> list[str]:
    """What could not be checked for the markers still to write (each needs a person or --force)."""
    return [f"{i.target.partition}: {why}" for i in pending(items) for why in i.check.unverifiable]  # type: ignore[union-attr]


def forced_live(items: Sequence[AbortItem]) -> list[AbortItem]:
    """Markers about to be written although the coordinator holds their transaction as live (--force)."""
    return [i for i in pending(items) if i.check is not None and i.check.refusal]


def settle_all(items: Sequence[AbortItem], result: AbortResult, message: str) -> None:
    for item in pending(items):
        item.settle(result, message)


def write(client: AbortClient, items: Sequence[AbortItem], sleep: Callable[[float], None] = time.sleep,
          settle_s: float = 3.0, on_done: Callable[[AbortItem], None] | None = None) -> None:
    """Write each pending marker (re-checked first); every item ends with a result."""
    for item in pending(items):
        assert item.check is not None
        try:
            item.outcome = execute(client, item.check, sleep=sleep, settle_s=settle_s)
        except NothingToDo as exc:
            item.settle(AbortResult.ALREADY_DONE, exc.message)
        except KafkaTxnError as exc:
            item.settle(AbortResult.FAILED, str(exc))
            item.error = exc
        else:
            still = "; the transaction still shows as open" if item.outcome.still_open else ""
            item.settle(AbortResult.ABORTED, "marker written" + still)
        if on_done is not None:
            on_done(item)
