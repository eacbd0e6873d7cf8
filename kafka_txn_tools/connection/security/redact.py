"""Keep secrets out of log records, whoever logs them.

kafka-python logs its whole configuration (the SASL and key passwords among it) and, at DEBUG, every
request it sends, SASL tokens included: a PLAIN token carries the password itself, a SCRAM
client-final message a proof that allows an offline guess at it, an OAUTHBEARER message the bearer
token, which is as good as the password while it lives. An application that turns on DEBUG
logging for a kafka-txn run would write them to its logs.

`protect(secrets)` installs, once per process, a log record factory that rewrites any record of a
`kafka` logger containing a registered secret (or a SCRAM proof) before handlers see it. The factory
only runs for records a logger actually emits, so it costs nothing at the default log level.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterable
from typing import Any

MASK = "***"
_SCRAM_PROOF = re.compile(r"(,p=)[A-Za-z0-9+/]+=*")
_BEARER = re.compile(r"(auth=Bearer )[A-Za-z0-9._~+/=-]+")
_secrets: set[str] = set()
_lock = threading.Lock()
_installed = False


def _forms(secret: str) -> set[str]:
    """The secret as text and as it appears inside a bytes repr (escaped non-ASCII)."""
    return {secret, repr(secret.encode("utf-8"))[2:-1], repr(secret)[1:-1]}


def protect(secrets: Iterable[str | None]) -> None:
    """Redact these values (e.g. SASL and key passwords) from every kafka-python log record from now on."""
    global _installed
    new = {form for s in secrets if s and len(s) >= 3 for form in _forms(s)}
    with _lock:
        _secrets.update(new)
        if not _installed:
            _install()
            _installed = True


def redact(text: str) -> str:
    for secret in sorted(_secrets, key=len, reverse=True):
        text = text.replace(secret, MASK)
    return _BEARER.sub(rf"\1{MASK}", _SCRAM_PROOF.sub(rf"\1{MASK}", text))


def _install() -> None:
    previous = logging.getLogRecordFactory()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        if record.name.startswith("kafka") and not record.name.startswith("kafka_txn"):
            _scrub(record)
        return record

    logging.setLogRecordFactory(factory)


def _scrub(record: logging.LogRecord) -> None:
    try:
        message = record.getMessage()
    except Exception:  # noqa: BLE001 - a malformed record is the logger's problem, not ours
        return
    cleaned = redact(message)
    if cleaned != message:
        record.msg, record.args = cleaned, None
