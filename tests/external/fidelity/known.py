"""Differences from Apache Kafka that stay, each with its reason (case name -> reason). The tests expect
these cases to differ, so a fix shows up as a test to update."""

from __future__ import annotations

KNOWN: dict[str, str] = {}

# Cases whose answer varies from run to run on Kafka itself: compared and reported, never asserted.
VARIES: dict[str, str] = {
    "find-coordinator-first-use": (
        "Kafka creates __transaction_state on the first transactional FindCoordinator and answers "
        "COORDINATOR_NOT_AVAILABLE (15) until it has a leader; the embedded broker creates it within the request "
        "and answers at once. Clients retry 15, so only the first answer differs; answering 15 would break every "
        "single-shot caller of a fresh embedded cluster (the raw client's scenarios). Kafka 4.4.0 answered 0 in "
        "one run of six"),
}

_ORDER_3X = ("Kafka 3.x answers the partitions of this case in another order than the request's (a hash "
             "order); the embedded broker answers in the request's order, as Kafka 4.x does (only partitions' order "
             "differs; clients match answers by partition)")
# Differences of older releases only (release "major.minor" -> case -> reason).
_START_TIME_3X = ("Kafka 3.x keeps the aborted transaction's start time in DescribeTransactions after "
                  "InitProducerId fenced it; the embedded broker answers -1 (as Kafka 4.4.0 does)")
KNOWN_IN_RELEASE: dict[str, dict[str, str]] = {
    "3.9": {"metadata": _ORDER_3X, "group-offsets": _ORDER_3X, "concurrent-transactions": _START_TIME_3X},
    "3.3": {"metadata": _ORDER_3X, "group-offsets": _ORDER_3X, "concurrent-transactions": _START_TIME_3X},
}
# Cases whose answer on a release varies from run to run on Kafka itself: compared and reported, never asserted.
VARIES_IN_RELEASE: dict[str, dict[str, str]] = {
    "3.9": {"write-txn-markers": "Kafka 3.9.2 answered ListOffsets' partitions in a hash order in one run and in "
                                 "the request's in another; the embedded broker answers in the request's"},
}


def known(case: str, release: str) -> str | None:
    """Why `case` is expected to differ on `release` ("4.4.0"), or None if it must be the same."""
    minor = ".".join(release.split(".")[:2])
    return KNOWN.get(case) or KNOWN_IN_RELEASE.get(minor, {}).get(case)


def varies(case: str, release: str) -> str | None:
    """Why `case` may or may not differ on `release` (Kafka's own answer varies), or None."""
    return VARIES.get(case) or VARIES_IN_RELEASE.get(".".join(release.split(".")[:2]), {}).get(case)
