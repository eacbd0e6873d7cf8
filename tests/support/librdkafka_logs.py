"""librdkafka's own log lines (a client retrying a broker its test has stopped: "Connect to ... failed:
Connection refused") go to Python logging in the tests, never straight to the run's stderr.

librdkafka writes its logs to stderr from its own threads unless a client is given a `logger`; then they are
handed to that logger when the client is polled. `route()` makes every confluent-kafka client the tests (and
the code under test) create get one: the `librdkafka` logger, which pytest captures with the test's logs and
shows for a failing test. A client polled after its test has ended logs to a NullHandler.

Each client is also registered with tests/support/client_lifetimes.py, which fails a test that leaves one
open after it ended.

Threading: `route()` runs once, at start-up, before any test module imports confluent_kafka's classes.
"""

from __future__ import annotations

import logging
from typing import Any

from tests.support import client_lifetimes

LOGGER = logging.getLogger("librdkafka")
LOGGER.addHandler(logging.NullHandler())  # between tests: no "last resort" print to stderr


def _with_logger(conf: Any, kwargs: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    if isinstance(conf, dict) and "logger" not in conf:
        conf = {**conf, "logger": LOGGER}
    elif conf is None and "logger" not in kwargs:
        kwargs = {**kwargs, "logger": LOGGER}
    return conf, kwargs


def _routed(base: type) -> type:
    original: Any = vars(base)["__init__"]  # the C type's own slot (its subclasses inherit it)

    def __init__(self: Any, conf: Any = None, *args: Any, **kwargs: Any) -> None:
        conf, kwargs = _with_logger(conf, kwargs)
        if conf is None:
            original(self, *args, **kwargs)
        else:
            original(self, conf, *args, **kwargs)
        client_lifetimes.register(self, base.__name__)

    base_close: Any = vars(base)["close"]
    base_exit: Any = vars(base)["__exit__"]  # calls the C close itself, not the close below

    def close(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return base_close(self, *args, **kwargs)
        finally:
            client_lifetimes.closed(self)

    def __exit__(self: Any, *exc: Any) -> Any:
        try:
            return base_exit(self, *exc)
        finally:
            client_lifetimes.closed(self)

    return type(base.__name__, (base,), {"__init__": __init__, "close": close, "__exit__": __exit__,
                                         "__module__": base.__module__, "__doc__": base.__doc__})


def route() -> None:
    """Give confluent_kafka's Producer, Consumer, ShareConsumer and AdminClient the `librdkafka` logger by
    default (a configuration that names its own logger keeps it)."""
    import confluent_kafka
    import confluent_kafka.admin

    for name in ("Producer", "Consumer", "ShareConsumer"):
        base = getattr(confluent_kafka, name, None)
        if isinstance(base, type) and not getattr(base, "_routes_logs", False):
            routed = _routed(base)
            routed._routes_logs = True  # type: ignore[attr-defined]
            setattr(confluent_kafka, name, routed)
    admin = confluent_kafka.admin.AdminClient  # a Python class that names itself in super(): wrapped in place
    if not getattr(admin, "_routes_logs", False):
        original = admin.__init__

        def __init__(self: Any, conf: Any = None, **kwargs: Any) -> None:
            conf, kwargs = _with_logger(conf, kwargs)
            original(self, conf, **kwargs)
            client_lifetimes.register(self, "AdminClient")  # no close(): open until it is destroyed

        admin.__init__ = __init__  # type: ignore[method-assign]
        admin._routes_logs = True  # type: ignore[attr-defined]
