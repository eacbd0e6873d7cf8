"""Share groups (KIP-932) on the broker side: the share-partition state machine, share sessions, the
share-partition manager that serves ShareFetch / ShareAcknowledge, and the share coordinator that keeps
their durable state in `__share_group_state`.

- record_state: the record states and every allowed transition, in one table
- share_partition: SharePartition, the in-flight records of one (group, topic partition)
- share_session: ShareSession and ShareSessionCache (epochs, partitions of a member's session)
- share_partition_manager: SharePartitionManager (fetch, acknowledge, long polling, lock expiry)
- persister: routes share-partition state reads and writes to the share coordinator
- share_coordinator_shard / share_coordinator: `__share_group_state` partitions, replayed, written, pruned
  (cold share-partitions snapshotted again so they do not hold the pruning back)
- share_group_offsets: DescribeShareGroupOffsets / AlterShareGroupOffsets / DeleteShareGroupOffsets flows
- replica_state_pruner: DeleteRecords on this node's `__share_group_state` replicas for the coordinator's pruning

What crosses nodes (the share coordinator of another node, the share-partition leaders told of a group's
change, a partition's end on its leader) reaches them through the protocols above, which the server's
inter-broker channel implements.
"""
