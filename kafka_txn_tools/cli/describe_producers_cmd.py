"""`kafka-txn describe-producers`: the producer state partition replicas hold (DescribeProducers)."""

from __future__ import annotations

from typing import Annotated

import typer

from kafka_txn_tools.cli import exit_codes
from kafka_txn_tools.cli.app import app
from kafka_txn_tools.cli.common import (
    DEFAULT_TIMEOUT,
    BootstrapOpt,
    CommandConfigOpt,
    Connection,
    OutputOpt,
    ProfileOpt,
    TimeoutOpt,
    connect,
    fail,
    report_errors,
    resolve_output,
    user_errors,
)
from kafka_txn_tools.models import PartitionProducers


def _rows(replicas: list[PartitionProducers], open_only: bool) -> list[dict[str, object]]:
    rows = []
    for r in sorted(replicas, key=lambda r: (r.partition, r.broker_id)):
        for p in sorted(r.producers, key=lambda p: p.producer_id):
            if open_only and not p.has_open_transaction:
                continue
            rows.append({
                "topic": r.partition.topic, "partition": r.partition.partition, "broker_id": r.broker_id,
                "producer_id": p.producer_id, "producer_epoch": p.producer_epoch,
                "coordinator_epoch": p.coordinator_epoch, "last_sequence": p.last_sequence,
                "last_timestamp_ms": p.last_timestamp_ms,
                "current_txn_start_offset": p.current_txn_start_offset if p.has_open_transaction else None,
            })
    return rows


@app.command("describe-producers", epilog=exit_codes.HELP_TEXT)
def describe_producers_command(
    topic: Annotated[str | None, typer.Option("--topic", metavar="TOPIC", help="topic (all its partitions "
                                              "unless --partition)")] = None,
    partition: Annotated[int | None, typer.Option("--partition", metavar="N", help="partition number")] = None,
    describe_all: Annotated[bool, typer.Option("--all", help="every partition of every topic")] = False,
    broker_id: Annotated[int | None, typer.Option(
        "--broker-id", metavar="ID", help="ask this replica (may be a follower) instead of the leader")] = None,
    open_only: Annotated[bool, typer.Option("--open-only", help="only producers with an open transaction")] = False,
    bootstrap_server: BootstrapOpt = None,
    command_config: CommandConfigOpt = None,
    profile: ProfileOpt = None,
    timeout: TimeoutOpt = DEFAULT_TIMEOUT,
    output: OutputOpt = None,
) -> None:
    """Show each producer a partition tracks: epoch, last sequence and timestamp, open transaction offset."""
    from kafka_txn_tools.admin.scan import Scope, plan_requests
    from kafka_txn_tools.cli.progress import progress_bar
    from kafka_txn_tools.cli.render import Column, Output, none_as_dash
    from kafka_txn_tools.cli.upstream_format import PRODUCERS_HEADERS, producer_row

    if describe_all == (topic is not None):
        fail("give --topic TOPIC [--partition N] or --all", exit_codes.USAGE)
    if partition is not None and topic is None:
        fail("--partition needs --topic", exit_codes.USAGE)
    fmt = resolve_output(output)
    # --all without --broker-id reads every replica; with it, that broker's replicas.
    scope = Scope(all=describe_all and broker_id is None, broker_id=broker_id, topic=topic, partition=partition)
    with user_errors(), connect(Connection(bootstrap_server, command_config, profile, timeout)) as client, \
            progress_bar("reading producer state") as (advance, set_total):
        by_broker, errors = plan_requests(client.metadata([topic] if topic else None), scope)
        if set_total is not None:
            set_total(sum(map(len, by_broker.values())))
        replicas, errs = client.describe_producers(by_broker, open_only=open_only, progress=advance)
    errors.extend(errs)
    report_errors(errors)
    rows = _rows(replicas, open_only)
    single = topic is not None and partition is not None
    kafka_rows = [producer_row(p) if single else [r.partition.topic, str(r.partition.partition), *producer_row(p)]
                  for r in sorted(replicas, key=lambda r: (r.partition, r.broker_id))
                  for p in sorted(r.producers, key=lambda p: p.producer_id)
                  if p.has_open_transaction or not open_only]
    Output(
        kind="producers", rows=rows,
        columns=[Column("topic", "TOPIC"), Column("partition", "PART"), Column("broker_id", "BROKER"),
                 Column("producer_id", "PRODUCER ID"), Column("producer_epoch", "EPOCH"),
                 Column("coordinator_epoch", "COORD EPOCH"), Column("last_sequence", "LAST SEQ"),
                 Column("last_timestamp_ms", "LAST TIMESTAMP"),
                 Column("current_txn_start_offset", "OPEN TXN START", none_as_dash)],
        kafka_headers=PRODUCERS_HEADERS if single else ("Topic", "Partition", *PRODUCERS_HEADERS),
        kafka_rows=kafka_rows, errors=[e.to_row() for e in errors],
        empty_message="no open transactions" if open_only else "no active producers",
    ).emit(fmt)
    if errors:
        raise typer.Exit(exit_codes.PARTIAL if replicas else exit_codes.ERROR)
