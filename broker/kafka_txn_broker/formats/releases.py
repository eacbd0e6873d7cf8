"""What each Apache Kafka release advertises in ApiVersions: public facts, as kafka-python records them
(`BROKER_API_VERSIONS`, the answers of real brokers). The broker narrows its API table to a release with
them (`kafka.version.emulate`), and its config lists the releases it can emulate.

The table comes through the wire codec's door (formats.messages) inside the functions, so this package stays
importable without kafka-python.
"""

from __future__ import annotations

import functools


@functools.cache
def kafka_releases() -> tuple[str, ...]:
    """The Apache Kafka releases whose API version ranges are known ("2.0" ... "4.3")."""
    from kafka_txn_broker.formats.messages import BROKER_API_VERSIONS

    return tuple(f"{v[0]}.{v[1]}" for v in sorted(BROKER_API_VERSIONS) if len(v) == 2 and v >= (2, 0))


def release_ranges(release: str) -> dict[int, tuple[int, int]]:
    """API key -> (min, max) that an Apache Kafka `release` ("3.8") advertises in ApiVersions."""
    from kafka_txn_broker.formats.messages import BROKER_API_VERSIONS

    major, minor = (int(part) for part in release.split("."))
    return dict(BROKER_API_VERSIONS[(major, minor)])
