"""The fidelity table: `python3 -m tests.external.fidelity.report [--release 4.4.0] [--markdown]`.

Starts one node of real Apache Kafka (the release's jars from Maven Central, cached) and one embedded node
emulating it, runs every case on both, and prints API x case: same, or differs and how.
"""

from __future__ import annotations

import argparse
import datetime
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from tests.external.fidelity.cases import CASES
from tests.external.fidelity.known import known, varies
from tests.external.fidelity.runner import CaseResult, compare, negotiate, run_side
from tests.external.fidelity.sides import RELEASE, embedded_cluster, emulated, real_cluster, run_secured, run_two_nodes


def run_all(release: str, base: Path) -> tuple[dict[str, int], list[CaseResult]]:
    """Both pairs of clusters: plain (CASES), then with an authorizer (ACL_CASES)."""
    with real_cluster(release, base / "real") as real, embedded_cluster(release, base / "embedded") as ours:
        versions = negotiate(real.bootstrap_servers, ours.bootstrap_servers)
        results = compare(CASES, run_side(real.bootstrap_servers, CASES, versions),
                          run_side(ours.bootstrap_servers, CASES, versions))
    return versions, results + run_secured(release, base, versions) + run_two_nodes(release, base, versions)


def table(results: Sequence[CaseResult], markdown: bool, release: str) -> str:
    rows = []
    for r in results:
        reason = known(r.case.name, release) or varies(r.case.name, release)
        verdict = "same" if r.same else ("differs (known)" if reason else "DIFFERS")
        how = "; ".join(r.diffs) if r.diffs else r.case.about
        if r.diffs and reason:
            how = f"{reason} [{how}]"
        rows.append((", ".join(r.case.apis), r.case.name, verdict, how))
    if markdown:
        out = ["| API | case | result | what / how it differs |", "|---|---|---|---|"]
        out += [f"| {a} | {c} | {v} | {h.replace('|', '/')} |" for a, c, v, h in rows]
        return "\n".join(out)
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    return "\n".join(f"{a:<{widths[0]}}  {c:<{widths[1]}}  {v:<{widths[2]}}  {h}" for a, c, v, h in rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m tests.external.fidelity.report",
                                     description="the embedded broker against real Apache Kafka, case by case")
    parser.add_argument("--release", default=RELEASE, help="Apache Kafka release (default %(default)s)")
    parser.add_argument("--markdown", action="store_true", help="a Markdown table (for docs/broker.md)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="fidelity-") as tmp:
        versions, results = run_all(args.release, Path(tmp))
    same = sum(r.same for r in results)
    print(f"Apache Kafka {args.release} vs the embedded broker (kafka.version.emulate={emulated(args.release)}), "
          f"{datetime.date.today().isoformat()}: {same}/{len(results)} cases the same")
    print("versions: " + ", ".join(f"{k} v{v}" for k, v in sorted(versions.items()) if "." not in k))
    print(table(results, args.markdown, args.release))
    return 0 if all(r.same or known(r.case.name, args.release) or varies(r.case.name, args.release)
                    for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
