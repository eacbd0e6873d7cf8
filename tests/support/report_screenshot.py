"""docs/sweep-report.png: the sweep's report of a generated fleet, as headless Chromium shows it at 1280 px.

    python -m tests.support.report_screenshot [OUT.png]      (default docs/sweep-report.png; needs java, chromium)

The fleet is tests/tools/spark's test data set (every kind of finding), swept with --include-late and a
bootstrap server, so that every command line is shown; the page is cut at HEIGHT px (the findings and the
first chart).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from kafka_txn_tools.admin.advice import Invocation
from kafka_txn_tools.spark.job import run_sweep
from tests.support import generator as gen

ROOT = Path(__file__).resolve().parents[2]
WIDTH, HEIGHT = 1280, 2000
GEN = {"seed": 5, "brokers": 3, "topics": 3, "partitions_per_topic": 6, "hanging_per_reason": 1, "late_live": 3}


def main(argv: list[str]) -> int:
    target = Path(argv[0]) if argv else ROOT / "docs" / "sweep-report.png"
    chromium = shutil.which("chromium")
    if chromium is None:
        print("error: chromium not found: run `bash scripts/dev.sh setup`", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="sweep-report-") as tmp:
        work = Path(tmp)
        gen.write_dump(gen.GeneratorConfig(**GEN), work / "dump")
        run_sweep([str(work / "dump")], work / "out", include_late=True, master="local[2]",
                  invocation=Invocation("kafka-1.prod.example.com:9093", None, None))
        done = subprocess.run(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
             f"--user-data-dir={work / 'chromium'}", f"--window-size={WIDTH},{HEIGHT}",
             f"--screenshot={target.resolve()}", (work / "out" / "report.html").as_uri()],
            capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        print(done.stderr[-2000:], file=sys.stderr)
        return 1
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
