"""Secrets stay out of log records, however kafka-python formats them."""

from __future__ import annotations

import logging

import pytest

from kafka_txn_tools.connection.security.redact import MASK, protect, redact


def test_kafka_records_lose_registered_secrets(caplog: pytest.LogCaptureFixture) -> None:
    protect(["s3cr3t-Pässword", None, ""])
    caplog.set_level(logging.DEBUG)
    log = logging.getLogger("kafka.admin.client")
    log.debug("Starting with configuration: %s", {"sasl_plain_password": "s3cr3t-Pässword"})
    log.debug("Send: %r", b"\x00alice\x00" + "s3cr3t-Pässword".encode())
    log.debug("Request: SaslAuthenticateRequest(auth_bytes=b'c=biws,r=abc123,p=cT/RyKE8wlBCqm0e5+6y==')")
    assert "s3cr3t" not in caplog.text and "P\\xc3\\xa4ssword" not in caplog.text
    assert "cT/RyKE8" not in caplog.text and caplog.text.count(MASK) == 3


def test_other_loggers_and_plain_text_are_left_alone(caplog: pytest.LogCaptureFixture) -> None:
    protect(["other-secret-1"])
    caplog.set_level(logging.DEBUG)
    logging.getLogger("kafka_txn_broker.x").debug("p=value %s", "other-secret-1")
    assert "other-secret-1" in caplog.text  # only kafka-python's records are rewritten
    assert redact("nothing to hide") == "nothing to hide"
