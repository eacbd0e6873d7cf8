"""One local SparkSession for the whole test run, and generated data sets with ground truth."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from kafka_txn_tools.spark.session import JAVA_MISSING, find_java

# Small but complete: every injected case, replication 3, several brokers.
GEN_CONFIG: dict[str, Any] = {"seed": 5, "brokers": 3, "topics": 3, "partitions_per_topic": 6}


def require_java() -> None:
    if find_java() is None:
        pytest.fail(f"Spark tests need java: {JAVA_MISSING}; `bash scripts/dev.sh setup` installs it", pytrace=False)


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    require_java()
    from kafka_txn_tools.spark.session import get_session

    session = get_session("local[2]", app_name="kafka-txn-tests")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def generated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[list[str], dict[str, Any]]]:
    """kind -> (sweep inputs, ground truth) for dump (Parquet), jsonl, logdir and text."""
    from tests.support import generator as gen

    cfg = gen.GeneratorConfig(**GEN_CONFIG)
    root = tmp_path_factory.mktemp("generated")
    gen.write_dump(cfg, root / "dump")
    gen.write_dump(cfg, root / "jsonl", "jsonl")
    gen.write_logdirs(cfg, root / "logdir")
    gen.write_dump_log_text(cfg, root / "text")
    out = {}
    for kind in ("dump", "jsonl", "logdir"):
        out[kind] = ([str(root / kind)], json.loads((root / kind / "ground-truth.json").read_text()))
    texts = sorted(str(p) for p in (root / "text").glob("*.txt"))
    out["text"] = (texts, json.loads((root / "text" / "ground-truth.json").read_text()))
    return out
