"""What each Apache Kafka release advertises in ApiVersions: public facts, as kafka-python records them
(`BROKER_API_VERSIONS`, the answers of real brokers), and, where it lacks a release or recorded a ZooKeeper-mode
broker, the answers of real KRaft brokers (`KRAFT_ANSWERS`). The broker narrows its API table to a release with
them (`kafka.version.emulate`), and its config lists the releases it can emulate.

The table comes through the wire codec's door (formats.messages) inside the functions, so this package stays
importable without kafka-python.
"""

from __future__ import annotations

import functools

# ApiVersions (v3) answers of one-node KRaft clusters of these Apache Kafka releases (from Maven Central's
# jars; tests/external/fidelity/test_api_versions.py asks the real brokers again and compares). They win over
# kafka-python's table: it lacks 4.4, and its 3.x entries are of ZooKeeper-mode brokers, which also offered the
# inter-broker APIs (LeaderAndIsr, StopReplica, ...) that a KRaft broker does not.
KRAFT_ANSWERS: dict[tuple[int, int], dict[int, tuple[int, int]]] = {
    (3, 3): {  # Apache Kafka 3.3.2
        0: (0, 9), 1: (0, 13), 2: (0, 7), 3: (0, 12), 8: (0, 8), 9: (0, 8), 10: (0, 4), 11: (0, 9), 12: (0, 4),
        13: (0, 5), 14: (0, 5), 15: (0, 5), 16: (0, 4), 17: (0, 1), 18: (0, 3), 19: (0, 7), 20: (0, 6), 21: (0, 2),
        22: (0, 4), 23: (0, 4), 24: (0, 3), 25: (0, 3), 26: (0, 3), 27: (0, 1), 28: (0, 3), 29: (0, 3), 30: (0, 3),
        31: (0, 3), 32: (0, 4), 33: (0, 2), 34: (0, 2), 35: (0, 4), 36: (0, 2), 37: (0, 3), 42: (0, 2), 43: (0, 2),
        44: (0, 1), 45: (0, 0), 46: (0, 0), 47: (0, 0), 48: (0, 1), 49: (0, 1), 55: (0, 1), 57: (0, 1), 60: (0, 0),
        61: (0, 0), 64: (0, 0), 65: (0, 0), 66: (0, 0),
    },
    (3, 9): {  # Apache Kafka 3.9.2
        0: (0, 11), 1: (0, 17), 2: (0, 9), 3: (0, 12), 8: (0, 9), 9: (0, 9), 10: (0, 6), 11: (0, 9), 12: (0, 4),
        13: (0, 5), 14: (0, 5), 15: (0, 5), 16: (0, 5), 17: (0, 1), 18: (0, 4), 19: (0, 7), 20: (0, 6), 21: (0, 2),
        22: (0, 5), 23: (0, 4), 24: (0, 5), 25: (0, 4), 26: (0, 4), 27: (0, 1), 28: (0, 4), 29: (0, 3), 30: (0, 3),
        31: (0, 3), 32: (0, 4), 33: (0, 2), 34: (0, 2), 35: (0, 4), 36: (0, 2), 37: (0, 3), 38: (0, 3), 39: (0, 2),
        40: (0, 2), 41: (0, 3), 42: (0, 2), 43: (0, 2), 44: (0, 1), 45: (0, 0), 46: (0, 0), 47: (0, 0), 48: (0, 1),
        49: (0, 1), 50: (0, 0), 51: (0, 0), 55: (0, 2), 57: (0, 1), 60: (0, 1), 61: (0, 0), 64: (0, 0), 65: (0, 0),
        66: (0, 1), 68: (0, 0), 69: (0, 0), 74: (0, 0), 75: (0, 0), 80: (0, 0), 81: (0, 0),
    },
    (4, 4): {  # Apache Kafka 4.4.0
        0: (0, 13), 1: (4, 18), 2: (1, 11), 3: (0, 13), 8: (2, 10), 9: (1, 10), 10: (0, 6), 11: (0, 9), 12: (0, 4),
        13: (0, 5), 14: (0, 5), 15: (0, 6), 16: (0, 5), 17: (0, 1), 18: (0, 5), 19: (2, 7), 20: (1, 6), 21: (0, 2),
        22: (0, 5), 23: (2, 4), 24: (0, 5), 25: (0, 4), 26: (0, 5), 27: (1, 2), 28: (0, 6), 29: (1, 3), 30: (1, 3),
        31: (1, 3), 32: (1, 4), 33: (0, 2), 34: (1, 2), 35: (1, 5), 36: (0, 2), 37: (0, 3), 38: (1, 3), 39: (1, 2),
        40: (1, 2), 41: (1, 3), 42: (0, 3), 43: (0, 2), 44: (0, 1), 45: (0, 1), 46: (0, 0), 47: (0, 0), 48: (0, 1),
        49: (0, 1), 50: (0, 0), 51: (0, 0), 55: (0, 2), 57: (0, 2), 60: (0, 2), 61: (0, 0), 64: (0, 0), 65: (0, 0),
        66: (0, 2), 68: (0, 1), 69: (0, 1), 74: (0, 1), 75: (0, 0), 76: (1, 1), 77: (1, 1), 78: (1, 2), 79: (1, 2),
        80: (0, 1), 81: (0, 0), 83: (0, 0), 84: (0, 0), 85: (0, 1), 86: (0, 0), 87: (0, 1), 88: (0, 1), 89: (0, 1),
        90: (0, 1), 91: (0, 0), 92: (0, 0), 93: (0, 0), 94: (0, 0),
    },
}


@functools.cache
def kafka_releases() -> tuple[str, ...]:
    """The Apache Kafka releases whose API version ranges are known ("2.0" ... "4.4")."""
    from kafka_txn_broker.formats.messages import BROKER_API_VERSIONS

    known = {v for v in BROKER_API_VERSIONS if len(v) == 2 and v >= (2, 0)} | set(KRAFT_ANSWERS)
    return tuple(f"{v[0]}.{v[1]}" for v in sorted(known))


def release_ranges(release: str) -> dict[int, tuple[int, int]]:
    """API key -> (min, max) that an Apache Kafka `release` ("3.8") advertises in ApiVersions."""
    from kafka_txn_broker.formats.messages import BROKER_API_VERSIONS

    major, minor = (int(part) for part in release.split("."))
    recorded = KRAFT_ANSWERS.get((major, minor))
    return dict(recorded if recorded is not None else BROKER_API_VERSIONS[(major, minor)])
