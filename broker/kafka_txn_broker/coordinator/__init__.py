"""One coordinator runtime for the transaction, group and share coordinators (Kafka's coordinator-common).

Each of them keeps its state in an internal topic (`__transaction_state`, `__consumer_offsets`,
`__share_group_state`) and owns the partitions of it this node leads. The runtime does for all three what
Kafka's CoordinatorRuntime, CoordinatorLoaderImpl and CoordinatorPartitionWriter do:

- coordinator_log: CoordinatorLog, this node's replicas of one coordinator topic (append, read); the real one
  over the replica manager, fakes in unit tests
- partition_writer: PartitionWriter, one partition's appends (acks=all) as a shard makes them
- loader: CoordinatorLoader, the asynchronous chunked replay of a partition, and the one replay loop
- runtime: CoordinatorRuntime, each partition's state (loading, active, failed), its loads and unloads on
  leader elections, and the answers a request gets while a partition is not active

Layer: above `replica`, below `txn`, `group` and `share`.
"""
