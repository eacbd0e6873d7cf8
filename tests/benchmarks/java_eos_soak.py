"""Soak of Kafka's exactly-once system test workload (tests/external/java_clients/eos.py) against the embedded
broker, at the sizes of upstream's transactions_test.py or bigger:

    python3 tests/benchmarks/java_eos_soak.py --messages 50000 --broker-bounces clean,hard,hard \\
        --copier-bounces clean,kill,kill --release 4.4.0

Prints one JSON summary line and exits 0 when no read saw a duplicate and the output equals the input, else 1.
The last result is in docs/broker.md."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from kafka_txn_broker.embedded import EmbeddedCluster
from tests.external.java_clients.eos import CLUSTER_CONFIG, EosConfig, run_eos
from tests.external.java_clients.tools import JavaTools
from tests.support.real_kafka import DEFAULT_RELEASE, release_libs


def _kinds(text: str, allowed: set[str]) -> tuple[str, ...]:
    kinds = tuple(k for k in text.split(",") if k)
    wrong = [k for k in kinds if k not in allowed]
    if wrong:
        raise SystemExit(f"unknown bounce kind {', '.join(wrong)}: use {' or '.join(sorted(allowed))}")
    return kinds


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=20000)
    parser.add_argument("--broker-bounces", default="clean,hard,hard", help="node bounces: clean or hard, in order")
    parser.add_argument("--copier-bounces", default="clean,kill,kill", help="copier bounces: clean or kill")
    parser.add_argument("--transaction-size", type=int, default=750)
    parser.add_argument("--release", default=DEFAULT_RELEASE)
    parser.add_argument("--deadline-s", type=float, default=1800.0)
    args = parser.parse_args(argv)
    config = EosConfig(args.messages, _kinds(args.broker_bounces, {"clean", "hard"}),
                       _kinds(args.copier_bounces, {"clean", "kill"}), args.transaction_size, args.deadline_s)
    libs = release_libs(args.release)
    with tempfile.TemporaryDirectory(prefix="java-eos-soak-") as tmp:
        work = Path(tmp)
        with EmbeddedCluster(nodes=3, data_dir=work / "cluster", config=CLUSTER_CONFIG) as cluster:
            report = run_eos(cluster, JavaTools(libs, args.release, cluster.bootstrap_servers), config, work)
    print(report.summary())
    return 0 if report.passed else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
