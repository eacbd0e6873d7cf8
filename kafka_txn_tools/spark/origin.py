"""The cluster a sweep's printed commands reach, and whether they reach one at all.

A `kafka-txn dump` records how it reached its cluster (dumps/schema.py's Manifest.connection): the options its
commands repeat and, for the report, the resolved servers and the non-secret properties. Copied log dirs and
kafka-dump-log.sh text record no way in. The sweep's commands use, option by option:

- `--bootstrap-server` / `--profile` given to `sweep` (either one names the cluster: it replaces both
  recorded ones), else the dump's, else $KAFKA_BOOTSTRAP_SERVERS;
- `--command-config` given to `sweep`, else the dump's.

A command without a cluster would be refused as printed (`no cluster to connect to`): when none is known the
sweep prints no command at all, and says once, in prose, how to apply its plan.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafka_txn_tools.admin.advice import Invocation


@dataclass(frozen=True)
class Origin:
    """Where the swept state came from and how its commands reach that cluster (immutable)."""

    invocation: Invocation
    cluster_id: str | None = None
    recorded: dict[str, Any] | None = None  # the first dump's connection record, as written
    source: str = "none"  # options | dump | environment | none: where the cluster's name came from

    @property
    def reaches_cluster(self) -> bool:
        """Would a command with these options find a cluster with an empty environment (no profiles file)?"""
        inv = self.invocation
        return bool(inv.bootstrap_server or inv.profile or _servers_in(inv.command_config))

    def plan_connection(self) -> dict[str, Any] | None:
        """What the abort plan records: the options its commands carry (None: no cluster known)."""
        if not self.reaches_cluster:
            return None
        inv = self.invocation
        return {"bootstrap_server": inv.bootstrap_server, "profile": inv.profile,
                "command_config": inv.command_config}

    def to_json(self) -> dict[str, Any]:
        """summary.json's `cluster`: the id, the options used, where they came from, what the dump recorded."""
        recorded = self.recorded or {}
        return {"cluster_id": self.cluster_id, "options": self.invocation.options(), "from": self.source,
                "reaches_cluster": self.reaches_cluster,
                "bootstrap_servers": recorded.get("bootstrap_servers"),
                "properties": dict(recorded.get("properties") or {})}


def _servers_in(command_config: str | None) -> bool:
    """Does the properties file name bootstrap.servers (then --command-config alone reaches the cluster)?"""
    if not command_config:
        return False
    from kafka_txn_tools.connection.config import load_properties
    from kafka_txn_tools.errors import ConfigError

    try:
        return bool(load_properties(Path(command_config)).get("bootstrap.servers"))
    except (ConfigError, OSError):
        return False


def choose(given: Invocation | None, connections: Sequence[dict[str, Any] | None], cluster_id: str | None,
           env_bootstrap: str | None = None) -> Origin:
    """The commands' options: `given` (sweep's own) over the first recorded connection over the environment."""
    recorded = next((c for c in connections if c), None)
    given = given or Invocation()
    rec = recorded or {}
    if given.bootstrap_server or given.profile:
        servers, profile, source = given.bootstrap_server, given.profile, "options"
    elif rec.get("bootstrap_server") or rec.get("profile"):
        servers, profile, source = rec.get("bootstrap_server"), rec.get("profile"), "dump"
    elif env_bootstrap:
        servers, profile, source = env_bootstrap, None, "environment"
    else:
        servers, profile, source = None, None, "none"
    config = given.command_config or rec.get("command_config")
    if source == "none" and config:
        source = "options" if given.command_config else "dump"
    return Origin(Invocation(servers, profile, config), cluster_id, recorded, source)
