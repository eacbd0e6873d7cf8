"""The abort flow for one transaction or a whole plan, shared by `kafka-txn abort` and `kafka-transactions abort`.

0. `check_origin` (plans): the plan must have been made on this cluster. A plan that records another
   cluster id is refused whole; one that records none (version 1, hand-written, or made from inputs
   without one) is applied with a warning, since each entry is still checked against live state.
1. `prepare`: validate every target (admin/abort.py) and settle what cannot be written: already
   done, refused (a mismatch, or live / unreadable coordinator without --force), failed. Nothing is
   written here, so a plan is checked whole before the first marker.
2. A plan is applied all or nothing: if any entry was refused or failed (`blocked`), the front end
   writes none of them (`hold_back`), unless told to skip the refused ones (--skip-refused). It
   shows what will be written, and what was refused, and gets a confirmation (prompts are theirs).
3. `write`: each remaining marker, re-checked just before it is written.

Results are plain data for rendering and for the audit log.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from kafka_txn_tools.admin.abort import AbortCheck, AbortClient, AbortOutcome, AbortTarget, execute, validate
from kafka_txn_tools.dumps.plan import AbortPlan
from kafka_txn_tools.errors import KafkaTxnError, MissingApi, NothingToDo, Refused


class AbortResult(StrEnum):
    ABORTED = "aborted"
    ALREADY_DONE = "already-done"
    REFUSED = "refused"
    FAILED = "failed"
    DRY_RUN = "dry-run"
    CANCELLED = "cancelled"
    NOT_WRITTEN = "not-written"  # valid, but held back: another entry of its plan was refused (all or nothing)


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


@dataclass
class Origin:
    """What checking a plan's origin against the live cluster found."""

    refusal: str | None = None  # made on another cluster: nothing may be written
    warning: str | None = None  # the plan does not say where it was made
    unverifiable: str | None = None  # the live cluster does not say which it is: a person or --force decides


def check_origin(plan: AbortPlan, live_cluster_id: str | None) -> Origin:
    """Was `plan` made on the cluster with `live_cluster_id` (Metadata's cluster id)?"""
    if plan.cluster_id is None:
        why = ("it was written before plans recorded it, or by hand" if plan.version < 2 else
               "its inputs did not record it (kafka-dump-log.sh text, or a dump without a cluster id)")
        return Origin(warning=(f"the plan does not say which cluster it was made on ({why}): it is applied to this "
                               "cluster with every entry still checked against its live state; regenerate it "
                               "(`kafka-txn find-hanging --all -o plan`) to have the cluster checked as well"))
    if live_cluster_id is None:
        return Origin(unverifiable=(f"the plan was made on cluster {plan.cluster_id}, and this cluster does not "
                                    "report its cluster id, so it cannot be checked that it is the same one"))
    if live_cluster_id != plan.cluster_id:
        return Origin(refusal=(f"the plan was made on cluster {plan.cluster_id}, and this is cluster "
                               f"{live_cluster_id}: a plan applies only to the cluster it was made on"))
    return Origin()


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


def blocked(items: Sequence[AbortItem]) -> list[AbortItem]:
    """The entries validation stopped (refused, or failed to validate): any one of them holds a whole
    plan back, since a plan is applied all or nothing."""
    return [i for i in items if i.result in (AbortResult.REFUSED, AbortResult.FAILED)]


def hold_back(items: Sequence[AbortItem]) -> None:
    """Settle the valid entries of a plan that has refused ones: none is written."""
    stopped, total = len(blocked(items)), len(items)
    settle_all(items, AbortResult.NOT_WRITTEN,
               f"valid, not written: {stopped} of the plan's {total} entries were refused, and a plan is written "
               "all or nothing")


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
