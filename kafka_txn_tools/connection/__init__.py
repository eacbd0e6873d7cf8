"""The connection layer, THE I/O seam: how the tools reach a Kafka cluster, under the flows (kafka_txn_tools/admin/).

- transport.py: kafka-python's network stack behind a public send(), and the plumbing the request families share
  (the only module besides connect.py that touches kafka-python's private names; tests/test_layering.py);
- connect.py: connecting, and naming what is wrong and its fix when it cannot;
- transactions.py, offsets.py, groups.py, leadership.py: the request families, after Kafka's admin handlers;
- client.py: the admin client the flows use, the transport with those families;
- wire.py: the requests sent and how their answers are read; plain_request.py: the first pass's ListOffsets;
- fan_out.py: one request per node, all in flight together, answers and errors merged (written once);
- bootstrap.py: probes of the bootstrap servers before connecting, naming what is wrong;
- config.py and profiles.py: the client settings from --command-config, --profile and the environment;
- capabilities.py: which admin APIs the cluster offers, checked before a command sends anything;
- security/: TLS, SASL/GSSAPI (Kerberos), SASL/OAUTHBEARER, and secrets kept out of logs.

The answers' types (ListResult, DescribeResult, ...) are the tools' vocabulary (models.py), so the flows' ClusterApi
names nothing of this layer's. It imports nothing of the flows, the CLI, the monitor or the sweep (the tools-layers
contract in pyproject.toml).
"""
