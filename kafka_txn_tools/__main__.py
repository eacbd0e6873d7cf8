"""`python -m kafka_txn_tools` = `kafka-txn`."""

from kafka_txn_tools.cli.app import main

main()
