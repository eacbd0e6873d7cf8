"""ACLs created through CreateAcls survive restarts: one JSON file in the cluster's data dir.

Written whole and atomically (temp file, fsync, rename), so a crash leaves the old or the new set,
never a torn file. ACLs from the broker config are not stored here: the config stays their source.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

from kafka_txn_broker.security.acls import AclBinding, AclError

FILE_NAME = "acls.json"
VERSION = 1


class AclStore:
    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / FILE_NAME

    def load(self) -> list[AclBinding]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return []
        except (OSError, ValueError) as exc:
            # Starting with no ACLs could open everything up: refuse to start instead.
            raise AclError(f"cannot read the ACL file {self.path}: {exc}") from None
        try:
            return [AclBinding.from_dict(d) for d in data["acls"]]
        except (KeyError, TypeError) as exc:
            raise AclError(f"the ACL file {self.path} is not valid: missing {exc}") from None

    def save(self, bindings: Iterable[AclBinding]) -> None:
        rows = sorted((b.to_dict() for b in bindings), key=lambda d: tuple(d.values()))
        text = json.dumps({"version": VERSION, "acls": rows}, indent=1)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
