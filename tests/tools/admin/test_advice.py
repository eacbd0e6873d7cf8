"""Printed commands (admin/advice.py): complete lines with the connection options the scan used, quoted for a
POSIX shell, never a secret."""

from __future__ import annotations

import shlex
from pathlib import Path

from kafka_txn_tools.admin import advice
from kafka_txn_tools.models import TopicPartition


def test_the_options_given_are_repeated_and_a_relative_properties_file_becomes_absolute(tmp_path: Path,
                                                                                         monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    inv = advice.Invocation.of("k1:9092,k2:9092", None, Path("admin.properties"), "ignored:1")
    line = advice.abort(inv, TopicPartition("orders", 3), 116)
    assert shlex.split(line) == ["kafka-txn", "abort", "--topic", "orders", "--partition", "3", "--start-offset",
                                 "116", "--bootstrap-server", "k1:9092,k2:9092", "--command-config",
                                 str(tmp_path / "admin.properties")]


def test_a_cluster_found_in_the_environment_is_named_explicitly_and_a_profile_stands_for_itself() -> None:
    assert advice.Invocation.of(None, None, None, "from-env:9092").options() == ["--bootstrap-server",
                                                                                  "from-env:9092"]
    assert advice.Invocation.of(None, None, "/etc/admin.properties", "from-env:9092").options() == [
        "--bootstrap-server", "from-env:9092", "--command-config", "/etc/admin.properties"]
    assert advice.Invocation.of(None, "prod", None, "from-profile:9092").options() == ["--profile", "prod"]
    assert advice.Invocation().options() == []


def test_odd_ids_survive_a_copy_and_paste() -> None:
    line = advice.force_terminate(advice.Invocation("k:9092"), "orders writer's \"1\"", force=True)
    assert shlex.split(line) == ["kafka-txn", "force-terminate", "--transactional-id", "orders writer's \"1\"",
                                 "--force", "--bootstrap-server", "k:9092"]
    assert advice.is_command_line("    " + line) and not advice.is_command_line("  do: kafka-txn abort it")


def test_the_same_command_twice_is_printed_once_in_order() -> None:
    assert advice.unique(["b", "a", "b", "c", "a"]) == ("b", "a", "c")
