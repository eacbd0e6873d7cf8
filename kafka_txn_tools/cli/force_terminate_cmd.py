"""`kafka-txn force-terminate`: fence a transactional id's producer and abort its open transaction (KIP-939).

This goes through the coordinator (InitProducerId with producer id/epoch -1 bumps the epoch), so it
is the right tool for a *live* transaction that must stop; `abort` is for hanging ones the
coordinator no longer tracks. The producer that owned the id gets fenced errors afterwards.
"""

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
    OutputFormat,
    OutputOpt,
    ProfileOpt,
    TimeoutOpt,
    YesOpt,
    confirm_or_exit,
    connect,
    fail,
    now_ms,
    resolve_output,
    user_errors,
)


@app.command("force-terminate", epilog=exit_codes.HELP_TEXT)
def force_terminate_command(
    transactional_id: Annotated[str, typer.Option(
        "--transactional-id", "--transactionalId", "-t", metavar="ID", help="transactional id to fence")],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="show what would be fenced; change nothing")] = False,
    yes: YesOpt = False,
    bootstrap_server: BootstrapOpt = None,
    command_config: CommandConfigOpt = None,
    profile: ProfileOpt = None,
    timeout: TimeoutOpt = DEFAULT_TIMEOUT,
    output: OutputOpt = None,
) -> None:
    """Fence the producer of a transactional id (its open transaction is aborted by the coordinator)."""
    from kafka_txn_tools.cli.render import Column, Output, none_as_dash

    fmt = resolve_output(output)
    with user_errors(), connect(Connection(bootstrap_server, command_config, profile, timeout)) as client:
        described = client.describe_transactions([transactional_id])
        before = described.descriptions.get(transactional_id)
        if before is None and transactional_id not in described.not_found and described.errors:
            fail(f"cannot describe {transactional_id!r} before fencing: {described.errors[0].message}")
        if before is None:
            # InitProducerId would create the id: fencing an unknown id only adds state.
            fail(f"transactional id {transactional_id!r} is not known to its coordinator: nothing to fence",
                 exit_codes.ALREADY_DONE)
        row = {"transactional_id": transactional_id,
               "state_before": before.state, "producer_id": before.producer_id,
               "producer_epoch_before": before.producer_epoch,
               "partitions": sorted(str(tp) for tp in before.partitions),
               "producer_epoch_after": None, "result": "dry-run" if dry_run else ""}
        typer.echo(f"{transactional_id!r}: {before.state}, producer {before.producer_id} epoch "
                   f"{before.producer_epoch}, {len(before.partitions)} partitions, {_age(before.start_time_ms)}",
                   err=True)
        if not dry_run:
            confirm_or_exit(f"Fence transactional id {transactional_id!r} (its producer will fail)?", yes)
            pid, epoch = client.fence_transactional_id(transactional_id)
            row.update(producer_id=pid, producer_epoch_after=epoch, result="fenced")
    if fmt is OutputFormat.kafka:
        return  # upstream prints nothing
    Output(kind="fenced", rows=[row], columns=[
        Column("transactional_id", "TRANSACTIONAL ID"), Column("state_before", "STATE BEFORE"),
        Column("producer_id", "PRODUCER ID", none_as_dash),
        Column("producer_epoch_before", "EPOCH BEFORE", none_as_dash),
        Column("producer_epoch_after", "EPOCH AFTER", none_as_dash), Column("result", "RESULT")]).emit(fmt)


def _age(start_ms: int) -> str:
    from kafka_txn_tools.cli.render import human_duration

    return "no transaction in progress" if start_ms < 0 else f"running {human_duration(now_ms() - start_ms)}"
