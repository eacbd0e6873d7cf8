"""How `scripts/dev.sh test` splits the run over workers (pytest-xdist): whole modules, so that a module's tests
run in order in one process with its module-scoped fixtures made once, as in a serial run.

Some modules go together, so that what they share starts once in the run instead of once per worker:
- the modules of one package under tests/external (its real Apache Kafka clusters are package-scoped);
- the modules that use `installation` (this checkout's wheel, built and installed into a venv).

The groups are xdist's scopes (`--dist loadscope` with this module's scheduler: conftest.py's
pytest_xdist_make_scheduler), taken from the test ids, since xdist's own `xdist_group` marks no longer reach
its scheduler under pytest 9.2. A serial run (`-n 0`) ignores them.
"""

from __future__ import annotations

from typing import Any

# The modules whose tests take the session's `installation` fixture (tests/support/test_parallel.py checks it).
INSTALLATION_MODULES = ("tests/test_installed.py", "tests/tools/spark/test_cluster.py")


def group_of(nodeid: str) -> str:
    """The group of the test with this id (relative to the repository, as pytest gives it)."""
    module = nodeid.split("::", 1)[0]
    if module in INSTALLATION_MODULES:
        return "installation"
    parts = module.split("/")
    if parts[:2] == ["tests", "external"] and len(parts) > 3:
        return "/".join(parts[:3])
    return module


def make_scheduler(config: Any, log: Any) -> Any:
    """xdist's scope scheduler, with `group_of` as the scope (xdist is imported only in a parallel run)."""
    from xdist.scheduler import LoadScopeScheduling

    class ModuleScheduling(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return group_of(nodeid)

    return ModuleScheduling(config, log)
