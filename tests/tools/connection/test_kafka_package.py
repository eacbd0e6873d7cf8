"""connection/kafka_package.py: in a fresh interpreter (a child process, so this run's own kafka modules are not
touched), the package's submodules import without its __init__, and its own names still work once asked for."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.e2e  # child interpreters

PROBE = textwrap.dedent("""
    import json, logging, sys
    from kafka_txn_tools.connection.kafka_package import load_lazily
    first = load_lazily()
    again = load_lazily()
    import kafka.errors as kerrors
    from kafka.protocol.metadata import MetadataRequest
    from kafka import errors
    before = sorted(m for m in sys.modules if m.split(".")[:2] in (["kafka", "consumer"], ["kafka", "producer"]))
    handlers = [type(h).__name__ for h in logging.getLogger("kafka").handlers]
    import kafka
    from kafka import KafkaConsumer, KafkaProducer
    version = kafka.__version__
    after = "kafka.consumer" in sys.modules and "kafka.producer" in sys.modules
    try:
        kafka.NoSuchName
        missing = "no error"
    except AttributeError as exc:
        missing = str(exc)
    print(json.dumps({"first": first, "again": again, "same_errors": errors is kerrors, "before": before,
                      "handlers": handlers, "consumer": KafkaConsumer.__name__, "producer": KafkaProducer.__name__,
                      "version": version, "after": after, "missing": missing,
                      "metadata": MetadataRequest.__name__}))
""")


def test_submodules_without_init_and_the_package_names_on_demand() -> None:
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert got["first"] is True and got["again"] is False
    assert got["same_errors"] is True and got["metadata"] == "MetadataRequest"
    assert got["before"] == []  # what kafka/__init__ would have imported: not yet
    assert got["handlers"] == ["NullHandler"]  # as kafka/__init__ sets it, from the start
    assert (got["consumer"], got["producer"], got["after"]) == ("KafkaConsumer", "KafkaProducer", True)
    assert got["version"].count(".") >= 2
    assert got["missing"] == "module 'kafka' has no attribute 'NoSuchName'"


def test_a_process_that_already_imported_kafka_is_left_as_it_is() -> None:
    probe = ("import kafka, sys\nfrom kafka_txn_tools.connection.kafka_package import load_lazily\n"
             "print(load_lazily(), sys.modules['kafka'] is kafka, hasattr(kafka, 'KafkaConsumer'))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=False)
    assert done.stdout.split() == ["False", "True", "True"], done.stderr


def test_the_command_line_does_not_load_the_consumer() -> None:
    """kafka-txn's own entry point loads lazily: a refused connection's whole run imports no consumer."""
    probe = ("import atexit, sys\n"
             "atexit.register(lambda: print('consumer' if 'kafka.consumer' in sys.modules else 'none'))\n"
             "sys.argv = ['kafka-txn', 'list', '-b', '127.0.0.1:1', '--timeout', '1s']\n"
             "from kafka_txn_tools.cli.entry import kafka_txn\nkafka_txn()")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=False)
    assert "cannot connect" in done.stderr and done.stdout.strip() == "none", (done.stdout, done.stderr)


CRC_PROBE = textwrap.dedent("""
    import json, sys
    from kafka_txn_tools.connection.kafka_package import load_lazily
    load_lazily()
    from crc32c._crc32c import crc32c as direct
    deferred = "crc32c" in vars(sys.modules["crc32c"])
    import crc32c
    print(json.dumps({"deferred_init_ran": deferred, "direct": direct(b"123456789"),
                      "package": crc32c.crc32c(b"123456789"), "version": crc32c.__version__}))
""")


def test_crc32c_extension_without_the_package_init_and_its_names_on_demand() -> None:
    done = subprocess.run([sys.executable, "-c", CRC_PROBE], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert got["deferred_init_ran"] is False
    assert got["direct"] == got["package"] == 0xE3069283  # CRC-32C's check value (RFC 3720's test vector)
    assert got["version"].count(".") >= 1
