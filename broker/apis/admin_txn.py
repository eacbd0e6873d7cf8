"""KIP-664 admin APIs (DescribeProducers, ListTransactions, DescribeTransactions, WriteTxnMarkers)."""
