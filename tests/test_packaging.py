"""The distribution's packages are the folders that carry their import names."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _wheel_packages() -> list[Path]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return [ROOT / p for p in config["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"]]


def test_each_shipped_folder_is_named_as_it_is_imported() -> None:
    assert {p.name for p in _wheel_packages()} == {"kafka_txn_broker", "kafka_txn_tools"}
    for package in _wheel_packages():
        assert (package / "__init__.py").is_file(), package


def test_every_folder_of_python_modules_is_a_regular_package() -> None:
    # A folder of modules without __init__.py would ship as a namespace package: mypy -p skips it.
    for package in _wheel_packages():
        for module in package.rglob("*.py"):
            folder = module.parent
            assert (folder / "__init__.py").is_file(), f"{folder.relative_to(ROOT)} has no __init__.py"
