"""What a handler knows about the request it serves, and the one-line authorization checks.

    if not ctx.authorize("READ", "TOPIC", name):
        ... TOPIC_AUTHORIZATION_FAILED ...

`ctx.broker` is the node the request arrived at, as its handlers may see it (server/broker_services.py):
its config, metadata view, replicas and coordinators, and the inter-broker channel for anything that lives
on another node. A handler never reaches another node's objects itself.

Without an authorizer (`authorizer.class.name` unset) every check is True at the cost of one
attribute test. The operation and resource names are Kafka's (mypy checks the spelling).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from kafka_txn_broker.formats.errors import (
    BrokerResponseError,
    ClusterAuthorizationFailedError,
    GroupAuthorizationFailedError,
    TopicAuthorizationFailedError,
    TransactionalIdAuthorizationFailedError,
)
from kafka_txn_broker.security.acls import Op, ResourceType

if TYPE_CHECKING:
    from kafka_txn_broker.security.auth import AuthSession
    from kafka_txn_broker.security.authorizer import AclAuthorizer
    from kafka_txn_broker.server.broker_services import BrokerServices

Operation = Literal["READ", "WRITE", "CREATE", "DELETE", "ALTER", "DESCRIBE", "CLUSTER_ACTION", "DESCRIBE_CONFIGS",
                    "ALTER_CONFIGS", "IDEMPOTENT_WRITE", "ALL"]
Resource = Literal["TOPIC", "GROUP", "TRANSACTIONAL_ID", "CLUSTER"]
CLUSTER_NAME = "kafka-cluster"
# The error a refused check becomes: TOPIC_AUTHORIZATION_FAILED (29), GROUP_... (30), CLUSTER_... (31),
# TRANSACTIONAL_ID_... (53).
DENIED: dict[str, type[BrokerResponseError]] = {
    "TOPIC": TopicAuthorizationFailedError, "GROUP": GroupAuthorizationFailedError,
    "CLUSTER": ClusterAuthorizationFailedError, "TRANSACTIONAL_ID": TransactionalIdAuthorizationFailedError,
}


@dataclass(slots=True)
class RequestContext:
    broker: BrokerServices
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    peer: str
    principal: str = "User:ANONYMOUS"
    authorizer: AclAuthorizer | None = None
    session: AuthSession | None = None

    @property
    def host(self) -> str:
        """The client's address, as ACL host entries name it."""
        return self.peer.rsplit(":", 1)[0]

    def authorize(self, operation: Operation, resource: Resource, name: str = CLUSTER_NAME) -> bool:
        if self.authorizer is None:
            return True
        return self.authorizer.authorize(self.principal, self.host, Op[operation], ResourceType[resource], name)

    def require(self, operation: Operation, resource: Resource, name: str = CLUSTER_NAME) -> None:
        """authorize(), raising the resource's *_AUTHORIZATION_FAILED error when refused."""
        if self.authorizer is not None and not self.authorize(operation, resource, name):
            raise denied(self.principal, operation, resource, name)

    def authorize_any(self, operation: Operation, resource: Resource) -> bool:
        """May the principal do `operation` on some resource of this type (Kafka's authorizeByResourceType)?"""
        if self.authorizer is None:
            return True
        return self.authorizer.authorize_any(self.principal, self.host, Op[operation], ResourceType[resource])

    def authorized(self, operation: Operation, resource: Resource, names: Iterable[str]) -> set[str]:
        """The names the principal may do `operation` on (each distinct name checked once)."""
        unique = set(names)
        if self.authorizer is None:
            return unique
        return {n for n in unique if self.authorize(operation, resource, n)}


def denied(principal: str, operation: Operation, resource: Resource, name: str = CLUSTER_NAME) -> BrokerResponseError:
    return DENIED[resource](f"{principal} is not authorized to {operation} {resource} {name!r}")
