"""What tests and rehearsals use the broker with, never the broker itself:

- pytest_plugin: the `kafka_cluster` fixture (registered as a pytest11 entry point)
- scenarios: hanging transactions made the way production made them
- raw_client: the protocol-level client the scenarios drive the broker with
"""
