"""Replication: the replicas one node hosts (ReplicaManager) and one replica of one partition (Partition)."""
