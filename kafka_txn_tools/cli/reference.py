"""The CLI reference page, docs/cli.md, generated from the two front ends themselves.

    python -m kafka_txn_tools.cli.reference > docs/cli.md

It walks the typer app of `kafka-txn` (every command and subcommand, its arguments and options with
their type, default and help, the options several commands share listed once) and the argparse parser
of `kafka-transactions`, and prints Markdown. tests/tools/cli/test_reference.py fails when
docs/cli.md differs from this output, so the page always says what `--help` says.

The output depends on nothing but the code: not the terminal width, the environment or the clock.
Light imports only, as for `kafka-txn --help`.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum

import typer
from typer._click import Context
from typer.core import TyperArgument, TyperGroup, TyperOption, _TyperParameter

from kafka_txn_tools.cli import exit_codes

REGENERATE = "python3 -m kafka_txn_tools.cli.reference > docs/cli.md"
KAFKA_TXN = "kafka-txn"
KAFKA_TRANSACTIONS = "kafka-transactions"

INTRO = f"""\
# CLI reference

<!-- Generated from the applications by `{REGENERATE}`; a test fails when this page
differs from the generator's output. Change the help texts in kafka_txn_tools/cli/, then regenerate. -->

Two front ends share the same flows: [`{KAFKA_TXN}`](#{KAFKA_TXN}), the toolkit's own command line, and
[`{KAFKA_TRANSACTIONS}`](#{KAFKA_TRANSACTIONS}), which accepts upstream `kafka-transactions.sh` syntax.
What the commands do in practice, and how their writes are kept safe: [commands.md](commands.md).
Every command also takes `-h` / `--help`.
"""

# Words a type is shown with; anything else is shown as typer names it.
_TYPE_WORDS = {"str": "text", "int": "integer", "float": "number", "bool": "flag", "Path": "path"}


@dataclass(frozen=True)
class Row:
    """One argument or option as the reference shows it."""

    names: str
    type: str
    default: str
    help: str


def _code(text: str, in_table: bool = True) -> str:
    body = text.replace("|", "\\|") if in_table else text
    return f"`{body}`"


def _prose(text: str, in_table: bool = False) -> str:
    """Help text as Markdown: its `code` spans kept, everything else literal (no accidental emphasis)."""
    parts = text.split("`")
    if len(parts) % 2 == 0:  # an unpaired backtick: all of it is prose
        parts = [text]
    out = []
    for i, part in enumerate(parts):
        if i % 2:
            out.append(_code(part, in_table))
        else:
            out.append(re.sub(r"([\\*_<>\[\]|])", r"\\\1", part))
    return "".join(out)


def _paragraphs(text: str) -> Iterator[str]:
    """Help text in Markdown blocks: click's `\\b` paragraphs keep their lines (a code block), the rest
    is prose joined into one line."""
    for paragraph in text.strip().split("\n\n"):
        if paragraph.startswith("\b"):
            yield "```\n" + paragraph[1:].strip("\n") + "\n```"
        elif paragraph.strip():
            yield _prose(" ".join(line.strip() for line in paragraph.splitlines()))


def _help_blocks(*texts: str | None) -> str:
    blocks = [b for t in texts if t for b in _paragraphs(t) if b != _prose(exit_codes.HELP_TEXT)]
    return "\n\n".join(blocks)


# --- kafka-txn (typer) ---------------------------------------------------------------------------

def _typer_type(param: _TyperParameter, ctx: Context) -> str:
    if isinstance(param, TyperOption) and param.is_flag:
        return "flag"
    label = param.display_type(ctx).strip("<>")
    label = re.sub(r"^list\[(.+)\]$", r"\1", label)
    if "|" in label:
        text = "one of " + ", ".join(_code(choice) for choice in label.split("|"))
    elif label.endswith(" range"):
        text = _TYPE_WORDS.get(label.removesuffix(" range"), label) + _bounds(param)
    else:
        text = _TYPE_WORDS.get(label, label)
    if param.multiple:
        text += ", repeatable"
    if param.nargs == -1:
        text += ", any number"
    return text


def _bounds(param: _TyperParameter) -> str:
    low, high = getattr(param, "min", None), getattr(param, "max", None)
    if low is not None and high is not None:
        return f", {low} to {high}"
    if low is not None:
        return f", at least {low}"
    return f", at most {high}" if high is not None else ""


def _typer_default(param: _TyperParameter) -> str:
    if param.required:
        return "required"
    default = param.default
    if isinstance(param, TyperOption) and param.is_flag:
        if param.secondary_opts:
            return _code(param.opts[0] if default else param.secondary_opts[0])
        return "on" if default else "off"
    if default is None or default == [] or default == ():
        return ""
    if isinstance(default, Enum):
        default = default.value
    return _code(str(default))


def _typer_names(param: _TyperParameter) -> str:
    if isinstance(param, TyperArgument):
        return _code(param.metavar or param.name.upper() if param.name else "")
    names = sorted(param.opts, key=lambda o: (o.startswith("--"), o))
    text = ", ".join(names)
    if param.secondary_opts:
        text += " / " + ", ".join(param.secondary_opts)
    takes_value = not (isinstance(param, TyperOption) and param.is_flag)
    if takes_value and param.metavar:
        text += f" {param.metavar}"
    return _code(text)


def _typer_row(param: _TyperParameter, ctx: Context) -> Row:
    help_text = _prose(getattr(param, "help", None) or "", in_table=True)
    if param.envvar:
        envvars = [param.envvar] if isinstance(param.envvar, str) else list(param.envvar)
        help_text += " (environment: " + ", ".join(_code(v) for v in envvars) + ")"
    return Row(_typer_names(param), _typer_type(param, ctx), _typer_default(param), help_text.strip())


def _table(rows: list[Row], first: str = "option") -> str:
    lines = [f"| {first} | type | default | help |", "|---|---|---|---|"]
    lines += [f"| {r.names} | {r.type} | {r.default} | {r.help} |" for r in rows]
    return "\n".join(lines)


def _walk(command: typer.core.TyperCommand | TyperGroup, path: str, parent: Context | None = None,
          ) -> Iterator[tuple[str, typer.core.TyperCommand | TyperGroup, Context]]:
    ctx = Context(command, info_name=path.rsplit(" ", 1)[-1], parent=parent)
    yield path, command, ctx
    if isinstance(command, TyperGroup):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                yield from _walk(sub, f"{path} {name}", ctx)  # type: ignore[arg-type]


def _panel_slug(panel: str) -> str:
    return f"{panel.lower()}-options"


def _shared_rows(commands: list[tuple[str, typer.core.TyperCommand | TyperGroup, Context]]) -> dict[str, list[Row]]:
    """The options of each help panel (Connection, Output, Safety) that two or more commands declare
    alike, to be listed once; an option only one command has, or words differently, stays in its table."""
    seen: dict[str, dict[Row, int]] = {}
    for _, command, ctx in commands:
        for param in command.params:
            panel = getattr(param, "rich_help_panel", None)
            if panel and isinstance(param, _TyperParameter) and not getattr(param, "hidden", False):
                counts = seen.setdefault(panel, {})
                row = _typer_row(param, ctx)
                counts[row] = counts.get(row, 0) + 1
    shared = {panel: [row for row, n in counts.items() if n > 1] for panel, counts in seen.items()}
    return {panel: rows for panel, rows in shared.items() if rows}


def _usage(path: str, command: typer.core.TyperCommand | TyperGroup, ctx: Context) -> str:
    return f"```\n{path} {' '.join(command.collect_usage_pieces(ctx))}\n```"


def _command_section(path: str, command: typer.core.TyperCommand | TyperGroup, ctx: Context,
                     shared: dict[str, list[Row]]) -> str:
    own: list[Row] = []
    uses: dict[str, list[str]] = {}
    for param in command.params:
        if not isinstance(param, _TyperParameter) or getattr(param, "hidden", False):
            continue
        row = _typer_row(param, ctx)
        panel = getattr(param, "rich_help_panel", None)
        if panel and row in shared.get(panel, []):
            uses.setdefault(panel, []).append(row.names)
        else:
            own.append(row)
    parts = [f"### {path}", _usage(path, command, ctx)]
    if command.help:
        parts.append(_help_blocks(command.help))
    if isinstance(command, TyperGroup):
        subs = [n for n in command.list_commands(ctx) if (c := command.get_command(ctx, n)) and not c.hidden]
        parts.append("Commands: " + ", ".join(f"[`{n}`](#{_slug(f'{path} {n}')})" for n in subs) + ".")
    if own:
        parts.append(_table(own))
    if uses:
        parts.append("Also takes the " + "; the ".join(
            f"[{panel.lower()} options](#{_panel_slug(panel)}) {', '.join(names)}" for panel, names in uses.items())
            + ".")
    if command.epilog:
        epilog = _help_blocks(command.epilog)
        if epilog:
            parts.append(epilog)
    return "\n\n".join(parts)


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def _kafka_txn() -> str:
    from kafka_txn_tools.cli.app import app

    root = typer.main.get_command(app)
    commands = list(_walk(root, KAFKA_TXN))  # type: ignore[arg-type]
    _, _, root_ctx = commands[0]
    shared = _shared_rows(commands[1:])
    parts = [f"## {KAFKA_TXN}", _usage(KAFKA_TXN, root, root_ctx)]  # type: ignore[arg-type]
    parts.append(_help_blocks(root.help, root.epilog))
    parts.append(_prose(exit_codes.HELP_TEXT))
    parts.append(_table([_typer_row(p, root_ctx) for p in root.params if isinstance(p, _TyperParameter)]))
    parts.append("Commands:\n\n" + "\n".join(
        f"- [`{path}`](#{_slug(path)}): {_prose(cmd.get_short_help_str(limit=1000))}"
        for path, cmd, _ in commands[1:]))
    for panel, rows in shared.items():
        parts.append(f"### {panel} options\n\nThe commands that name them below take these, declared once.\n\n"
                     + _table(rows))
    parts += [_command_section(path, cmd, ctx, shared) for path, cmd, ctx in commands[1:]]
    return "\n\n".join(parts)


# --- kafka-transactions (argparse) ---------------------------------------------------------------

def _argparse_type(action: argparse.Action) -> str:
    if action.nargs == 0:
        return "flag"
    if action.type is None:
        return "text"
    name = getattr(action.type, "__name__", str(action.type))
    return f"{name} (Java)" if name in ("Integer", "Long", "Short") else _TYPE_WORDS.get(name, name)


def _argparse_row(action: argparse.Action) -> Row:
    names = ", ".join(action.option_strings) or action.dest
    if action.nargs != 0 and action.option_strings:
        names += f" {action.metavar or action.dest.upper()}"
    if action.required:
        default = "required"
    elif action.nargs == 0:
        default = "off"
    else:
        default = "" if action.default is None else _code(str(action.default))
    return Row(_code(names), _argparse_type(action), default, _prose(action.help or "", in_table=True))


def _argparse_usage(parser: argparse.ArgumentParser) -> str:
    formatter = argparse.HelpFormatter(parser.prog, width=1000)
    formatter.add_usage(parser.usage, parser._actions, parser._mutually_exclusive_groups, prefix="")
    return f"```\n{formatter.format_help().strip()}\n```"


def _argparse_options(parser: argparse.ArgumentParser) -> list[str]:
    parts = []
    for group in parser._action_groups:
        rows = [_argparse_row(a) for a in group._group_actions
                if not isinstance(a, argparse._HelpAction | argparse._SubParsersAction)]
        if not rows:
            continue
        if group.title not in ("options", "optional arguments", "positional arguments"):
            parts.append(f"{_prose(group.title or '')}: {_prose(group.description or '')}")
        parts.append(_table(rows))
    return parts


def _kafka_transactions() -> str:
    from kafka_txn_tools.cli.upstream.parser import PROG, build_parser

    parser = build_parser()
    parts = [f"## {KAFKA_TRANSACTIONS}", _argparse_usage(parser), _prose(parser.description or ""),
             f"Usage lines and error texts name it `{PROG}`, as upstream's do; a failure prints upstream's "
             "message on stderr and exits 1, argument errors included."]
    parts += _argparse_options(parser)
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = {choice.dest: choice.help for choice in subparsers._choices_actions}
    parts.append("Commands:\n\n" + "\n".join(
        f"- [`{name}`](#{_slug(f'{KAFKA_TRANSACTIONS} {name}')}): {_prose(helps.get(name) or '')}"
        for name in subparsers.choices))
    for name, sub in subparsers.choices.items():
        parts += [f"### {KAFKA_TRANSACTIONS} {name}", _argparse_usage(sub)]
        if sub.description:
            parts.append(_prose(sub.description))
        elif helps.get(name):
            parts.append(_prose(helps[name] or ""))
        parts += _argparse_options(sub)
    return "\n\n".join(parts)


def render() -> str:
    """The whole page, ending in one newline."""
    return "\n\n".join([INTRO.strip(), _kafka_txn(), _kafka_transactions()]) + "\n"


def main() -> None:
    sys.stdout.write(render())


if __name__ == "__main__":
    main()
