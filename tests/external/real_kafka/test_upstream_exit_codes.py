"""`kafka-transactions` keeps upstream's exit codes, which runbooks test: each error path of upstream's own
TransactionsCommand, run with `java -cp` against the real cluster, and our front end with the same command line
exit with the same code. The expected code is upstream's run, never a table of ours: upstream exits 1 on every
error, argument errors and its help screen included, and runbooks written for it test `$?`.

Lines that make upstream wait out its admin client's 60 s timeout (an unknown topic) are left out: they exit 1 in
both, and tests/e2e covers ours.
"""

from __future__ import annotations

import contextlib
import io
import subprocess
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import pytest

from kafka_txn_tools.cli.upstream import run as ours
from tests.support.real_kafka import KafkaCluster, UpstreamTool

BS = "{bs}"  # the cluster's bootstrap servers, filled in per run
LINES: dict[str, list[str]] = {
    "no --bootstrap-server, no command": [],
    "no --bootstrap-server": ["list"],
    "no command": ["--bootstrap-server", BS],
    "unknown command": ["--bootstrap-server", BS, "bogus"],
    "unknown option": ["--bootstrap-server", BS, "list", "--bogus-flag"],
    "help": ["--help"],
    "find-hanging without a scope": ["--bootstrap-server", BS, "find-hanging"],
    "find-hanging --partition without --topic": ["--bootstrap-server", BS, "find-hanging", "--broker-id", "1",
                                                  "--partition", "0"],
    "find-hanging timeout out of Integer's range": ["--bootstrap-server", BS, "find-hanging", "--topic", "x",
                                                    "--max-transaction-timeout", "9999999999"],
    "abort without offset or producer": ["--bootstrap-server", BS, "abort", "--topic", "foo", "--partition", "0"],
    "abort without --partition": ["--bootstrap-server", BS, "abort", "--topic", "foo"],
    "abort --producer-id without its epoch": ["--bootstrap-server", BS, "abort", "--topic", "foo", "--partition", "0",
                                              "--producer-id", "5"],
    "abort --producer-id without the coordinator epoch": [
        "--bootstrap-server", BS, "abort", "--topic", "foo", "--partition", "0", "--producer-id", "5",
        "--producer-epoch", "1"],
    "abort epoch out of Short's range": ["--bootstrap-server", BS, "abort", "--topic", "foo", "--partition", "0",
                                         "--producer-id", "5", "--producer-epoch", "40000", "--coordinator-epoch",
                                         "0"],
    "describe without --transactional-id": ["--bootstrap-server", BS, "describe"],
    "describe of an unknown transactional id": ["--bootstrap-server", BS, "describe", "--transactional-id",
                                                "never-seen-anywhere"],
    "describe-producers partition not a number": ["--bootstrap-server", BS, "describe-producers", "--topic", "x",
                                                  "--partition", "zz"],
    "list --duration-filter not a number": ["--bootstrap-server", BS, "list", "--duration-filter", "abc"],
    "--command-config that does not exist": ["--bootstrap-server", BS, "--command-config",
                                             "/nonexistent/admin.properties", "list"],
    "forceTerminateTransaction without its id": ["--bootstrap-server", BS, "forceTerminateTransaction"],
    "list, no error": ["--bootstrap-server", BS, "list"],
}


def fill(line: Sequence[str], bs: str) -> list[str]:
    return [bs if arg == BS else arg for arg in line]


@pytest.fixture(scope="module")
def upstream_runs(real_kafka: KafkaCluster, upstream: UpstreamTool) -> dict[str, subprocess.CompletedProcess[str]]:
    """Every line run once by upstream's tool (two JVMs at a time: each takes a few seconds to start)."""
    bs = real_kafka.bootstrap_servers
    with ThreadPoolExecutor(2) as pool:
        runs = pool.map(lambda line: upstream.run(*fill(line, bs)), LINES.values())
        return dict(zip(LINES, runs, strict=True))


def ours_code(argv: list[str]) -> int:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):  # argparse writes to sys.stderr itself
        return ours(argv, out, err)


@pytest.mark.parametrize("case", list(LINES))
def test_kafka_transactions_exits_with_upstreams_code(
        case: str, real_kafka: KafkaCluster, upstream_runs: dict[str, subprocess.CompletedProcess[str]]) -> None:
    theirs = upstream_runs[case]
    assert "Exception in thread" not in theirs.stderr, theirs.stderr  # upstream ran, and ended by its own choice
    mine = ours_code(fill(LINES[case], real_kafka.bootstrap_servers))
    assert mine == theirs.returncode, (case, theirs.stdout[-500:], theirs.stderr[-500:])


def test_upstream_exits_1_on_every_error_here(upstream_runs: dict[str, subprocess.CompletedProcess[str]]) -> None:
    """What the cases above hold ours to: a fact of upstream's tool, checked on the release under test."""
    codes = {case: run.returncode for case, run in upstream_runs.items()}
    assert codes.pop("list, no error") == 0
    assert set(codes.values()) == {1}, codes
