"""Generated data sets with ground truth (the local SparkSession of the whole run, `spark`, is tests/conftest.py's)."""

from __future__ import annotations

import json
from typing import Any

import pytest

# Small but complete: every injected case, replication 3, several brokers.
GEN_CONFIG: dict[str, Any] = {"seed": 5, "brokers": 3, "topics": 3, "partitions_per_topic": 6}


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
