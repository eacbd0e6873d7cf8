"""Kafka's formats, pure: what the broker writes and the tools read, implemented once.

- bytes: varints, and the reader/writer of internal-topic keys and values
- record_batch: record batch v2 (headers, validation, building, decoding)
- producer_snapshot: `<offset>.snapshot` files
- transaction_log: `__transaction_state` keys and values
- group_records: `__consumer_offsets` keys and values
- share_group_records: the share groups' ShareGroupMetadata record in `__consumer_offsets`
- share_coordinator_records: `__share_group_state` keys and values (ShareSnapshot, ShareUpdate)
- share_state: a share-partition's state replayed from those records (ShareGroupOffset, the batch combiner)
- partitioning: the internal topics' names, and partitionFor of their keys (Java hashCode)
- errors: Kafka's error codes (one table) and the exceptions that carry them
- transactions: the coordinator's states, epoch limits, transaction timeouts
- releases: the API version ranges of Apache Kafka releases (kafka-python's record of them, imported lazily)
- messages: the wire codec's one door: every request and response class by name (kafka-python 3.0.12's,
  and those its class builder makes of our JSON definitions of the messages it lacks), framing, and the
  quiet import of kafka-python (the one package of the broker that imports it)

Nothing here starts a server or imports the broker: the only dependency is crc32c (and, for snappy,
lz4 and zstd batches only, kafka-python's codec module), so the tools and Spark executors use this
package alone.
"""
