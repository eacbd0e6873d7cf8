"""`kafka-txn describe-producers`: the producer state partition replicas hold (DescribeProducers)."""

from __future__ import annotations

from typing import Annotated

import typer

from kafka_txn_tools.cli import exit_codes
from kafka_txn_tools.cli.errors import KafkaTxnCommand, fail, report_errors, user_errors
from kafka_txn_tools.cli.options import (
    OutputFormat,
    OutputOpt,
    WideOpt,
)
from kafka_txn_tools.cli.session import CLUSTER, Connection, cluster_options, connect, now_ms
from kafka_txn_tools.models import PartitionProducers

EXAMPLES = """\b
Examples:
  kafka-txn describe-producers --topic orders --partition 3
  kafka-txn describe-producers --topic orders --partition 3 --broker-id 2
  kafka-txn describe-producers --all --open-only

One of --topic and --all is required; --partition needs --topic; --broker-id
asks that replica (a follower's view) instead of the leader.
"""


def _rows(replicas: list[PartitionProducers], open_only: bool) -> list[dict[str, object]]:
    return [{
        "topic": r.partition.topic, "partition": r.partition.partition, "broker_id": r.broker_id,
        "producer_id": p.producer_id, "producer_epoch": p.producer_epoch,
        "coordinator_epoch": p.coordinator_epoch, "last_sequence": p.last_sequence,
        "last_timestamp_ms": p.last_timestamp_ms,
        "current_txn_start_offset": p.current_txn_start_offset if p.has_open_transaction else None,
    } for r in replicas for p in sorted(r.producers, key=lambda p: p.producer_id)
        if p.has_open_transaction or not open_only]


@cluster_options
def describe_producers_command(
    topic: Annotated[str | None, typer.Option("--topic", metavar="TOPIC", help="topic (all its partitions "
                                              "unless --partition)")] = None,
    partition: Annotated[int | None, typer.Option("--partition", metavar="N", help="partition number")] = None,
    describe_all: Annotated[bool, typer.Option("--all", help="every partition of every topic")] = False,
    broker_id: Annotated[int | None, typer.Option(
        "--broker-id", metavar="ID", help="ask this replica (may be a follower) instead of the leader")] = None,
    open_only: Annotated[bool, typer.Option("--open-only", help="only producers with an open transaction")] = False,
    conn: Connection = CLUSTER,
    output: OutputOpt = None,
    wide: WideOpt = False,
) -> None:
    """Show each producer a partition tracks: epoch, last sequence and timestamp, open transaction offset."""
    from kafka_txn_tools.admin.producers import describe_producers
    from kafka_txn_tools.admin.scan import Scope
    from kafka_txn_tools.cli.progress import progress_bar
    from kafka_txn_tools.cli.render import Column, Output, nothing_found, timestamp
    from kafka_txn_tools.cli.upstream.format import PRODUCERS_HEADERS, producer_row

    if describe_all == (topic is not None):
        fail("give --topic TOPIC [--partition N] or --all", exit_codes.USAGE)
    if partition is not None and topic is None:
        fail("--partition needs --topic", exit_codes.USAGE)
    # --all without --broker-id reads every replica; with it, that broker's replicas.
    scope = Scope(all=describe_all and broker_id is None, broker_id=broker_id, topic=topic, partition=partition)
    with user_errors(), connect(conn) as client, \
            progress_bar("reading producer state") as (advance, set_total):
        report = describe_producers(client, scope, open_only, advance, set_total)
    report_errors(report.errors)
    single = topic is not None and partition is not None
    kafka_rows = [producer_row(p) if single else [r.partition.topic, str(r.partition.partition), *producer_row(p)]
                  for r in report.replicas for p in sorted(r.producers, key=lambda p: p.producer_id)
                  if p.has_open_transaction or not open_only]
    Output(
        kind="producers", rows=_rows(report.replicas, open_only),
        columns=[Column("topic", "TOPIC"), Column("partition", "PART"), Column("broker_id", "BROKER", drop=3),
                 Column("producer_id", "PRODUCER ID"), Column("producer_epoch", "EPOCH", drop=4),
                 Column("coordinator_epoch", "COORD EPOCH", drop=5), Column("last_sequence", "LAST SEQ", drop=6),
                 Column("last_timestamp_ms", "LAST TIMESTAMP", timestamp(now_ms()), drop=2),
                 Column("current_txn_start_offset", "OPEN TXN START", drop=1)],
        kafka_headers=PRODUCERS_HEADERS if single else ("Topic", "Partition", *PRODUCERS_HEADERS),
        kafka_rows=kafka_rows, errors=[e.to_row() for e in report.errors], extra={"partial": bool(report.errors)},
        empty_message=nothing_found("open transactions" if open_only else "producers"),
    ).emit(output or OutputFormat.table, wide=wide)
    if report.errors:
        raise typer.Exit(exit_codes.PARTIAL if report.replicas else exit_codes.ERROR)


def register(app: typer.Typer) -> None:
    app.command("describe-producers", cls=KafkaTxnCommand,
                epilog=EXAMPLES + "\n" + exit_codes.HELP_TEXT)(describe_producers_command)
