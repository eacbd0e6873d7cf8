"""A share-group member and a transactional acknowledger, request by request over the wire.

No public client sends TxnShareAcknowledge (KIP-1289), so the tests and the share scenarios drive the
share-group side with the project's message classes on a RawKafkaClient: a member joins
(ShareGroupHeartbeat), acquires records (ShareFetch) and acknowledges them (ShareAcknowledge), and a
transactional producer stages acknowledgements in its transaction (TxnShareAcknowledge). Blocking, one
caller at a time, like the RawKafkaClient it uses.
"""

from __future__ import annotations

import uuid
from typing import Any

from kafka_txn_broker.formats.messages import (
    TXN_SHARE_ACKNOWLEDGE_KEY,
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
    ElectLeadersRequest,
    ElectLeadersResponse,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    IncrementalAlterConfigsRequest,
    MetadataRequest,
    ShareAcknowledgeRequest,
    ShareAcknowledgeResponse,
    ShareFetchRequest,
    ShareFetchResponse,
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
    TxnShareAcknowledgeRequest,
    TxnShareAcknowledgeResponse,
)
from kafka_txn_broker.testing.raw_client import ProducerIdAndEpoch, RawClientError, RawKafkaClient

ACCEPT, RELEASE, REJECT = 1, 2, 3  # AcknowledgeType
GROUP_RESOURCE, SET = 32, 0
_V_METADATA = 12  # the first version with topic ids in both directions


class ShareMember:
    """One share-group member: joins `group` subscribed to `topic`, fetches and acknowledges one partition."""

    def __init__(self, client: RawKafkaClient, group: str, member_id: str, topic: str, topic_id: uuid.UUID,
                 partition: int, leader: int) -> None:
        self.client, self.group, self.member_id = client, group, member_id
        self.topic, self.topic_id, self.partition, self.leader = topic, topic_id, partition, leader
        self.epoch = self._join()

    def _join(self) -> int:
        found = self.client.send(FindCoordinatorRequest[3](key=self.group, key_type=0), 3, None,
                                 FindCoordinatorResponse)
        if found.error_code:
            raise RawClientError(f"FindCoordinator for share group {self.group} failed with {found.error_code}")
        r = self.client.send(ShareGroupHeartbeatRequest[1](group_id=self.group, member_id=self.member_id,
                                                            member_epoch=0, subscribed_topic_names=[self.topic]),
                             1, found.node_id, ShareGroupHeartbeatResponse)
        if r.error_code:
            raise RawClientError(f"ShareGroupHeartbeat for {self.group} failed with {r.error_code}")
        return int(r.member_epoch)

    def fetch(self) -> list[tuple[int, int]]:
        """One ShareFetch of the partition: the acquired (first, last) offset ranges."""
        T = ShareFetchRequest.FetchTopic
        req = ShareFetchRequest[1](group_id=self.group, member_id=self.member_id, share_session_epoch=0,
                                   max_wait_ms=500, min_bytes=1, max_bytes=1 << 20, max_records=100, batch_size=100,
                                   topics=[T(topic_id=self.topic_id, partitions=[T.FetchPartition(
                                       partition_index=self.partition, acknowledgement_batches=[])])],
                                   forgotten_topics_data=[])
        r = self.client.send(req, 1, self.leader, ShareFetchResponse)
        return [(a.first_offset, a.last_offset) for t in r.responses for p in t.partitions for a in p.acquired_records]

    def acknowledge(self, first: int, last: int, ack_type: int) -> int:
        """A plain (non-transactional) ShareAcknowledge of first..last: the partition's error code."""
        T = ShareAcknowledgeRequest.AcknowledgeTopic
        P = T.AcknowledgePartition
        req = ShareAcknowledgeRequest[1](group_id=self.group, member_id=self.member_id, share_session_epoch=1,
                                         topics=[T(topic_id=self.topic_id, partitions=[P(
                                             partition_index=self.partition, acknowledgement_batches=[
                                                 P.AcknowledgementBatch(first_offset=first, last_offset=last,
                                                                        acknowledge_types=[ack_type])])])])
        r = self.client.send(req, 1, self.leader, ShareAcknowledgeResponse)
        return int(r.responses[0].partitions[0].error_code)


