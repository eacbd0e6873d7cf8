"""Differences from Apache Kafka that stay, each with its reason (case name -> reason). The tests expect
these cases to differ, so a fix shows up as a test to update."""

from __future__ import annotations

KNOWN: dict[str, str] = {
    "find-coordinator-first-use": (
        "Kafka creates __transaction_state on the first transactional FindCoordinator and answers "
        "COORDINATOR_NOT_AVAILABLE (15) until it has a leader; the embedded broker creates it within the request "
        "and answers at once. Clients retry 15, so only the first answer differs; answering 15 would break every "
        "single-shot caller of a fresh embedded cluster (the raw client's scenarios)"),
}
