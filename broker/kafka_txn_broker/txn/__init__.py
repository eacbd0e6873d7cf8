"""The transaction coordinator (Kafka's kafka.coordinator.transaction), one module per Kafka class:

- transaction_metadata: TransactionMetadata, TxnTransitMetadata (the state machine over formats.transactions'
  TransactionState; the __transaction_state format itself is formats.transaction_log)
- state_manager: TransactionStateManager (cache, loading, appends, timeouts, expiration, listing)
- marker_channel: TransactionMarkerChannelManager (markers to partition leaders, then COMPLETE_*)
- coordinator: TransactionCoordinator (InitProducerId, AddPartitions/AddOffsets, EndTxn, reaper)
- verification: ProduceVerifier, transaction.partition.verification.enable on the produce path
- offset_commit_verification: TxnOffsetCommitVerifier, TxnOffsetCommit's check with the transaction coordinator
  (KIP-890), which the group coordinator's TxnOffsetCommit asks before it writes
- java_regex: ListTransactions' Java regex filter
"""
