"""The JSON-built message classes, as a process that only sends requests (a client) uses them.

kafka-python decodes a response with the class registered under its API key when that class was created, so a
process that built only the request class could not read the answer: its connection raised inside the parser
and the request timed out (seen with describe-share-group and the share clients run in their own process; in
the tests the embedded broker had already built every response class). Checked in a fresh interpreter."""

from __future__ import annotations

import subprocess
import sys

from kafka_txn_broker.formats.messages import MESSAGES

# Each request is looked up before any other message class of its API key exists (one key per API).
CHECK = """
import sys
from kafka.protocol.api_header import ResponseClassRegistry
from kafka_txn_broker.formats import messages
for name in sys.argv[1:]:
    request = getattr(messages, name)
    found = ResponseClassRegistry._response_class_registry.get(request.API_KEY)
    print(found.name if found is not None else None)
"""


def test_building_a_request_class_registers_its_response_class() -> None:
    requests = sorted(n for n in MESSAGES if n.endswith("Request"))
    done = subprocess.run([sys.executable, "-c", CHECK, *requests], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [name[: -len("Request")] + "Response" for name in requests]
