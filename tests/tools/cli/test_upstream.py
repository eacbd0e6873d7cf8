"""`kafka-transactions`: upstream's argument errors and validation texts (no cluster needed). Malformed input
exits 1, as upstream's TransactionsCommand (tests/external/real_kafka/test_upstream_exit_codes.py compares each
error path's code with upstream's own run)."""

from __future__ import annotations

import io

import pytest

from kafka_txn_tools.cli.upstream import run


def call(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    try:
        code = run(list(argv), out, err)
    except SystemExit as exc:  # argparse prints to sys.stderr itself
        code = int(exc.code or 0)
    return code, out.getvalue(), err.getvalue()


def test_bootstrap_server_is_required(capsys) -> None:
    code, _, _ = call("list")
    assert code == 1
    assert "kafka-transactions.sh: error: argument --bootstrap-server is required" in capsys.readouterr().err


def test_java_style_conversion_errors(capsys) -> None:
    code, _, _ = call("--bootstrap-server", "b:9092", "describe-producers", "--topic", "t", "--partition", "x")
    assert code == 1
    assert ("argument --partition: could not convert 'x' to Integer (For input string: \"x\")"
            in capsys.readouterr().err)


@pytest.mark.parametrize("argv, message", [
    (["abort", "--topic", "t", "--partition", "0"],
     "The transaction to abort must be identified either with --start-offset (for brokers on 3.0 or above) or "
     "with --producer-id, --producer-epoch, and --coordinator-epoch (for older brokers)"),
    (["abort", "--topic", "t", "--partition", "0", "--producer-id", "5"], "Missing required argument --producer-epoch"),
    (["abort", "--topic", "t", "--partition", "0", "--producer-id", "5", "--producer-epoch", "1"],
     "Missing required argument --coordinator-epoch"),
    (["find-hanging"], "The `find-hanging` command requires either --topic or --broker-id to limit the scope of "
                       "the search"),
    (["find-hanging", "--broker-id", "1", "--partition", "0"], "The --partition argument requires --topic to be "
                                                                "provided"),
])
def test_validation_errors_before_connecting(argv, message) -> None:
    code, out, err = call("--bootstrap-server", "127.0.0.1:1", *argv)
    assert (code, out, err) == (1, "", message + "\n")


def test_unreachable_cluster_fails_the_upstream_way(tmp_path) -> None:
    config = tmp_path / "admin.properties"
    config.write_text("default.api.timeout.ms=300\n")
    code, out, err = call("--bootstrap-server", "127.0.0.1:1", "--command-config", str(config), "list")
    assert code == 1 and out == ""
    assert err.startswith("Failed to list transactions: cannot connect to the cluster: 127.0.0.1:1 refused the "
                          "connection")
    assert err.endswith(". Enable debug logging for additional detail.\n")


def test_command_config_errors(tmp_path) -> None:
    code, _, err = call("--bootstrap-server", "b:1", "--command-config", str(tmp_path / "nope"), "list")
    assert code == 1 and err.startswith("Failed to load admin client properties: --command-config")
