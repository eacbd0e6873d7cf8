"""The requests the clients send beside kafka-python's producer, on a connection set of their own.

kafka-python's KafkaProducer drives its network loop from its Sender thread (no I/O thread of its own), so
the user's thread must not send on the producer's connections. A KafkaAdminClient built from the same
connection settings (bootstrap servers, TLS, SASL) runs its loop on a background thread and takes blocking
requests from any thread: that is the transport here. Its ApiVersions answers tell which APIs each broker
offers before anything is sent.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from kafka.admin import KafkaAdminClient

from kafka_txn_tools.connection.transport import Transport

METADATA_WITH_TOPIC_IDS = 10  # Metadata v10+ answers each topic's id (KIP-516); librdkafka asks v12


@dataclass(frozen=True)
class TopicLayout:
    topic_id: uuid.UUID
    leaders: dict[int, int]  # partition -> leader node id (-1: none right now)


def connection_settings(configs: dict[str, Any]) -> dict[str, Any]:
    """The settings of `configs` a KafkaAdminClient understands (the producer's own are dropped)."""
    return {k: v for k, v in configs.items() if k in KafkaAdminClient.DEFAULT_CONFIG and k != "kafka_client"}


class Network:
    """Blocking requests to chosen brokers; close() when done."""

    def __init__(self, **configs: Any) -> None:
        settings = connection_settings(configs)
        self._transport = Transport(KafkaAdminClient(**settings), settings.get("request_timeout_ms", 30_000))

    def close(self) -> None:
        self._transport.close()

    def send(self, request: Any, node_id: int | None, timeout_ms: int | None = None) -> Any:
        """The broker's response; kafka-python errors (transport, no common version) are raised as they are."""
        return self._transport.send(request, node_id, timeout_ms)

    def advertises(self, api_key: int) -> bool:
        """Whether the broker we bootstrapped from lists `api_key` in its ApiVersions answer."""
        known = self._transport.api_versions()
        return known is not None and api_key in known

    def broker_advertises(self, node_id: int, api_key: int) -> bool | None:
        """Whether broker `node_id` lists `api_key`; None before we have talked to it."""
        known = self._transport.api_versions(node_id)
        return None if known is None else api_key in known

    def topics(self, names: Iterable[str]) -> dict[str, TopicLayout | int]:
        """Each topic's id and partition leaders (or its error code), from one Metadata request (v10+)."""
        from kafka.protocol.metadata import MetadataRequest

        wanted = sorted(set(names))
        request = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(topic_id=None, name=t) for t in wanted],
                                  allow_auto_topic_creation=False, include_topic_authorized_operations=False,
                                  min_version=METADATA_WITH_TOPIC_IDS)
        response = self.send(request, None)
        self._transport.update_metadata(response)  # so connections to any new leader can be made
        out: dict[str, TopicLayout | int] = {}
        for t in response.topics:
            if t.error_code:
                out[t.name] = int(t.error_code)
            else:
                out[t.name] = TopicLayout(uuid.UUID(str(t.topic_id)),
                                          {p.partition_index: int(p.leader_id) for p in t.partitions})
        return out

    def group_coordinator(self, group_id: str) -> tuple[int, int]:
        """(error code, node id) of the group's coordinator (FindCoordinator, key type group)."""
        from kafka.protocol.metadata import FindCoordinatorRequest

        r = self.send(FindCoordinatorRequest(key_type=0, coordinator_keys=[group_id], key=group_id, min_version=1),
                      None)
        entry = r.coordinators[0] if getattr(r, "coordinators", None) else r
        return int(entry.error_code), int(entry.node_id)
