"""Full crash soak (outside CI; the bounded one is tests/e2e/test_crash_soak.py):

    python tests/benchmarks/crash_soak.py --producers 200 --kills 20

200 confluent-kafka transactional producers (one thread and one transactional.id each) run
transactions against `kafka-txn broker start` in a child process, which is killed with SIGKILL at
random moments and restarted on the same ports and data. After every restart the load runs on, pauses,
and a read_committed consumer checks the whole topic against the ledger of what each client was told
(tests/e2e/soak.py): committed exactly once, aborted never, unknown outcomes whole or absent, no
transaction left in Prepare*/Ongoing, last stable offset = high watermark. Exit code 0 = all kills passed.
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.e2e.soak import SoakConfig, SoakFailure, run_soak  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--producers", type=int, default=200)
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--partitions", type=int, default=12)
    parser.add_argument("--nodes", type=int, default=1, help="broker nodes in the killed process")
    parser.add_argument("--run-min", type=float, default=2.0, help="least seconds of load before a kill")
    parser.add_argument("--run-max", type=float, default=8.0, help="most seconds of load before a kill")
    parser.add_argument("--down-max", type=float, default=10.0, help="most seconds the broker stays down")
    parser.add_argument("--after-restart", type=float, default=5.0, help="seconds of load after each restart")
    parser.add_argument("--txn-timeout-ms", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--data-dir", default=None)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)

    config = SoakConfig(producers=args.producers, kills=args.kills, partitions=args.partitions, nodes=args.nodes,
                        run_before_kill=(args.run_min, args.run_max), down_time=(0.0, args.down_max),
                        run_after_restart=args.after_restart, txn_timeout_ms=args.txn_timeout_ms, seed=args.seed)
    data_dir = Path(args.data_dir or tempfile.mkdtemp(prefix="crash-soak-"))
    print(f"crash soak: {config} in {data_dir}", flush=True)
    started = time.monotonic()
    try:
        _reports, summary = run_soak(config, data_dir, on_round=lambda r: print(r, flush=True))
    except SoakFailure as exc:
        print(f"FAILED after {time.monotonic() - started:.0f} s: {exc}", flush=True)
        return 1
    print(summary)
    print(f"PASSED: {args.kills} kills of {args.producers} transactional producers in "
          f"{time.monotonic() - started:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
