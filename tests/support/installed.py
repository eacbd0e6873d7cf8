"""The project as a user installs it: the sdist and the wheel built from this checkout as an index would get
them (`python -m build`: the wheel is built from the sdist, so the sdist is complete), the wheel installed (not
editable) with its [spark] extra into a fresh venv (no system site-packages: its dependencies come from the
index or pip's cache) by the install line docs/install.md gives, and commands run from a folder outside the
checkout with nothing set in the environment: no PYTHONPATH, no PYSPARK_PYTHON, no JAVA_HOME, and `python3` on
PATH another interpreter (a bare venv), as on a machine where the tool lives in a venv, pipx or conda.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# The line docs/install.md tells a user to run, in the folder that holds dist/ (checked to be there verbatim).
INSTALL_LINE = "pip install --find-links dist/ 'kafka-txn-tools[spark]'"
# What a user's own tests need besides the package (the kafka_cluster fixture is a pytest plugin).
USER_TEST_REQUIREMENTS = ["pytest"]


@dataclass(frozen=True)
class Installation:
    """Built distributions and a venv with the wheel installed, under `base`."""

    base: Path

    @property
    def dist(self) -> Path:
        return self.base / "dist"

    @property
    def venv(self) -> Path:
        return self.base / "venv"

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    @property
    def bare_python(self) -> Path:
        """A Python without the tool or any package: `python3` on the commands' PATH."""
        return self.base / "bare" / "bin" / "python3"

    @property
    def work(self) -> Path:
        """The folder commands run in: outside the checkout, empty at first."""
        return self.base / "work"

    def bin(self, name: str) -> str:
        return str(self.venv / "bin" / name)

    def env(self) -> dict[str, str]:
        """Nothing set: a HOME of its own and a PATH where `python3` is not the tool's interpreter."""
        return {"HOME": str(self.base / "home"), "PATH": f"{self.bare_python.parent}:/usr/bin:/bin"}

    def run(self, *argv: str, timeout: float = 120.0,
            extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(list(argv), cwd=self.work, env={**self.env(), **(extra_env or {})},
                              capture_output=True, text=True, timeout=timeout, check=False)

    def popen(self, *argv: str) -> subprocess.Popen[str]:
        return subprocess.Popen(list(argv), cwd=self.work, env=self.env(), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)


def _pip_env() -> dict[str, str]:
    """pip's own settings (index, cache, certificates) stay; nothing points it, or the build, at this checkout."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME") and not k.startswith("COV")}


def _check(argv: list[str], cwd: Path, timeout: float) -> None:
    done = subprocess.run(argv, cwd=cwd, env=_pip_env(), capture_output=True, text=True, timeout=timeout,
                          check=False)
    if done.returncode != 0:
        raise AssertionError(f"{shlex.join(argv)} failed ({done.returncode}):\n{done.stdout[-3000:]}\n"
                             f"{done.stderr[-3000:]}")


def build_and_install(base: Path) -> Installation:
    inst = Installation(base)
    for folder in (inst.work, base / "home"):
        folder.mkdir(parents=True)
    _check([sys.executable, "-m", "build", "--outdir", str(inst.dist), str(ROOT)], base, 180)
    _check([sys.executable, "-m", "venv", "--without-pip", str(base / "bare")], base, 60)
    _check([sys.executable, "-m", "venv", str(inst.venv)], base, 60)
    # The docs' line, run by the venv's pip in the folder holding dist/, then pytest for the user's own tests.
    pip, *args = shlex.split(INSTALL_LINE)
    _check([inst.bin(pip), *args], base, 600)
    _check([inst.bin("python"), "-m", "pip", "install", *USER_TEST_REQUIREMENTS], base, 300)
    return inst
