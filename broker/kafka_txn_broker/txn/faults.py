"""TEST-ONLY fault injection: make the transaction coordinator behave as Apache Kafka did before a fix, so
the incident that fix closed can be rehearsed through the real protocol (`kafka-txn broker scenario`).

Off unless the broker property `fault.injection` names an upstream bug (dynamic: a scenario switches it on
and off with IncrementalAlterConfigs), and then only for transactional ids starting with
`fault.injection.transactional.id.prefix`. Nothing here changes what the broker does with the property
unset; production brokers never set it.

- KAFKA-19999 (fixed by apache/kafka#21176): with TV2 a marker is valid only with an epoch newer than the
  partition's, so a leader before the fix rejected a *retried* marker - same epoch, transaction already
  completed - with INVALID_PRODUCER_EPOCH, which the coordinator takes as final: the transaction stays in
  PREPARE_* and its producer gets CONCURRENT_TRANSACTIONS forever. Emulated in the marker channel's
  collaborator (`FaultyMarkerWriter`): the first marker's response is lost once (REQUEST_TIMED_OUT after
  it was written, as a network fault would), and every marker at the epoch the partition already holds,
  with nothing open, is rejected as that leader did - the retry, and the re-send of a coordinator that
  reloaded the transaction.
- KAFKA-20090 (fixed by apache/kafka#21506 and #21469): a timeout abort at epoch Short.MAX_VALUE - 1 fenced
  the producer to Short.MAX_VALUE without allocating the next producer id, so a delayed EndTxn retry was
  answered with epoch Short.MAX_VALUE and the client went on at it; a transaction Ongoing there could then
  never be fenced (prepareFenceProducerEpoch threw). Emulated in the coordinator (`UpstreamBugs`): no
  rotation for fence aborts at exhaustion, and a fence at Short.MAX_VALUE fails.

Like all broker state, these live on the cluster's event loop.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Protocol

from kafka_txn_broker.formats import errors as E

if TYPE_CHECKING:
    from kafka_txn_broker.configs.broker_config import BrokerConfig
    from kafka_txn_broker.txn.transaction_metadata import TopicPartition

log = logging.getLogger(__name__)

KAFKA_19999 = "KAFKA-19999"
KAFKA_20090 = "KAFKA-20090"


class UpstreamBugs:
    """Which upstream bug, if any, applies to a transactional id now (read from the config on every call)."""

    def __init__(self, config: BrokerConfig) -> None:
        self.config = config

    def emulates(self, bug: str, transactional_id: str) -> bool:
        if self.config["fault.injection"] != bug:
            return False
        return transactional_id.startswith(self.config["fault.injection.transactional.id.prefix"])


class LeaderWithProducerState(Protocol):
    """The node: the real MarkerWriter, and a look at a leader's producer state (what a leader checks)."""

    def write_marker(self, leader: int, tp: TopicPartition, producer_id: int, producer_epoch: int, commit: bool,
                     coordinator_epoch: int, transaction_version: int, transactional_id: str = "") -> int: ...

    def producer_epoch_on(self, leader: int, tp: TopicPartition, producer_id: int) -> tuple[int, bool] | None:
        """(epoch, has an open transaction) of the producer on node `leader`'s replica of `tp`; None: no entry."""
        ...


class FaultyMarkerWriter:
    """The marker channel's MarkerWriter, with KAFKA-19999's leader behaviour for the affected ids (see the
    module docstring); every other marker goes to `inner` unchanged."""

    def __init__(self, inner: LeaderWithProducerState, bugs: UpstreamBugs) -> None:
        self.inner = inner
        self.bugs = bugs
        self._lost: set[tuple[TopicPartition, int, int]] = set()

    def write_marker(self, leader: int, tp: TopicPartition, producer_id: int, producer_epoch: int, commit: bool,
                     coordinator_epoch: int, transaction_version: int, transactional_id: str = "") -> int:
        args = (leader, tp, producer_id, producer_epoch, commit, coordinator_epoch, transaction_version)
        if transaction_version < 2 or not self.bugs.emulates(KAFKA_19999, transactional_id):
            return self.inner.write_marker(*args, transactional_id=transactional_id)
        held = self.inner.producer_epoch_on(leader, tp, producer_id)
        if held is not None and held == (producer_epoch, False):
            log.warning("fault injection %s: rejecting the marker retry for %s of %s at epoch %s", KAFKA_19999, tp,
                        transactional_id, producer_epoch)
            return E.INVALID_PRODUCER_EPOCH
        code = self.inner.write_marker(*args, transactional_id=transactional_id)
        key = (tp, producer_id, producer_epoch)
        if code == E.NONE and key not in self._lost:
            self._lost.add(key)
            log.warning("fault injection %s: losing the response of the marker for %s of %s", KAFKA_19999, tp,
                        transactional_id)
            return E.REQUEST_TIMED_OUT
        return code
