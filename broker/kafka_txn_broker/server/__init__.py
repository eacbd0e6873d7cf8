"""The node runtime: what runs the subsystems and connects them.

- cluster: Cluster (the nodes of one process and their leadership moves) and EmbeddedCluster (on its own thread)
- node: BrokerNode, one node's replicas, coordinators and listener, and the adapters that hand each
  subsystem the collaborators it needs
- socket_server: the listener (framing, dispatch by API key, per-connection order)
- metadata: ClusterMetadata, the controller's view (topics, assignment, leaders, ISR), persisted
- producer_id_manager: producer id blocks
- metrics: PartitionsWithLateTransactionsCount, LastStableOffsetLag (Prometheus text)
- runner: `kafka-txn broker start` in the foreground
"""
