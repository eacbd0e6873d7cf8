"""The distribution lists every package: an editable install hides a missing one, a wheel would not."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Source directory of each top-level import name, as pyproject's package-dir maps them.
SOURCES = {"kafka_txn_broker": ROOT / "broker", "kafka_txn_tools": ROOT / "kafka_txn_tools"}


def _packages_on_disk() -> set[str]:
    found = set()
    for name, top in SOURCES.items():
        for init in top.rglob("__init__.py"):
            rel = init.parent.relative_to(top)
            found.add(".".join((name, *rel.parts)))
    return found


def test_every_package_on_disk_is_in_the_distribution() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    listed = set(config["tool"]["setuptools"]["packages"])
    assert _packages_on_disk() - listed == set()
    assert listed - _packages_on_disk() == set()
