"""ApiVersions: advertise every registered API with its version range, plus finalized features."""

from __future__ import annotations

from typing import Any

from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse

from kafka_txn_broker.apis.context import RequestContext
from kafka_txn_broker.apis.registry import APIS, api

R = ApiVersionsResponse
SHARE_VERSION = 1


def build_response(version: int, error_code: int = 0, transaction_version: int = 2) -> Any:
    keys = [R.ApiVersion(api_key=s.key, min_version=s.min_version, max_version=s.max_version)
            for s in sorted(APIS.values(), key=lambda s: s.key)]
    kwargs: dict[str, Any] = {"error_code": error_code, "api_keys": keys, "throttle_time_ms": 0}
    if version >= 3:
        # Clients (KIP-890) read transaction.version here to choose between TV1 and TV2.
        # share.version 1: share groups (KIP-932) are enabled, as on Kafka 4.1+.
        kwargs["supported_features"] = [
            R.SupportedFeatureKey(name="share.version", min_version=0, max_version=SHARE_VERSION),
            R.SupportedFeatureKey(name="transaction.version", min_version=0, max_version=2)]
        kwargs["finalized_features_epoch"] = 1
        kwargs["finalized_features"] = [
            R.FinalizedFeatureKey(name="share.version", max_version_level=SHARE_VERSION,
                                  min_version_level=SHARE_VERSION),
            R.FinalizedFeatureKey(name="transaction.version", max_version_level=transaction_version,
                                  min_version_level=transaction_version)]
    return R[version](**kwargs)


@api(ApiVersionsRequest, ApiVersionsResponse, 0, 4, pre_auth=True)
async def handle(ctx: RequestContext, request: Any) -> Any:
    return build_response(ctx.api_version, 0, ctx.node.config["transaction.version"])
