"""The API table: which request classes a node accepts, in which versions, and who handles them.

Handler modules call `api(...)` at import time; `server/socket_server.py` dispatches on the table and ApiVersions
advertises it, so a version range is declared exactly once.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kafka_txn_broker.apis.context import RequestContext

Handler = Callable[["RequestContext", Any], Awaitable[Any]]


@dataclass(frozen=True)
class ApiSpec:
    key: int
    request: Any
    response: Any
    min_version: int
    max_version: int
    handler: Handler
    # Requests allowed before SASL authentication completes.
    pre_auth: bool = False


APIS: dict[int, ApiSpec] = {}


def api(request: Any, response: Any, min_version: int, max_version: int, *,
        pre_auth: bool = False) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        max_v = min(max_version, request.max_version, response.max_version)
        APIS[request.API_KEY] = ApiSpec(request.API_KEY, request, response, min_version, max_v, fn, pre_auth)
        return fn

    return register


def load_all() -> dict[int, ApiSpec]:
    """Import every handler module once so its registrations run."""
    from kafka_txn_broker.apis import (  # noqa: F401
        acls,
        admin_txn,
        api_versions,
        cluster,
        configs,
        fetch,
        find_coordinator,
        groups,
        list_offsets,
        metadata,
        offset_for_leader_epoch,
        produce,
        producer_id,
        sasl,
        topics,
        txn,
    )

    return APIS