def txn_share_acknowledge(client: RawKafkaClient, node: int, transactional_id: str, pe: ProducerIdAndEpoch,
                          group: str, member_id: str, member_epoch: int,
                          topics: list[tuple[uuid.UUID, int, list[tuple[int, int, list[int]]]]]) -> Any:
    """TxnShareAcknowledge v0 to `node`: per (topic id, partition), the (first, last, types) batches to stage."""
    R = TxnShareAcknowledgeRequest
    T = R.TxnShareAcknowledgeTopic
    P = T.TxnShareAcknowledgePartition
    req = R[0](transactional_id=transactional_id, group_id=group, producer_id=pe.producer_id,
               producer_epoch=pe.epoch, member_id=member_id, member_epoch=member_epoch, topics=[
                   T(topic_id=tid, partitions=[P(partition_index=partition, acknowledgement_batches=[
                       P.TxnShareAcknowledgeBatch(first_offset=a, last_offset=b, acknowledge_types=types)
                       for a, b, types in spans])]) for tid, partition, spans in topics])
    return client.send(req, 0, node, TxnShareAcknowledgeResponse)


def partition_codes(response: Any) -> list[int]:
    return [p.error_code for t in response.responses for p in t.partitions]


def advertises_txn_share_acknowledge(client: RawKafkaClient) -> bool:
    """Whether the broker lists TxnShareAcknowledge in ApiVersions (share.transactional.acknowledgement.enable)."""
    from kafka_txn_broker.formats.messages import ApiVersionsRequest, ApiVersionsResponse

    r = client.send(ApiVersionsRequest[3](client_software_name="kafka-txn", client_software_version="1"), 3, None,
                    ApiVersionsResponse)
    return any(k.api_key == TXN_SHARE_ACKNOWLEDGE_KEY for k in r.api_keys)


def topic_layout(client: RawKafkaClient, topic: str) -> tuple[uuid.UUID, dict[int, list[int]]]:
    """The topic's id and each partition's replicas (Metadata v12)."""
    req = MetadataRequest[_V_METADATA](topics=[MetadataRequest.MetadataRequestTopic(topic_id=None, name=topic)],
                                       allow_auto_topic_creation=False, include_topic_authorized_operations=False)
    resp = client.send(req, _V_METADATA)
    client.brokers = {b.node_id: (b.host, b.port) for b in resp.brokers}
    t = next(t for t in resp.topics if t.name == topic)
    if t.error_code:
        raise RawClientError(f"metadata for {topic} failed with error {t.error_code}")
    return uuid.UUID(str(t.topic_id)), {p.partition_index: list(p.replica_nodes) for p in t.partitions}


def set_group_configs(client: RawKafkaClient, group: str, configs: dict[str, str]) -> int:
    """IncrementalAlterConfigs SET on a GROUP resource (kafka-configs.sh --entity-type groups): the error code."""
    R = IncrementalAlterConfigsRequest.AlterConfigsResource
    resource = R(resource_type=GROUP_RESOURCE, resource_name=group, configs=[
        R.AlterableConfig(name=k, config_operation=SET, value=v) for k, v in configs.items()])
    resp = client.send(IncrementalAlterConfigsRequest[0](resources=[resource], validate_only=False), 0)
    return int(resp.responses[0].error_code)


def move_leader(client: RawKafkaClient, topic: str, partition: int, replicas: list[int]) -> int:
    """Make replicas[1] the partition's leader the way an operator does: reorder the replicas
    (AlterPartitionReassignments, same set) and run a PREFERRED election (ElectLeaders). The new leader."""
    order = [replicas[1], replicas[0], *replicas[2:]]
    T = AlterPartitionReassignmentsRequest.ReassignableTopic
    r = client.send(AlterPartitionReassignmentsRequest[0](timeout_ms=30000, topics=[T(name=topic, partitions=[
        T.ReassignablePartition(partition_index=partition, replicas=order)])]), 0, None,
        AlterPartitionReassignmentsResponse)
    if r.error_code or r.responses[0].partitions[0].error_code:
        raise RawClientError(f"reordering the replicas of {topic}-{partition} failed: {r}")
    E = ElectLeadersRequest
    r = client.send(E[1](election_type=0, topic_partitions=[E.TopicPartitions(topic=topic, partitions=[partition])],
                         timeout_ms=30000), 1, None, ElectLeadersResponse)
    if r.error_code:
        raise RawClientError(f"the preferred election of {topic}-{partition} failed with {r.error_code}")
    return order[0]
