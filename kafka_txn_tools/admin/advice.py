"""Advice: the complete command lines that resolve a finding, each accepted exactly as printed.

Every finding (a partition row, a coordinator row, a share hold; find-hanging, describe,
describe-share-group and the sweep alike) carries `commands`: the ordered command lines a person runs
to resolve it, with the connection options the scan itself used (`Invocation`: `--profile`,
`--bootstrap-server`, `--command-config`; never a secret: a profile names its secrets, a properties file
holds them). A write among them asks for confirmation on a terminal, or takes `--yes`.

The promise is that the tool would accept each line as printed: the builders here add `--force` exactly
where the command's own checks would otherwise refuse (the rules that decide are the commands' own:
`fence.needs_force` for force-terminate, the coordinator's live verdict for abort), and a finding that no
command of this tool can resolve gets no command at all; its `action` then says what a person must do. A
live transaction (late, or a prepared 2PC one) gets no write either: its command is the watch that waits
for its owner to end it.

Pure: strings from plain data. Quoting is POSIX shell quoting (`shlex.join`), so a transactional id with
spaces or quotes survives a copy and paste.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterable
from dataclasses import dataclass

from kafka_txn_tools.models import TopicPartition

PROGRAM = "kafka-txn"


@dataclass(frozen=True)
class Invocation:
    """How the printed commands reach the cluster the finding came from."""

    bootstrap_server: str | None = None
    profile: str | None = None
    command_config: str | None = None

    @classmethod
    def of(cls, bootstrap_server: str | None, profile: str | None, command_config: os.PathLike[str] | str | None,
           resolved_bootstrap: str | None = None) -> Invocation:
        """From a command's connection options. `resolved_bootstrap`: the servers the connection settled on;
        repeated explicitly when neither --bootstrap-server nor a profile named them (they came from the
        environment, or from the properties file), so the printed commands do not depend on that environment."""
        servers = bootstrap_server
        if servers is None and profile is None:
            servers = resolved_bootstrap
        config = os.path.abspath(os.fspath(command_config)) if command_config is not None else None
        return cls(servers, profile, config)

    def options(self) -> list[str]:
        out: list[str] = []
        if self.profile:
            out += ["--profile", self.profile]
        if self.bootstrap_server:
            out += ["--bootstrap-server", self.bootstrap_server]
        if self.command_config:
            out += ["--command-config", self.command_config]
        return out

    def line(self, command: str, *args: str) -> str:
        """One complete command line: `kafka-txn COMMAND ARGS... CONNECTION-OPTIONS`."""
        return shlex.join([PROGRAM, command, *args, *self.options()])


def abort(inv: Invocation, tp: TopicPartition, start_offset: int, force: bool = False) -> str:
    """`kafka-txn abort` of the open transaction starting at `start_offset`; `force` where the coordinator
    still holds it as live (abort refuses that without --force)."""
    args = ["--topic", tp.topic, "--partition", str(tp.partition), "--start-offset", str(start_offset)]
    return inv.line("abort", *args, *(["--force"] if force else []))


def commit(inv: Invocation, tp: TopicPartition, start_offset: int) -> str:
    """`kafka-txn commit` of the open transaction starting at `start_offset`: the COMMIT marker its coordinator
    decided on and never delivered (admin/decisions.py); the command checks that decision again itself."""
    return inv.line("commit", "--topic", tp.topic, "--partition", str(tp.partition), "--start-offset",
                    str(start_offset))


def force_terminate(inv: Invocation, transactional_id: str, force: bool) -> str:
    """`kafka-txn force-terminate`; `force` exactly when fence.needs_force says its check would refuse."""
    return inv.line("force-terminate", "--transactional-id", transactional_id, *(["--force"] if force else []))


def move_coordinator(inv: Invocation, transactional_id: str) -> str:
    return inv.line("move-coordinator", "--transactional-id", transactional_id)


def find_hanging(inv: Invocation, tp: TopicPartition) -> str:
    """find-hanging scoped to one partition (a look, not a write)."""
    return inv.line("find-hanging", "--topic", tp.topic, "--partition", str(tp.partition))


def watch_until_ended(inv: Invocation, tp: TopicPartition, max_timeout_ms: int | None = None) -> str:
    """find-hanging on one partition, scanning again until no row is left there, the live ones included
    (`--count-held`): how to wait for a transaction its coordinator or its manager still owns. A look, not a
    write; it exits 0 once the partition is clear. `max_timeout_ms`: the scan's own threshold when it was not
    the default, so that the watch sees the row the scan saw (in exact milliseconds: no rounding)."""
    threshold = [] if max_timeout_ms is None else ["--max-transaction-timeout", f"{max_timeout_ms}ms"]
    return inv.line("find-hanging", "--topic", tp.topic, "--partition", str(tp.partition), *threshold, "--watch",
                    "--count-held")


def unique(commands: Iterable[str]) -> tuple[str, ...]:
    """The commands in order, each once (several rows of one transaction may suggest the same one)."""
    return tuple(dict.fromkeys(commands))


def is_command_line(line: str) -> bool:
    """A line of table output that holds one printed command (kept whole at any width)."""
    return line.lstrip().startswith(PROGRAM + " ")
