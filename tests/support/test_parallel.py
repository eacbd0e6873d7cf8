"""The worker groups of a parallel run (tests/support/parallel.py)."""

from __future__ import annotations

import re
from pathlib import Path

from tests.support.parallel import INSTALLATION_MODULES, group_of

ROOT = Path(__file__).resolve().parents[2]


def test_a_module_is_its_own_group() -> None:
    assert group_of("tests/tools/cli/test_commands.py::test_a[x-1]") == \
        "tests/tools/cli/test_commands.py"
    assert group_of("tests/test_docs.py::test_b") == "tests/test_docs.py"


def test_one_external_package_shares_one_worker_and_its_clusters() -> None:
    assert group_of("tests/external/real_kafka/test_harness.py::test_a") \
        == group_of("tests/external/real_kafka/test_sweep_real.py::test_b[4.4.0]") == "tests/external/real_kafka"
    assert group_of("tests/external/fidelity/test_fidelity.py::test_c") == "tests/external/fidelity"


def test_the_installed_wheel_is_built_once() -> None:
    assert group_of("tests/test_installed.py::test_a") == group_of("tests/tools/spark/test_cluster.py::test_b") \
        == "installation"


def test_every_module_using_the_installation_is_in_its_group() -> None:
    takes = re.compile(r"def test_\w+\([^)]*\binstallation\b", re.S)
    users = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests").rglob("test_*.py") if takes.search(p.read_text()))
    assert users == sorted(INSTALLATION_MODULES)
