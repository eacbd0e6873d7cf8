"""The API table: which request classes a node accepts, in which versions, and who handles them.

Handler modules call `api(...)` at import time; `request_handler.py` dispatches on the table and ApiVersions
advertises it, so a version range is declared exactly once.

`kafka.version.emulate=<release>` narrows the table to what that Apache Kafka release offers, so
clients and tools meet the API set of an older (or newer) broker: APIs the release lacks are not
advertised and not accepted, and each range is the intersection of ours with the release's. The
releases' ranges are public facts: the ApiVersions answers of real Apache Kafka brokers, as recorded
in kafka-python's `BROKER_API_VERSIONS` (formats/releases.py).
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kafka_txn_broker.formats.releases import release_ranges

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
    # Older versions the handler still serves, offered only when emulating a release that had them.
    emulated_min_version: int | None = None
    # A feature gate: the API is advertised and accepted only while it holds for the node's config.
    enabled_by: Callable[[Any], bool] | None = None


APIS: dict[int, ApiSpec] = {}


def api(request: Any, response: Any, min_version: int, max_version: int, *,
        pre_auth: bool = False, emulated_min_version: int | None = None,
        enabled_by: Callable[[Any], bool] | None = None) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        max_v = min(max_version, request.max_version, response.max_version)
        APIS[request.API_KEY] = ApiSpec(request.API_KEY, request, response, min_version, max_v, fn, pre_auth,
                                        emulated_min_version, enabled_by)
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
        consumer_group,
        delete_records,
        elect_leaders,
        fetch,
        find_coordinator,
        groups,
        list_offsets,
        log_dirs,
        metadata,
        offset_for_leader_epoch,
        produce,
        producer_id,
        reassignments,
        sasl,
        share_fetch,
        share_group,
        share_group_offsets,
        topics,
        txn,
        txn_share_acknowledge,
    )

    return APIS


def advertised(release: str = "") -> dict[int, tuple[int, int]]:
    """API key -> (min, max) this node advertises and accepts: everything registered, or with an
    emulated release, the intersection with that release's ranges (APIs it lacks are left out)."""
    return _advertised(release, len(APIS))


def advertised_by(config: Any) -> dict[int, tuple[int, int]]:
    """advertised() for a node's config: its emulated release, without the APIs whose feature gate is off."""
    ranges = advertised(config["kafka.version.emulate"])
    return {key: r for key, r in ranges.items() if _enabled(APIS[key], config)}


def advertised_range(config: Any, key: int) -> tuple[int, int] | None:
    """advertised_by(config)[key] without building the whole map: every request is checked against it."""
    spec = APIS.get(key)
    found = advertised(config["kafka.version.emulate"]).get(key)
    return found if found is not None and spec is not None and _enabled(spec, config) else None


def _enabled(spec: ApiSpec, config: Any) -> bool:
    return spec.enabled_by is None or spec.enabled_by(config)


@functools.cache
def _advertised(release: str, _registered: int) -> dict[int, tuple[int, int]]:
    if not release:
        return {key: (spec.min_version, spec.max_version) for key, spec in APIS.items()}
    ours = {key: (spec.min_version if spec.emulated_min_version is None else spec.emulated_min_version,
                  spec.max_version) for key, spec in APIS.items()}
    theirs = release_ranges(release)
    ranges = {key: (max(low, theirs[key][0]), min(high, theirs[key][1]))
              for key, (low, high) in ours.items() if key in theirs}
    return {key: r for key, r in ranges.items() if r[0] <= r[1]}
