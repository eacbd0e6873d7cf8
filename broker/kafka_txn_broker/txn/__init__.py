"""The transaction coordinator (Kafka's kafka.coordinator.transaction), one module per Kafka class:

- transaction_metadata: TransactionMetadata, TxnTransitMetadata (the state machine over formats.transactions'
  TransactionState; the __transaction_state format itself is formats.transaction_log)
- state_manager: TransactionStateManager (cache, loading, appends, timeouts, expiration, listing)
- marker_channel: TransactionMarkerChannelManager (markers to partition leaders, then COMPLETE_*)
- coordinator: TransactionCoordinator (InitProducerId, AddPartitions/AddOffsets, EndTxn, reaper)
- verification: ProduceVerifier, transaction.partition.verification.enable on the produce path
- java_regex: ListTransactions' Java regex filter
"""
