"""What the mutation run mutates, and the fast tests that cover each target.

A target is one rule set users depend on: its source files (paths in this repository), the functions of a
shared module that belong to it (None: the whole file), and the unit tests that exercise it. The whole
default suite is far too slow to run per mutant (minutes, with real clients); these tests take seconds, and
mutmut narrows them further to the tests that call the mutated function.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Source:
    path: str  # in this repository, e.g. broker/kafka_txn_broker/log/producer_state.py
    functions: tuple[str, ...] | None = None  # only these (mutmut's names: "Class.method" or "function")


@dataclass(frozen=True)
class Target:
    name: str
    what: str
    sources: tuple[Source, ...]
    tests: tuple[str, ...]
    extra: tuple[str, ...] = field(default=())  # further pytest arguments


TARGETS: tuple[Target, ...] = (
    Target(
        "hanging",
        "find-hanging's and the sweep's rules",
        (Source("kafka_txn_tools/admin/hanging.py"), Source("kafka_txn_tools/admin/partition_advice.py"),
         Source("kafka_txn_tools/spark/classify.py")),
        ("tests/tools/test_hanging_rules.py", "tests/tools/test_hanging_reason_order.py",
         "tests/tools/admin/test_hanging.py", "tests/tools/admin/test_hanging_boundaries.py",
         "tests/tools/admin/test_hanging_coordinator_texts.py",
         "tests/tools/admin/test_scan.py", "tests/tools/spark/test_classify.py",
         "tests/tools/spark/test_classify_sweep.py"),
    ),
    Target(
        "abort",
        "abort validation (single transactions and plans)",
        (Source("kafka_txn_tools/admin/abort.py"), Source("kafka_txn_tools/admin/abort_batch.py")),
        ("tests/tools/admin/test_abort.py", "tests/tools/admin/test_abort_flow.py",
         "tests/tools/admin/test_abort_identifiers.py",
         "tests/tools/admin/test_abort_batch.py", "tests/tools/cli/test_commands.py",
         "tests/tools/cli/test_upstream.py"),
    ),
    Target(
        "commit",
        "the coordinator's decision on a hanging transaction, and the commit that carries it out",
        (Source("kafka_txn_tools/admin/decisions.py"), Source("kafka_txn_tools/admin/commit.py"),
         Source("kafka_txn_tools/models.py", ("CoordinatorDecision.names",)),
         Source("kafka_txn_tools/admin/transaction_state.py")),
        ("tests/tools/admin/test_decisions.py", "tests/tools/admin/test_commit.py",
         "tests/tools/admin/test_transaction_state.py", "tests/tools/admin/test_scan.py"),
    ),
    Target(
        "producer-state",
        "producer state, the LSO and the aborted-transaction index",
        (
            Source("broker/kafka_txn_broker/log/producer_state.py"),
            Source("broker/kafka_txn_broker/log/transaction_index.py"),
            Source("broker/kafka_txn_broker/log/unified_log.py", (
                "UnifiedLog.high_watermark", "UnifiedLog.first_unstable_offset", "UnifiedLog.last_stable_offset",
                "UnifiedLog._complete_txn", "UnifiedLog._validate_producers", "UnifiedLog._find_duplicate",
                "UnifiedLog._load_producer_state", "UnifiedLog.append_marker_info", "UnifiedLog.read",
                "UnifiedLog.collect_aborted_transactions", "_marker_of",
            )),
        ),
        ("tests/broker/log/test_producer_state.py", "tests/broker/log/test_unified_log.py",
         "tests/broker/log/test_indexes.py", "tests/broker/log/test_producer_state_edges.py",
         "tests/broker/log/test_unified_log_edges.py"),
    ),
    Target(
        "coordinator",
        "the transaction coordinator's state machine and timeouts",
        (
            Source("broker/kafka_txn_broker/txn/transaction_metadata.py"),
            Source("broker/kafka_txn_broker/txn/coordinator.py"),
            Source("broker/kafka_txn_broker/txn/state_manager.py", (
                "TransactionStateManager._complete", "TransactionStateManager._mark_loaded",
                "TransactionStateManager._elapsed_ms", "TransactionStateManager.timed_out_transactions",
                "TransactionStateManager.remove_expired_transactional_ids",
                "TransactionStateManager.validate_transaction_timeout_ms",
            )),
        ),
        ("tests/broker/txn",),
    ),
    Target(
        "share",
        "share-partition state (in-flight records, their transitions and the start offset)",
        (Source("broker/kafka_txn_broker/share/share_partition.py"),
         Source("broker/kafka_txn_broker/share/record_state.py")),
        ("tests/broker/share/test_share_partition.py", "tests/broker/share/test_record_state.py",
         "tests/broker/share/test_share_partition_txn.py", "tests/broker/share/test_record_state_txn.py",
         "tests/broker/share/test_share_partition_edges.py", "tests/broker/share/test_share_partition_rules.py",
         "tests/broker/share/test_share_txn_durability.py"),
    ),
)


def by_name(name: str) -> Target:
    for target in TARGETS:
        if target.name == name:
            return target
    raise KeyError(name)
