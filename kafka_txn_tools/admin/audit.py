"""The audit log: one JSON line for every abort and fence attempted, whatever became of it.

Location, first match:
1. `--audit-log FILE` (kafka-txn abort / force-terminate);
2. $KAFKA_TXN_AUDIT_LOG;
3. $XDG_STATE_HOME/kafka-txn/audit.log, by default ~/.local/state/kafka-txn/audit.log.

Each line: {"time": ISO-8601 UTC, "user": OS user, "principal": who the cluster authenticated (the SASL
username, the Kerberos principal or the OAuth token's subject; null without SASL or before connecting),
"cluster": profile or bootstrap servers, "command": ..., "target": {...}, "result": ..., "detail": ...}.
The file is created 0600 in a 0700 directory and only ever appended to (one write per line). A log that
cannot be written never hides or changes the result of the command: `append` returns the problem for the
caller to report.
"""

from __future__ import annotations

import datetime as dt
import getpass
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ENV_AUDIT_LOG = "KAFKA_TXN_AUDIT_LOG"


def default_path(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    if env.get(ENV_AUDIT_LOG):
        return Path(env[ENV_AUDIT_LOG]).expanduser()
    base = Path(env["XDG_STATE_HOME"]) if env.get("XDG_STATE_HOME") else Path.home() / ".local" / "state"
    return base / "kafka-txn" / "audit.log"


def os_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (containers): the uid is still a name of sorts
        return f"uid:{os.getuid()}" if hasattr(os, "getuid") else "unknown"


@dataclass(frozen=True)
class AuditRecord:
    cluster: str
    command: str
    target: Mapping[str, Any]
    result: str
    detail: str = ""

    def to_json(self, now: dt.datetime | None = None, user: str | None = None, principal: str | None = None) -> str:
        stamp = (now or dt.datetime.now(dt.UTC)).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        return json.dumps({"time": stamp, "user": user or os_user(), "principal": principal, "cluster": self.cluster,
                           "command": self.command, "target": dict(self.target), "result": self.result,
                           "detail": self.detail}, sort_keys=False)


class AuditLog:
    """Appends records to one file; `problem` holds the first failure to write (never raised). `principal` is
    set once the command has connected (AdminClient.principal)."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path if path is not None else default_path()
        self.problem: str | None = None
        self.principal: str | None = None

    def append(self, record: AuditRecord) -> bool:
        line = record.to_json(principal=self.principal) + "\n"
        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, line.encode("utf-8"))
            finally:
                os.close(fd)
        except OSError as exc:
            if self.problem is None:
                self.problem = f"could not write the audit log {self.path}: {exc.strerror or exc}"
            return False
        return True
