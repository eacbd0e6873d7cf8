"""An embedded cluster that emulates an upstream bug, and its upgrade to the fixed release.

Where the remedy for a stuck transaction is a broker upgrade (KAFKA-19999 in the partition leaders,
KAFKA-20090 in the coordinator), a real cluster is upgraded by its owners' release process, and the advice
says so in words. The embedded broker (`kafka-txn broker start`) rehearses those incidents by behaving as
Kafka did before the fix, for the transactional ids its test-only broker property `fault.injection`
(and `fault.injection.transactional.id.prefix`) name. It says so itself: DescribeConfigs of a BROKER
resource lists that property there, and nowhere on Apache Kafka, which does not have it. That is how
the advice knows that `kafka-txn broker upgrade` is the upgrade here, and prints it as a command.

`kafka-txn broker upgrade` switches the emulation off at the cluster default and on every broker
(IncrementalAlterConfigs), as a rolling upgrade to the fixed release would: from then on the leaders
accept a retried marker at the same epoch and the coordinator fences the last epoch. A restart does not
do it: the property is dynamic, kept in the cluster's metadata, and outlives a restart.

`applies` is pure; the rest does the I/O through the AdminClient.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import kafka.errors as kerrors

from kafka_txn_tools.errors import BrokerError

if TYPE_CHECKING:
    from kafka_txn_tools.admin.advice import Invocation
    from kafka_txn_tools.connection.client import AdminClient
    from kafka_txn_tools.models import StuckTransaction

FAULT = "fault.injection"
FAULT_PREFIX = "fault.injection.transactional.id.prefix"
BROKER_RESOURCE = 4


@dataclass(frozen=True)
class Emulation:
    """What one broker says it emulates: an upstream bug (before its fix), for ids starting with `prefix`."""

    broker_id: int
    bug: str
    prefix: str = ""


def applies(emulations: list[Emulation], bug: str, transactional_id: str) -> bool:
    """Whether some broker emulates `bug` for this transactional id (then its upgrade is `broker upgrade`)."""
    return any(e.bug == bug and transactional_id.startswith(e.prefix) for e in emulations)


def _call(client: AdminClient, request: Any, node: int | None, what: str) -> Any:
    try:
        return client.send(request, node)
    except kerrors.KafkaError as exc:
        raise BrokerError(f"{what} failed: {exc}", type(exc).__name__) from None


def emulations(client: AdminClient, broker_ids: list[int]) -> list[Emulation]:
    """The upstream bugs the brokers say they emulate; none from a broker that has no such property (any
    Apache Kafka) or does not answer (then nothing is claimed)."""
    from kafka.protocol.admin import DescribeConfigsRequest

    out = []
    for broker in broker_ids:
        res = DescribeConfigsRequest.DescribeConfigsResource(
            resource_type=BROKER_RESOURCE, resource_name=str(broker), configuration_keys=[FAULT, FAULT_PREFIX])
        try:
            r = _call(client, DescribeConfigsRequest(resources=[res], include_synonyms=False,
                                                     include_documentation=False, min_version=1), broker,
                      f"DescribeConfigs of broker {broker}")
        except (BrokerError, OSError):
            continue
        values = {c.name: c.value for result in r.results if result.error_code == 0 for c in result.configs}
        if values.get(FAULT):
            out.append(Emulation(broker, str(values[FAULT]), str(values.get(FAULT_PREFIX) or "")))
    return out


def switch_off(client: AdminClient, broker_ids: list[int]) -> None:
    """The upgrade: `fault.injection` set empty at the cluster default and on each broker."""
    from kafka.protocol.admin import IncrementalAlterConfigsRequest

    alter = IncrementalAlterConfigsRequest.AlterConfigsResource
    set_op = 0
    for name in ["", *map(str, broker_ids)]:
        resource = alter(resource_type=BROKER_RESOURCE, resource_name=name, configs=[
            alter.AlterableConfig(name=FAULT, config_operation=set_op, value="")])
        node = int(name) if name else None
        r = _call(client, IncrementalAlterConfigsRequest(resources=[resource], validate_only=False, min_version=0),
                  node, "IncrementalAlterConfigs")
        answer = r.responses[0]
        if answer.error_code:
            raise BrokerError(f"broker {name or '(cluster default)'} refused {FAULT}= "
                              f"({kerrors.for_code(answer.error_code).__name__}: {answer.error_message})",
                              kerrors.for_code(answer.error_code).__name__)


def with_upgrades(client: AdminClient, rows: list[StuckTransaction], invocation: Invocation
                  ) -> list[StuckTransaction]:
    """`rows`, with `kafka-txn broker upgrade` as a command where the remaining step is an upgrade and the
    brokers emulate that bug for the row's transactional id (find-hanging and describe alike). The brokers are
    asked only when some row's remedy is an upgrade."""
    from kafka_txn_tools.admin.coordinator_advice import with_upgrade_command

    if not any(r.upgrade_for for r in rows):
        return rows
    found = emulations(client, client.metadata([]).broker_ids())
    upgrade = invocation.line("broker", "upgrade")
    return [with_upgrade_command(r, upgrade) if r.upgrade_for and applies(found, r.upgrade_for, r.transactional_id)
            else r for r in rows]
