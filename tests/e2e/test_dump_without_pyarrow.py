"""`kafka-txn dump --format jsonl` needs no pyarrow (the spark extra's): run as a child process in which
importing pyarrow fails, against a live cluster holding an open transaction. `--format parquet` there
says what to install, and writes nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafka_txn_broker import EmbeddedCluster
from tests.e2e.cli_support import open_transaction
from tests.no_pyarrow import BLOCK_PYARROW

RUN_WITHOUT_PYARROW = BLOCK_PYARROW + """
import runpy
sys.argv = ["kafka-txn", *sys.argv[1:]]
runpy.run_module("kafka_txn_tools", run_name="__main__")
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(nodes=1, data_dir=tmp_path_factory.mktemp("kafka")) as c:
        c.create_topic("orders", 1, 1)
        producer = open_transaction(c.bootstrap_servers, "no-pyarrow-app", "orders", [0])
        yield c
        producer.abort_transaction(30)


def dump(cluster: EmbeddedCluster, out: Path, fmt: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", RUN_WITHOUT_PYARROW, "dump", "--all", "--out", str(out),
                           "--format", fmt, "--bootstrap-server", cluster.bootstrap_servers, "--timeout", "20s"],
                          capture_output=True, text=True, timeout=120)


def test_dump_jsonl_without_pyarrow(cluster: EmbeddedCluster, tmp_path: Path) -> None:
    done = dump(cluster, tmp_path / "dump", "jsonl")
    assert done.returncode == 0, done.stderr
    manifest = json.loads((tmp_path / "dump" / "manifest.json").read_text())
    assert manifest["format"] == "jsonl"
    rows = [json.loads(line) for f in sorted((tmp_path / "dump" / "producers").glob("*.jsonl"))
            for line in f.read_text().splitlines()]
    assert [(r["topic"], r["partition"]) for r in rows if r["current_txn_start_offset"] >= 0] == [("orders", 0)]
    txns = [json.loads(line) for f in sorted((tmp_path / "dump" / "transactions").glob("*.jsonl"))
            for line in f.read_text().splitlines()]
    assert {t["transactional_id"]: t["state"] for t in txns} == {"no-pyarrow-app": "Ongoing"}


def test_dump_parquet_without_pyarrow_says_what_to_install(cluster: EmbeddedCluster, tmp_path: Path) -> None:
    done = dump(cluster, tmp_path / "dump", "parquet")
    assert done.returncode == 1
    assert "pip install pyarrow" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "dump").exists() or not any((tmp_path / "dump").rglob("*.parquet"))
