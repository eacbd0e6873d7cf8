"""The connection layer: how the tools reach a Kafka cluster, under the flows (kafka_txn_tools/admin/).

- client.py: the admin client (kafka-python's network stack) and its cluster-wide reads and writes;
- wire.py: the requests it sends and how their answers are read;
- fan_out.py: one request per node, all in flight together, answers and errors merged (written once);
- bootstrap.py: probes of the bootstrap servers before connecting, naming what is wrong;
- config.py and profiles.py: the client settings from --command-config, --profile and the environment;
- capabilities.py: which admin APIs the cluster offers, checked before a command sends anything;
- results.py: the merged answers of the cluster-wide reads;
- security/: TLS, SASL/GSSAPI (Kerberos), SASL/OAUTHBEARER, and secrets kept out of logs.

It imports nothing of the flows, the CLI, the monitor or the sweep (a contract in pyproject.toml).
"""
