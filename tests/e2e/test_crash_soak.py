"""Bounded crash soak (the full one: tests/benchmarks/crash_soak.py): 20 transactional producers,
the broker killed with SIGKILL 3 times at random moments; after every restart a read_committed
consumer must see exactly the committed transactions (see tests/e2e/soak.py for the checks)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.soak import SoakConfig, run_soak


# A producer closed while its commit is in flight (the broker was just killed under it) says so in a warning.
@pytest.mark.filterwarnings("ignore:Producer abort_transaction failed during close:RuntimeWarning")
def test_kill9_under_transactional_load_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    config = SoakConfig(producers=20, kills=3, partitions=6, nodes=1, seed=11)
    reports, summary = run_soak(config, tmp_path)
    print(summary)
    assert [r.kill for r in reports] == [1, 2, 3]
    last = reports[-1]  # the ledger is cumulative: the last check covers every transaction
    assert last.committed > 50 and last.aborted > 5, summary  # the load really ran
    assert last.records_read > 0
    assert last.aborted_in_log > 0, summary  # aborted data is in the log: the read_committed check bites
