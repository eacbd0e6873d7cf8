"""The node runtime: what runs the subsystems and connects them, one node with another and with the controller.

- cluster: Cluster (the nodes of one process, the controller's leadership moves)
- node: BrokerNode, one node's replicas, coordinators and listener, and how each subsystem gets the
  collaborators it needs
- broker_services: BrokerServices, what a node's request handlers may use (its own subsystems and the channel)
- inter_broker: InterBrokerChannel, everything one node asks of another (the seam of a multi-process cluster)
- controller: Controller, what brokers forward to the controller (topics, partitions, elections, configs)
- socket_server: the listener (framing, per-connection order; the request handler comes from apis)
- cluster_metadata: ClusterMetadata, the controller's metadata store (topics, assignment, leaders, ISR,
  dynamic configs, producer id blocks), persisted
- replication_control, partition_change: the controller's partition decisions
- producer_id_manager: producer id blocks
- metrics: PartitionsWithLateTransactionsCount, LastStableOffsetLag (Prometheus text)
"""
