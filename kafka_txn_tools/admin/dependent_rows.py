"""Rows held by the same transaction, in the order their commands must run.

One transaction can show up as several rows of a scan: the records of a share group it holds TX_PENDING
(kind "share", whose command ends the transaction) and its open staging on the group's
`__share_group_state` partition (kind "partition"); a coordinator row and the partitions it holds. Only
one of them is the cause a command can end; the others clear when it does. Printed apart, in kind order,
a person running the commands top to bottom could start with a row that only waits (a `--watch`) for what
a later row's command does, and wait forever.

So the rows of one transaction (one producer id) are printed together, the root first: a row whose
commands write (end the transaction, abort a partition, move a coordinator...) comes before a row that
only watches, and among those a row `--exit-code` counts (hanging, stuck, a share hold) before one of a
live transaction (a late row). A row whose commands are all already printed by an earlier row of its
transaction, or that only watches while another row of it writes, is dependent: `cleared_by` names that earlier row (by
`row_name`, the words its own block starts with), its action says so, and it repeats no write (running
the same fence twice would fence the producer's next attempt too). A dependent's watch stays: run after
the root's command, it exits once the partition is clear. Transactions keep the order of their first row.

Pure: plain rows in, plain rows out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from kafka_txn_tools.admin.advice import PROGRAM
from kafka_txn_tools.admin.share_pending import ShareHold
from kafka_txn_tools.models import HangingTransaction, StuckTransaction

Finding = HangingTransaction | StuckTransaction | ShareHold


def row_name(row: Finding) -> str:
    """How a row is named: the words its block under the table starts with."""
    if isinstance(row, HangingTransaction):
        return f"{row.partition} producer {row.producer.producer_id}"
    if isinstance(row, StuckTransaction):
        return f"{row.transactional_id!r} ({row.state})"
    return f"{row.topic}-{row.partition} producer {row.producer_id} (share group {row.group!r})"


def _producer_id(row: Finding) -> int:
    return row.producer.producer_id if isinstance(row, HangingTransaction) else row.producer_id


def is_watch(command: str) -> bool:
    """A command that only looks, scanning again until its partition is clear (a `find-hanging --watch`)."""
    words = command.split()
    return words[1:2] == ["find-hanging"] and "--watch" in words and words[:1] == [PROGRAM]


def _writes(row: Finding) -> bool:
    return any(not is_watch(c) for c in row.commands)


def _groups(rows: Sequence[Finding]) -> list[list[Finding]]:
    """Each transaction's rows (by producer id), writing rows first; transactions in order of their first row."""
    groups: dict[int, list[Finding]] = {}
    for row in rows:
        groups.setdefault(_producer_id(row), []).append(row)
    return [sorted(members, key=_rank) for members in groups.values()]  # a stable sort: the scan's order otherwise


def _rank(row: Finding) -> int:
    """Roots first: a row that writes and that --exit-code counts (hanging, stuck, a share hold), then one that
    writes for a live transaction (a late staging of share acknowledgements), then one that only watches."""
    counted = row.reason.is_hanging if isinstance(row, HangingTransaction) else True
    return (0 if counted else 1) if _writes(row) else 2


def grouped(rows: Sequence[Finding]) -> list[Finding]:
    """`rows` in the printed order, unchanged (rows `ordered` already linked)."""
    return [row for members in _groups(rows) for row in members]


def ordered(rows: Sequence[Finding]) -> list[Finding]:
    """`rows` (in the scan's order) with each transaction's rows together, root first, dependents marked."""
    return [row for members in _groups(rows) for row in _linked(members)]


def _linked(members: list[Finding]) -> list[Finding]:
    """One transaction's rows, roots first: mark the dependents."""
    if len(members) < 2 or not _writes(members[0]):
        return members
    root = members[0]
    printed: set[str] = set(root.commands)
    out: list[Finding] = [root]
    for row in members[1:]:
        new = [c for c in row.commands if c not in printed and not is_watch(c)]
        if new:  # a write of its own: another root of the same transaction (an abort on each partition...)
            printed.update(row.commands)
            out.append(row)
            continue
        out.append(depends_on(row, root))
    return out


def depends_on(row: Finding, root: Finding) -> Finding:
    """`row`, cleared by `root`'s commands: said, and no write repeated (its watch, if any, stays)."""
    watches = tuple(c for c in row.commands if is_watch(c))
    name = row_name(root)
    then = ("; the command below only confirms it: it exits once the partition is clear" if watches else
            "; nothing more to run for it")
    action = (f"cleared by {name}: that row's command, printed above it, ends the same transaction (producer "
              f"{_producer_id(row)}), and this clears with it{then}")
    return replace(row, action=action, commands=watches, cleared_by=name)
