"""The transaction coordinator (Kafka's kafka.coordinator.transaction), one module per Kafka class:

- transaction_metadata: TransactionState, TransactionMetadata, TxnTransitMetadata (the state machine)
- transaction_log: the __transaction_state key/value format
- state_manager: TransactionStateManager (cache, loading, appends, timeouts, expiration, listing)
- marker_channel: TransactionMarkerChannelManager (markers to partition leaders, then COMPLETE_*)
- coordinator: TransactionCoordinator (InitProducerId, AddPartitions/AddOffsets, EndTxn, reaper)
- verification: transaction.partition.verification.enable on the produce path
- java_regex: ListTransactions' Java regex filter; raw_client: the scenarios' protocol client
"""
