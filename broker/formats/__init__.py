"""Kafka's formats, pure: what the broker writes and the tools read, implemented once.

- share_coordinator_records: `__share_group_state` keys and values (ShareSnapshot, ShareUpdate)
- share_state: a share-partition's state replayed from those records (ShareGroupOffset, the batch combiner)
- share_group_records: the share groups' ShareGroupMetadata record in `__consumer_offsets`
- messages: JSON definitions of the protocol messages kafka-python 3.0.12 lacks (share groups), and the
  message classes its class builder makes of them
"""
