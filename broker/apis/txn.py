"""Transactional producer APIs (AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, TxnOffsetCommit)."""
