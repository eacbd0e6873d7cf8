"""One error style for every failure of `kafka-txn`: `error: <what>: <fix>` on stderr, and an exit code.

Usage errors found by the argument parser get the same style (not click's "Usage: ... Error: ..."
block), expected failures of the admin layer become messages, and no user error ends in a stack
trace; KAFKA_TXN_DEBUG=1 shows one for a bug report.

Light imports only (typer, stdlib): the admin errors load inside the handlers.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, NoReturn

import typer
from typer._click import Context, HelpFormatter
from typer._click.exceptions import ClickException, NoArgsIsHelpError, UsageError
from typer.core import TyperCommand, TyperGroup
from typer.exceptions import Abort, Exit

from kafka_txn_tools.cli import exit_codes

PROG = "kafka-txn"


def say(message: str) -> None:
    """A message on stderr, wrapped at word boundaries to the terminal's width ($COLUMNS, else the
    terminal's; never when stderr is piped, so logs keep one line per message). Continuation lines are
    indented; a `command in backticks` or a word longer than the width is never broken."""
    from kafka_txn_tools.cli.render import wrap_words
    from kafka_txn_tools.cli.terminal import table_width

    width = table_width(sys.stderr)
    lines = wrap_words(message, None if width is None else max(width - 2, 20))
    typer.echo("\n".join([lines[0], *(f"  {line}" for line in lines[1:])]), err=True)


def warn(message: str) -> None:
    say(f"warning: {message}")


def note(message: str) -> None:
    say(f"note: {message}")


def fail(message: str, code: int = exit_codes.ERROR) -> NoReturn:
    say(f"error: {message}")
    raise typer.Exit(code)


def exit_code_for(exc: BaseException) -> int:
    from kafka_txn_tools.errors import MissingApi, NothingToDo, UsageError

    if isinstance(exc, UsageError):
        return exit_codes.USAGE
    if isinstance(exc, NothingToDo):
        return exit_codes.ALREADY_DONE
    if isinstance(exc, MissingApi):
        return exit_codes.UNSUPPORTED
    return exit_codes.ERROR


def debugging() -> bool:
    return bool(os.environ.get("KAFKA_TXN_DEBUG"))


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn expected failures into `error: ...` and an exit code; KAFKA_TXN_DEBUG=1 shows tracebacks."""
    from kafka_txn_tools.errors import KafkaTxnError, NothingToDo

    try:
        yield
    except NothingToDo as exc:
        # Not a failure: a re-run of something already done (scripts see exit code 4).
        say(f"nothing to do: {exc}")
        raise typer.Exit(exit_codes.ALREADY_DONE) from None
    except KafkaTxnError as exc:
        if debugging():
            raise
        fail(str(exc), exit_code_for(exc))
    except KeyboardInterrupt:
        typer.echo("interrupted", err=True)
        raise typer.Exit(130) from None
    except OSError as exc:
        # A file or directory the user named (an --out under a regular file, a full disk...).
        if debugging():
            raise
        where = f"{exc.filename}: " if exc.filename else ""
        fail(f"{where}{exc.strerror or exc}")
    except Exception as exc:
        if debugging() or not type(exc).__module__.startswith("kafka."):
            raise
        # A kafka-python error we did not translate: still a message, not a traceback.
        fail(f"Kafka request failed: {type(exc).__name__}: {exc} (set KAFKA_TXN_DEBUG=1 for details)")


def report_errors(errors: Sequence[Any]) -> None:
    """Partial failures of a scan, one line each on stderr (machine formats also carry them)."""
    for err in errors[:50]:
        warn(err.message)
    if len(errors) > 50:
        warn(f"... and {len(errors) - 50} more errors (use --output json to see all)")


def _usage_message(exc: UsageError) -> str:
    message = exc.format_message()
    message = message[:1].lower() + message[1:] if message[:2] != message[:2].upper() else message
    path = exc.ctx.command_path if exc.ctx is not None else PROG
    return f"{message} (see `{path} --help`)"


class KafkaTxnGroup(TyperGroup):
    """The `kafka-txn` group: click's own errors printed in the project's one error style."""

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,  # type: ignore[override]
             complete_var: str | None = None, standalone_mode: bool = True, **extra: Any) -> Any:
        try:
            rv = super().main(args=args, prog_name=prog_name or PROG, complete_var=complete_var,
                              standalone_mode=False, **extra)
        except NoArgsIsHelpError as exc:
            typer.echo(exc.format_message(), err=True)
            rv = exit_codes.USAGE
        except UsageError as exc:
            say(f"error: {_usage_message(exc)}")
            rv = exit_codes.USAGE
        except ClickException as exc:
            say(f"error: {exc.format_message()}")
            rv = exc.exit_code
        except Abort:
            typer.echo("interrupted", err=True)
            rv = 130
        except Exit as exc:
            rv = exc.exit_code
        if not standalone_mode:
            return rv
        sys.exit(rv if isinstance(rv, int) else 0)


# Python type names typer appends to arguments (choices, like <table|json>, are useful and stay).
_TYPE_LABEL = re.compile(r"(?<=\S) <(?:list\[\w+\]|str|int|float|bool|Path|path|file|directory)>")


class KafkaTxnCommand(TyperCommand):
    """A command whose help shows metavars only: typer would add Python type names (`<list[str]>`)."""

    def format_help(self, ctx: Context, formatter: HelpFormatter) -> None:
        super().format_help(ctx, formatter)
        text = "".join(formatter.buffer)
        formatter.buffer[:] = [_TYPE_LABEL.sub("", text)]
