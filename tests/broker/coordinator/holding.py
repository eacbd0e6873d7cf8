"""Hold a coordinator's load on a running embedded cluster: the wire and end-to-end tests of loading use it.

`loading(cluster, topic, runtime_of)` moves the leadership of `topic`-0 to another in-sync replica and gives the
new leader's loader a Gate as its pace, so the load stops after its first chunk and the partition stays LOADING
until the block ends; then the load runs to the end. Everything that touches the broker runs on its loop
(EmbeddedCluster.call_soon); each such call is one turn of that loop, so no test waits on the wall clock.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from kafka_txn_broker.coordinator.loader import yield_to_loop
from kafka_txn_broker.coordinator.runtime import CoordinatorRuntime, CoordinatorState
from kafka_txn_broker.embedded import EmbeddedCluster
from kafka_txn_broker.server.node import BrokerNode
from tests.broker.coordinator.fakes import Gate

RuntimeOf = Callable[[BrokerNode], CoordinatorRuntime[Any]]


def txn_runtime(node: BrokerNode) -> CoordinatorRuntime[Any]:
    return node.txn_coordinator.state_manager.runtime


def group_runtime(node: BrokerNode) -> CoordinatorRuntime[Any]:
    return node.group_coordinator.runtime


def share_runtime(node: BrokerNode) -> CoordinatorRuntime[Any]:
    return node.share_coordinator.runtime


@contextlib.contextmanager
def loading(cluster: EmbeddedCluster, topic: str, runtime_of: RuntimeOf) -> Iterator[int]:
    """Yields the node now loading `topic`-0, held after its first chunk (the partition needs a batch)."""
    core = cluster.cluster
    assert core is not None
    gate = Gate()

    def move() -> int:
        state = core.metadata.partition(topic, 0)
        new = next(n for n in state.isr if n != state.leader)
        runtime_of(core.nodes[new]).loader.pace = gate
        core.metadata.elect(state, new)
        return new

    node = cluster.call_soon(move)
    runtime = runtime_of(core.nodes[node])
    for _ in range(100):  # the load task's first step runs on the loop's next turn
        if cluster.call_soon(lambda: gate.waits) >= 1:
            break
    assert cluster.call_soon(lambda: (gate.waits, runtime.state(0))) == (1, CoordinatorState.LOADING)
    try:
        yield node
    finally:
        cluster.call_soon(gate.open_all)
        for _ in range(10_000):  # a large partition takes many turns
            if cluster.call_soon(lambda: runtime.state(0)) is not CoordinatorState.LOADING:
                break
        cluster.call_soon(lambda: setattr(runtime.loader, "pace", yield_to_loop))
        assert cluster.call_soon(lambda: runtime.state(0)) is CoordinatorState.ACTIVE
