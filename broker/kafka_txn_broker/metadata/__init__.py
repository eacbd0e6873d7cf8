"""The metadata layer: what every broker subsystem knows of the cluster's topics, read-only.

- topics: PartitionState and TopicState (a partition's replicas, leader, epoch, ISR; a topic's id,
  partitions and configs), TopicMetadata (a topic as assignors see it), the internal topics and Kafka's
  topic-name rules
- view: the read protocols the subsystems are given (MetadataView for the coordinators, MetadataCache for
  a broker's replicas and request handlers) and MetadataTopics, topics by name and id over a MetadataCache

It sits just above `formats` (whose internal topic names it reuses) and below everything else. The store
that changes and persists the metadata (the controller's ClusterMetadata) lives in `server`; lower layers
see it only through these protocols. Pure: no I/O, no broker state of its own.
"""
