"""A share consumer's group identity, the snapshot TxnShareAcknowledge carries (KIP-1289's ShareGroupMetadata).

librdkafka's ShareConsumer (confluent_kafka 2.16) does not expose its member id or epoch, so the identity is
asked of the group's coordinator with ShareGroupDescribe (API 77): the member whose client id is the
consumer's `client.id`. Give each consumer of the group a unique `client.id`; two members with the same one
are refused here (the snapshot would belong to either). The epoch is the coordinator's at the time of the
call; a rebalance after it makes the staging fail with STALE_MEMBER_EPOCH, an abortable error, after which
the loop takes a new snapshot.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kafka_txn_tools.clients.errors import ShareAcknowledgementError

if TYPE_CHECKING:
    from kafka_txn_tools.clients.network import Network


@dataclass(frozen=True)
class ShareGroupMetadata:
    """group_id, member_id, member_epoch: immutable, as the KIP's class."""

    group_id: str
    member_id: str
    member_epoch: int


class ShareMemberNotFoundError(ShareAcknowledgementError):
    """No member (or more than one) of the share group has the client id asked for."""


def describe_member(network: Network, group_id: str, client_id: str) -> ShareGroupMetadata:
    """The member of share group `group_id` whose client id is `client_id`, as its coordinator knows it."""
    from kafka.errors import for_code

    from kafka_txn_broker.formats.messages import ShareGroupDescribeRequest

    code, node = network.group_coordinator(group_id)
    if code:
        raise ShareAcknowledgementError(f"no coordinator for share group {group_id!r}: {for_code(code).__name__}",
                                        for_code(code).message)
    r = network.send(ShareGroupDescribeRequest(group_ids=[group_id], include_authorized_operations=False), node)
    (group,) = r.groups
    if group.error_code:
        raise ShareAcknowledgementError(
            f"cannot describe share group {group_id!r}: {group.error_message or for_code(group.error_code).message}",
            for_code(group.error_code).message)
    return _pick(group_id, client_id, group.members)


def _pick(group_id: str, client_id: str, members: Any) -> ShareGroupMetadata:
    found = [m for m in members if m.client_id == client_id]
    if len(found) != 1:
        what = "no member" if not found else f"{len(found)} members"
        raise ShareMemberNotFoundError(
            f"share group {group_id!r} has {what} with client id {client_id!r}: give each share consumer a unique "
            "client.id, and take the snapshot after its first poll (when it has joined)")
    m = found[0]
    return ShareGroupMetadata(group_id, m.member_id, int(m.member_epoch))


def share_group_metadata(bootstrap_servers: str | list[str], group_id: str, client_id: str,
                         **configs: Any) -> ShareGroupMetadata:
    """The snapshot for the share consumer configured with `client.id` = `client_id` in `group_id`.
    `configs` are kafka-python connection settings (security_protocol, sasl_*, ssl_*...)."""
    from kafka_txn_tools.clients.network import Network

    network = Network(bootstrap_servers=bootstrap_servers, **configs)
    try:
        return describe_member(network, group_id, client_id)
    finally:
        network.close()
