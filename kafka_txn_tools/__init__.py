"""kafka-txn-tools: operator toolkit for hanging Kafka transactions."""

__version__ = "0.1.0"
