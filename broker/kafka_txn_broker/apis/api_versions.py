"""ApiVersions: advertise every registered API with its version range, plus finalized features.

With `kafka.version.emulate` the ranges are those of the chosen Apache Kafka release (registry.py),
and transaction.version (KIP-890's feature, Kafka 4.0+) is advertised only from 4.0 on, so clients use
the transaction protocol that release had.
"""

from __future__ import annotations

from typing import Any

from kafka_txn_broker.apis.context import RequestContext
from kafka_txn_broker.apis.registry import advertised, advertised_by, api
from kafka_txn_broker.formats.messages import ApiVersionsRequest, ApiVersionsResponse

R = ApiVersionsResponse
EMULATE = "kafka.version.emulate"
SHARE_VERSION = 1
# KIP-1289 finalizes share.version 2 (transactional acknowledgements); it needs transaction.version 2.
TXN_SHARE_ACK_SHARE_VERSION = 2
TXN_SHARE_ACK_ENABLE = "share.transactional.acknowledgement.enable"


def share_version(config: Any) -> int:
    """The share.version level a node's config stands for: 2 when KIP-1289 is enabled (with TV2), else 1."""
    if config[TXN_SHARE_ACK_ENABLE] and config["transaction.version"] >= 2 and not config[EMULATE]:
        return TXN_SHARE_ACK_SHARE_VERSION
    return SHARE_VERSION


def _release_at_least(release: str, version: tuple[int, int]) -> bool:
    return not release or tuple(int(p) for p in release.split(".")) >= version


def _has_transaction_version(release: str) -> bool:
    return _release_at_least(release, (4, 0))


def build_response(version: int, error_code: int = 0, transaction_version: int = 2, release: str = "",
                   config: Any = None) -> Any:
    """The answer for a release (or, given a node's config, for that node: its feature gates applied)."""
    ranges = advertised_by(config) if config is not None else advertised(release)
    level = share_version(config) if config is not None else SHARE_VERSION
    keys = [R.ApiVersion(api_key=key, min_version=low, max_version=high) for key, (low, high) in sorted(ranges.items())]
    kwargs: dict[str, Any] = {"error_code": error_code, "api_keys": keys, "throttle_time_ms": 0}
    if version >= 3 and _has_transaction_version(release):
        # Clients (KIP-890) read transaction.version here to choose between TV1 and TV2.
        kwargs["supported_features"] = [R.SupportedFeatureKey(name="transaction.version", min_version=0,
                                                               max_version=2)]
        kwargs["finalized_features_epoch"] = 1
        kwargs["finalized_features"] = [R.FinalizedFeatureKey(name="transaction.version",
                                                              max_version_level=transaction_version,
                                                              min_version_level=transaction_version)]
        if _release_at_least(release, (4, 1)):
            # share.version 1: share groups (KIP-932) are enabled, as on Kafka 4.1+.
            kwargs["supported_features"].insert(0, R.SupportedFeatureKey(name="share.version", min_version=0,
                                                                         max_version=TXN_SHARE_ACK_SHARE_VERSION))
            kwargs["finalized_features"].insert(0, R.FinalizedFeatureKey(name="share.version",
                                                                         max_version_level=level,
                                                                         min_version_level=level))
    return R[version](**kwargs)


@api(ApiVersionsRequest, ApiVersionsResponse, 0, 4, pre_auth=True)
async def handle(ctx: RequestContext, request: Any) -> Any:
    return build_response(ctx.api_version, 0, ctx.broker.config["transaction.version"], ctx.broker.config[EMULATE],
                          ctx.broker.config)
