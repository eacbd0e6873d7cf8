"""Importing kafka-python without the deprecation warnings its schema loader raises on Python 3.11 and 3.12.

kafka-python 3.0.12 builds every message class from a JSON schema that it reads with
`importlib.resources.read_text` (which calls `open_text`): Python 3.11 and 3.12 flag both as deprecated
(3.13 withdrew the deprecation). Each class built warns twice, 129 classes on `import kafka` and one more
for each of this project's own messages (formats/messages, the tools' WriteTxnMarkersRequest), so a user's
test with the `kafka_cluster` fixture would print 258 warnings about code neither the user nor this project
can change. Only around those builds are exactly those two warnings ignored: `load` (kafka-python imported,
with this project's messages; called by the fixture, EmbeddedCluster and the share clients before they
import kafka-python) and `schema_loading` (around each class built later).

Like the rest of the formats package, importing this module does not import kafka-python.
Threading: `load` and `schema_loading` change the process's warning filters for their duration
(warnings.catch_warnings); call them from import-time or single-threaded code, as their callers do.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager

# The two warnings of Python 3.11/3.12's legacy importlib.resources API, and nothing else.
_LEGACY_RESOURCES = r"(read_text|open_text) is deprecated\. Use files\(\) instead\."


@contextmanager
def schema_loading() -> Iterator[None]:
    """Build kafka-python message classes from their JSON schemas without its legacy-API warnings."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", _LEGACY_RESOURCES, DeprecationWarning)
        yield


def load() -> None:
    """Import kafka-python (its package builds all its message classes) and build this project's own
    messages, quietly. Cheap after the first call."""
    from kafka_txn_broker.formats import messages

    with schema_loading():
        import kafka  # noqa: F401  (imported for its side effect: every message class built)

        for name in sorted(messages.MESSAGES):
            getattr(messages, name)
