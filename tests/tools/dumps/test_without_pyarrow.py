"""Log-dir and dump-log text parsing need no pyarrow (an optional dependency: the spark extra): a child
process in which importing pyarrow fails reads the generated inputs and gets the rows this process gets."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kafka_txn_tools.dumps import logdir
from kafka_txn_tools.dumps.dump_log_text import parse_dump_log_text
from tests.no_pyarrow import BLOCK_PYARROW
from tests.support import generator as gen

READ = BLOCK_PYARROW + """
import json
from kafka_txn_tools.dumps.dump_log_text import parse_dump_log_text
from kafka_txn_tools.dumps.logdir import read_tree
producers, coordinators = read_tree(sys.argv[1])
text = [parse_dump_log_text(p) for p in sys.argv[2:]]
print(json.dumps({"logdir": [producers, coordinators], "text": text, "pyarrow": "pyarrow" in sys.modules}))
"""


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("no-pyarrow")
    cfg = gen.GeneratorConfig(seed=5, brokers=3, topics=1, partitions_per_topic=4, replication_factor=2)
    gen.write_logdirs(cfg, out / "logdir")
    gen.write_dump_log_text(cfg, out / "text")
    return out


def test_the_blocker_blocks() -> None:
    done = subprocess.run([sys.executable, "-c", BLOCK_PYARROW + "import pyarrow"], capture_output=True, text=True)
    assert done.returncode != 0 and "blocked in this test" in done.stderr


def test_log_dirs_and_dump_log_text_are_read_without_pyarrow(inputs: Path) -> None:
    texts = sorted(str(p) for p in (inputs / "text").glob("*.txt"))
    done = subprocess.run([sys.executable, "-c", READ, str(inputs / "logdir"), *texts], capture_output=True,
                          text=True, check=True)
    got = json.loads(done.stdout)
    assert got["pyarrow"] is False
    producers, coordinators = logdir.read_tree(inputs / "logdir")
    assert producers and coordinators
    assert got["logdir"] == json.loads(json.dumps([producers, coordinators]))
    assert got["text"] == json.loads(json.dumps([parse_dump_log_text(p) for p in texts]))
