"""The `kafka-txn` typer application: global wiring only; each command lives in its own module.

Command modules must import only light modules at import time (typer, stdlib): heavy ones
(kafka_txn_broker, kafka-python protocol classes, pyspark, confluent_kafka) are imported inside the
command function, so `kafka-txn --help` starts fast.
"""

from __future__ import annotations

import typer

from kafka_txn_tools.cli import exit_codes

EPILOG = exit_codes.HELP_TEXT

app = typer.Typer(
    name="kafka-txn",
    help="Find, explain and safely abort hanging Kafka transactions.",
    epilog=EPILOG,
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _register() -> None:
    # Each import adds its commands to `app`; keep this list the single place commands are wired.
    from kafka_txn_tools.cli import (
        abort_cmd,  # noqa: F401
        broker_cmd,  # noqa: F401
        demo_cmd,  # noqa: F401
        describe_cmd,  # noqa: F401
        describe_producers_cmd,  # noqa: F401
        dump_cmd,  # noqa: F401
        find_hanging_cmd,  # noqa: F401
        force_terminate_cmd,  # noqa: F401
        list_cmd,  # noqa: F401
        share_group_cmd,  # noqa: F401
        sweep_cmd,  # noqa: F401
    )


_register()


def main() -> None:
    app()
