"""`kafka-txn describe-share-group`: per share-partition of a share group, its start offset and its records
in flight by state, and whether a transaction holds it at the LSO (flow: admin/share_groups.py)."""

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
    resolve_output,
    user_errors,
)


@app.command("describe-share-group", epilog=exit_codes.HELP_TEXT)
def describe_share_group_command(
    group: Annotated[str, typer.Option("--group", metavar="GROUP", help="the share group")],
    bootstrap_server: BootstrapOpt = None,
    command_config: CommandConfigOpt = None,
    profile: ProfileOpt = None,
    timeout: TimeoutOpt = DEFAULT_TIMEOUT,
    output: OutputOpt = None,
) -> None:
    """Show a share group's partitions: start offset, end (LSO / high watermark), records acknowledged,
    archived, released for redelivery and not yet acknowledged, and HELD when a read_committed group waits
    at the LSO for a transaction. Reads the group's records in __share_group_state (needs READ on it).

    Example: kafka-txn describe-share-group --group orders-workers --bootstrap-server localhost:9092"""
    from kafka_txn_tools.admin.share_groups import describe_share_group
    from kafka_txn_tools.cli.render import Column, Output, none_as_dash

    fmt = resolve_output(output)
    with user_errors(), connect(Connection(bootstrap_server, command_config, profile, timeout)) as client:
        view = describe_share_group(client, group)
    stalled = {(p.topic, p.partition) for p in view.stalled_partitions}
    rows = [{"group": view.group, "topic": p.topic, "partition": p.partition, "start_offset": p.start_offset,
             "last_stable_offset": p.last_stable_offset, "high_watermark": p.high_watermark, "lag": p.lag,
             "acknowledged": p.acknowledged, "archived": p.archived, "available": p.available,
             "unacknowledged": p.unacknowledged, "max_delivery_count": p.max_delivery_count,
             "held_at_lso": (p.topic, p.partition) in stalled, "error": p.error}
            for p in view.partitions]
    Output(
        kind="share_group", rows=rows,
        columns=[Column("topic", "TOPIC"), Column("partition", "PART"), Column("start_offset", "START"),
                 Column("last_stable_offset", "LSO", none_as_dash), Column("high_watermark", "HW", none_as_dash),
                 Column("lag", "LAG", none_as_dash), Column("acknowledged", "ACKED"),
                 Column("archived", "ARCHIVED"), Column("available", "RELEASED"),
                 Column("unacknowledged", "NOT ACKED", none_as_dash), Column("max_delivery_count", "MAX DELIV"),
                 Column("held_at_lso", "HELD", lambda held: "yes" if held else "")],
        extra={"group": view.group, "state": view.state, "members": view.members,
               "isolation_level": view.isolation_level},
        title=f"share group {view.group}: {view.state}, {view.members} member(s), "
              f"{view.isolation_level or 'isolation level unknown'}",
        empty_message=f"share group {view.group} ({view.state}) has no share-partition state yet",
    ).emit(fmt)
