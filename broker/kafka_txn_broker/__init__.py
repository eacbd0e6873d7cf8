"""Embedded Kafka broker in pure Python: real wire protocol, Kafka-format logs, transactions.

Subsystems, named after Kafka's, in layers (each imports only the ones below it; pyproject.toml's
[tool.importlinter] checks it, docs/architecture.md explains it), highest first:

- testing: the pytest plugin, incident scenarios and the raw client they use
- embedded: EmbeddedCluster and the foreground broker, where server and apis are joined
- apis: one handler module per API family; the registry declares each API's versions once; a handler sees
  its own node (RequestContext.broker)
- server: the cluster, its nodes, the socket server, the controller's metadata store and decisions, the
  inter-broker channel (everything that crosses nodes), producer ids, metrics
- txn, group, share: the transaction coordinator, the group coordinator (classic, consumer and share
  groups), share-partitions and the share coordinator
- replica: ReplicaManager and Partition (in-process replication, ISR, high watermark)
- log: LocalLog, UnifiedLog, segments and their indexes, producer state, the log cleaner
- security: TLS, SASL, ACLs and the authorizer
- configs: the one config schema (broker, topic and group configs) and its dynamic changes
- metadata: partitions and topics, the read-only metadata views, the internal topics, topic-name rules
- formats, clock, histogram: Kafka's formats and error codes (pure; the tools use this package only),
  time (injectable) and a latency histogram

Threading: one asyncio event loop owns all broker state. Every node of a cluster, every connection,
coordinator and log runs on the cluster's loop (EmbeddedCluster runs it on a thread of its own and
hands calls to it with `call`/`call_soon`), so no broker class takes a lock and none may be touched
from another thread. The one exception is the process-wide file-descriptor cache (log/file_cache.py),
shared by clusters that each run their own loop in one process (tests), which locks its table.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kafka_txn_broker.embedded import EmbeddedCluster

__all__ = ["EmbeddedCluster"]


def __getattr__(name: str) -> Any:
    # Lazy so that `import kafka_txn_broker` (e.g. by the pytest plugin) costs nothing.
    if name == "EmbeddedCluster":
        from kafka_txn_broker.formats.messages import kafka_python

        kafka_python.load()  # kafka-python imported without its schema loader's deprecation warnings
        from kafka_txn_broker.embedded import EmbeddedCluster

        return EmbeddedCluster
    raise AttributeError(name)
