"""Real Apache Kafka for the tests: releases assembled from Maven Central's jars (`jars`), KRaft clusters of
separate JVMs on loopback (`cluster`), and upstream's tools run with `java -cp` (`tools`).

    libs = release_libs("4.4.0")                    # ~/.cache/kafka-txn-tools/kafka/4.4.0/libs, fetched once
    with KafkaCluster(libs, nodes=3, base=tmp) as cluster:
        cluster.bootstrap_servers                   # "127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3"
        cluster.kill(2); cluster.restart(2)         # kill -9 one node, start it again on its own log dir
"""

from tests.support.real_kafka.cluster import KafkaCluster, KafkaNode
from tests.support.real_kafka.jars import DEFAULT_RELEASE, RELEASES, java_missing, release_libs
from tests.support.real_kafka.tools import UpstreamTool

__all__ = ["DEFAULT_RELEASE", "RELEASES", "KafkaCluster", "KafkaNode", "UpstreamTool", "java_missing",
           "release_libs"]
