"""Group coordination (Kafka's group coordinator), one module per concern:

- coordinator: GroupCoordinator, the `__consumer_offsets` partitions this node leads, loaded into shards
- shard: GroupShard, one partition's groups, offsets and log (writes first, then memory; replay on load)
- classic_group: ClassicGroup, a group's members, generation, protocol and leader (no I/O)
- membership: JoinGroup, SyncGroup, Heartbeat, LeaveGroup and their timeouts (the state machine)
- offset_store: committed and pending transactional offsets of one partition
- offset_commit: OffsetCommit, TxnOffsetCommit, OffsetFetch rules
- deletion: DeleteGroups, OffsetDelete
- append_errors: what a member is told when a write to `__consumer_offsets` fails
- modern/: the machinery of the KIP-848 generation of groups (member epochs, target assignment,
  server-side assignors, session timers)
- share_group, share_membership: share groups (KIP-932) on top of modern/, beside the classic groups
"""
