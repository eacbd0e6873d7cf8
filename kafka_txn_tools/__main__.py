"""`python -m kafka_txn_tools` = `kafka-txn`."""

from kafka_txn_tools.cli.entry import kafka_txn

kafka_txn()
