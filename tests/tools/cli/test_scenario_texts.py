"""What `kafka-txn broker scenario` tells a person (each scenario's incident and what clears it) names only
options that exist, and the scenario command takes what a rehearsal on a real cluster needs."""

from __future__ import annotations

import inspect
import re

import typer
from typer.testing import CliRunner

from kafka_txn_broker.testing import scenarios
from kafka_txn_tools.cli.app import app


def all_options() -> set[str]:
    """Every option of every kafka-txn command, `broker start`'s and `broker scenario`'s included."""
    found: set[str] = set()

    def walk(command: object) -> None:
        for param in getattr(command, "params", []):
            found.update(o for o in (*param.opts, *param.secondary_opts) if o.startswith("--"))
        for sub in getattr(command, "commands", {}).values():
            walk(sub)

    walk(typer.main.get_command(app))
    return found


def test_every_option_a_scenario_text_names_exists() -> None:
    texts = inspect.getsource(scenarios)  # docstrings (the incidents) and the `clears` strings alike
    named = set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", texts))
    assert named, "the scenario texts name options"
    assert named - all_options() == set()


def test_the_scenario_command_reaches_a_secured_cluster_and_lists_every_scenario() -> None:
    r = CliRunner().invoke(app, ["broker", "scenario", "--help"], env={"COLUMNS": "200"})
    assert "--command-config" in r.stdout and "--open-timeout-ms" in r.stdout
    command = typer.main.get_command(app).commands["broker"].commands["scenario"]  # type: ignore[attr-defined]
    [name_help] = [p.help for p in command.params if p.name == "name"]
    for name in scenarios.SCENARIOS:
        assert name in name_help
