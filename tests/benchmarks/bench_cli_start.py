"""Cold start of `kafka-txn --help` next to `python -c pass`, same interpreter, interleaved runs.

Target: the median of `kafka-txn --help` at most 0.35 s above the median of `python -c pass`
(everything heavy - kafka-python, rich tables, pyarrow, the broker beyond its formats' vocabulary - must
load lazily).

    python tests/benchmarks/bench_cli_start.py [--runs 15]

Also prints which top-level modules `--help` imports that it should not (from -X importtime).
Exit status 1 when over budget.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.benchmarks.as_installed import installed_env  # noqa: E402

BUDGET_S = 0.35
HELP = "import sys; sys.argv[0] = 'kafka-txn'; sys.argv[1:] = ['--help']; " \
       "from kafka_txn_tools.cli.entry import kafka_txn; kafka_txn()"  # as the console script runs it
FORBIDDEN = ("kafka", "pyarrow", "confluent_kafka", "yaml", "rich.table")
# The broker's formats package is the tools' vocabulary (it imports nothing heavy); the rest of the
# broker is not for `--help`.
ALLOWED_BROKER = ("kafka_txn_broker", "kafka_txn_broker.formats", "kafka_txn_broker.formats.transactions")


ENV: dict[str, str] = {}  # as an installed kafka-txn runs: bytecode compiled (set in main)


def once(code: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True,
                   env=ENV)
    return time.perf_counter() - start


def heavy_imports() -> list[str]:
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", HELP], capture_output=True, text=True)
    loaded = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if "|" in line}
    broker = {m for m in loaded if m.startswith("kafka_txn_broker") and m not in ALLOWED_BROKER}
    return sorted({m for m in loaded if m in FORBIDDEN} | broker)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args()
    ENV.update(installed_env(ROOT))
    once("pass"), once(HELP)  # warm the page cache and .pyc files: "cold" means a new process
    bare, cli = [], []
    for _ in range(args.runs):  # interleaved, so load from other work hits both alike
        bare.append(once("pass"))
        cli.append(once(HELP))
    b, c = statistics.median(bare), statistics.median(cli)
    print(f"python -c pass        median {b * 1000:7.1f} ms  (min {min(bare) * 1000:.1f})")
    print(f"kafka-txn --help      median {c * 1000:7.1f} ms  (min {min(cli) * 1000:.1f})")
    print(f"overhead              median {(c - b) * 1000:7.1f} ms  budget {BUDGET_S * 1000:.0f} ms")
    heavy = heavy_imports()
    print(f"heavy modules imported by --help: {', '.join(heavy) or 'none'}")
    return 0 if c - b <= BUDGET_S and not heavy else 1


if __name__ == "__main__":
    sys.exit(main())
