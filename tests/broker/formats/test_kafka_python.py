"""kafka-python imported, and message classes built, without the deprecation warnings of its schema loader:
each check runs in a fresh interpreter with DeprecationWarning as an error, so that nothing imported before
(by pytest or other tests) hides a warning."""

from __future__ import annotations

import subprocess
import sys

import pytest

EVERY_MODULE = """
import importlib, pkgutil
from kafka_txn_broker.formats.messages import kafka_python
kafka_python.load()
import kafka_txn_broker, kafka_txn_tools
for package in (kafka_txn_broker, kafka_txn_tools):
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        if not info.name.endswith("__main__"):
            importlib.import_module(info.name)
"""

CHECKS = {
    # After load(), no module of this project builds a message class that warns (the broker's own share-group
    # messages, the tools' WriteTxnMarkersRequest with its KIP-664 field).
    "every module after load": EVERY_MODULE,
    # The entry points a user's code imports first.
    "EmbeddedCluster": "from kafka_txn_broker import EmbeddedCluster",
    "the share clients": "import kafka_txn_tools.clients",
    "a message built on first use": "from kafka_txn_broker.formats.messages import ShareFetchRequest",
}


@pytest.mark.parametrize("code", CHECKS.values(), ids=CHECKS.keys())
def test_no_deprecation_warning(code: str) -> None:
    done = subprocess.run([sys.executable, "-W", "error::DeprecationWarning", "-c", code],
                          capture_output=True, text=True, timeout=120, check=False)
    assert (done.returncode, done.stderr) == (0, "")


def test_the_loader_warns_without_it() -> None:
    # What the checks above guard against: kafka-python's import alone warns on this Python.
    if sys.version_info[:2] not in ((3, 11), (3, 12)):
        pytest.skip("the legacy importlib.resources functions warn on Python 3.11 and 3.12 only")
    done = subprocess.run([sys.executable, "-W", "error::DeprecationWarning", "-c", "import kafka"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 1 and "read_text is deprecated" in done.stderr
