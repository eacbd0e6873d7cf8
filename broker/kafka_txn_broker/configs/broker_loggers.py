"""BROKER_LOGGER configs (KIP-412; Kafka's Log4jController and RuntimeLoggerManager): the broker's loggers
and their levels, described and changed at run time through DescribeConfigs / IncrementalAlterConfigs.

Here the loggers are Python `logging` loggers: "root" (Python's root logger, named as Kafka names log4j's)
and every logger of the `kafka_txn_broker` package that exists (the package logger itself and each
module's `logging.getLogger(__name__)`). Loggers are process-wide, so every node of an embedded cluster
shares them, and changes are not stored (as in Kafka, they do not survive a restart).

Levels, Kafka (log4j) name <-> Python level: TRACE <-> 5 (Python has no TRACE: a level below DEBUG),
DEBUG <-> DEBUG (10), INFO <-> INFO (20), WARN <-> WARNING (30), ERROR <-> ERROR (40), FATAL <-> CRITICAL (50).
A logger is described with its effective level (its own, else the nearest ancestor's). A Python level
between two of these (set by hand, e.g. 15) is described as the next Kafka level above it: that one lets
through exactly the same Kafka-level messages. Levels below TRACE (NOTSET on root) read TRACE.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from kafka_txn_broker.configs.config_def import OpType
from kafka_txn_broker.formats.errors import InvalidConfigurationError, InvalidRequestError

ROOT = "root"
PACKAGE = "kafka_txn_broker"
LEVELS = {"TRACE": 5, "DEBUG": logging.DEBUG, "INFO": logging.INFO, "WARN": logging.WARNING,
          "ERROR": logging.ERROR, "FATAL": logging.CRITICAL}
# Kafka's message lists LogLevelConfig's levels in alphabetical order.
_VALID = ", ".join(sorted(LEVELS))
Op = tuple[str, int, str | None]  # (logger name, OpType, level)

logging.getLogger(PACKAGE)  # the package logger always exists, so one SET can change the whole broker


def kafka_level(level: int) -> str:
    """The Kafka name of a Python level: the lowest Kafka level at or above it (FATAL above CRITICAL)."""
    for name, value in LEVELS.items():  # in increasing order
        if level <= value:
            return name
    return "FATAL"


def _logger(name: str) -> logging.Logger | None:
    if name == ROOT:
        return logging.getLogger()
    if name != PACKAGE and not name.startswith(PACKAGE + "."):
        return None
    found = logging.Logger.manager.loggerDict.get(name)
    return found if isinstance(found, logging.Logger) else None  # a PlaceHolder is no logger yet


def loggers() -> dict[str, str]:
    """Every logger with its effective Kafka level, root first, then by name."""
    names = sorted(n for n in list(logging.Logger.manager.loggerDict) if _logger(n) is not None)
    return {name: kafka_level(_existing(name).getEffectiveLevel()) for name in [ROOT, *names]}


def _existing(name: str) -> logging.Logger:
    logger = _logger(name)
    if logger is None:
        raise InvalidConfigurationError(f"Logger {name} does not exist!")
    return logger


def validate(ops: Iterable[Op]) -> None:
    """Kafka's checks, in request order: SET needs an existing logger and one of Kafka's level names
    (case-sensitive); DELETE an existing logger other than root; no other operation is allowed."""
    for name, op, value in ops:
        if op == OpType.SET:
            _existing(name)
            if value not in LEVELS:
                raise InvalidConfigurationError(f"Cannot set the log level of {name} to {value} as it is not a "
                                                f"supported log level. Valid log levels are {_VALID}")
        elif op == OpType.DELETE:
            _existing(name)
            if name == ROOT:
                raise InvalidRequestError(f"Removing the log level of the {ROOT} logger is not allowed")
        elif op in (OpType.APPEND, OpType.SUBTRACT):
            raise InvalidRequestError(f"{OpType(op).name} operation is not allowed for the BROKER_LOGGER resource")
        else:
            raise InvalidRequestError(f"Unknown operation type {op} is not allowed for the BROKER_LOGGER resource")


def apply(ops: Iterable[Op]) -> None:
    """Apply validated operations: SET gives the logger its level, DELETE unsets it (it inherits again)."""
    for name, op, value in ops:
        logger = _existing(name)
        if op == OpType.SET:
            assert value is not None  # validate() refused anything else
            logger.setLevel(LEVELS[value])
        else:
            logger.setLevel(logging.NOTSET)
