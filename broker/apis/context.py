"""What a handler knows about the request it serves."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kafka_txn_broker.node import BrokerNode


@dataclass(slots=True)
class RequestContext:
    node: BrokerNode
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    peer: str
    principal: str = "User:ANONYMOUS"
