"""kafka-python's package (and crc32c's), loaded without running ``__init__`` until a name defined there is asked
for.

``kafka/__init__.py`` imports kafka-python's consumer, producer and admin client, with the record codecs and
crc32c behind them, whichever module of the package is wanted. The CLI uses only the network layer and the
protocol classes, and the embedded broker only the protocol classes: that ``__init__`` cost every command and
``kafka-txn broker start`` about 25 ms each (measured 2026-12-07), 6% of the time to a usable cluster.
``crc32c/__init__.py`` reads the package's own version from its installed metadata, which imports
``importlib.metadata``: 11-15 ms of a find-hanging run or a broker start, for a checksum the record batch code
takes from the extension module (``crc32c._crc32c``) directly.

``load_lazily()`` registers both package modules without executing them. A submodule imports as usual (Python
needs only the package's ``__path__``). Any other name asked of a package (``kafka.KafkaConsumer``,
``from kafka import KafkaProducer``, ``kafka.__version__``, ``crc32c.crc32c``) runs the real ``__init__`` once
into the same module first, so code that uses the package's own names sees the package as it defines itself.
The one thing kafka-python's ``__init__`` does besides importing, a ``NullHandler`` on the ``kafka`` logger (so
kafka-python's warnings do not reach Python's last-resort stderr handler), is done here at once.

Only the command-line entry points call it (cli/entry.py), first thing, in a process that has not imported
``kafka`` yet; the libraries (the broker, the tools' modules, the pytest plugin) never change how a process
imports kafka.

Threading: called on the main thread before any other thread starts; a deferred ``__init__`` runs once,
under a re-entrant lock of its own (``__init__`` asks the package for names while it runs).
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import sys
import threading
import types
from typing import Any

PACKAGE = "kafka"
CRC32C = "crc32c"


def load_lazily() -> bool:
    """Register kafka-python's package and crc32c's without running their ``__init__``; False when kafka-python's
    is already imported (or not installed), which changes nothing (crc32c's likewise, on its own)."""
    _register(CRC32C)
    if not _register(PACKAGE):
        return False
    logging.getLogger(PACKAGE).addHandler(logging.NullHandler())
    return True


def _register(package: str) -> bool:
    if package in sys.modules:
        return False
    spec = importlib.util.find_spec(package)
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        return False
    module = importlib.util.module_from_spec(spec)
    module.__getattr__ = _deferred_init(package, module, spec)  # type: ignore[method-assign]
    sys.modules[package] = module
    return True


def _deferred_init(package: str, module: types.ModuleType, spec: Any) -> Any:
    lock = threading.RLock()  # __init__ itself may ask the package for a name while it runs
    ran: list[bool] = []

    def __getattr__(name: str) -> Any:
        if name.startswith("__") and name not in ("__all__", "__version__", "__author__", "__license__"):
            raise AttributeError(name)  # what Python itself probes (__file__ is set, __wrapped__ is not)
        if importlib.util.find_spec(f"{package}.{name}") is not None:
            return importlib.import_module(f"{package}.{name}")  # a submodule: no need for __init__
        with lock:
            if not ran:
                ran.append(True)
                spec.loader.exec_module(module)
        try:
            return module.__dict__[name]
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None

    return __getattr__
