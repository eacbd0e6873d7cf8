"""Long wire-fuzzing run against an embedded broker (outside CI; the bounded version is
tests/broker/apis/test_fuzz_wire.py).

    # structure-aware: valid requests of every API/version, mutated (the CI generator), a million inputs
    python tests/benchmarks/fuzz_long.py --engine mutate --inputs 1000000 --seed 1

    # coverage-guided with atheris (pip install atheris; not a project dependency): libFuzzer mutates
    # raw frames starting from a corpus of valid requests of every API/version
    python tests/benchmarks/fuzz_long.py --engine atheris --inputs 1000000

Each input goes over its own TCP connection and is judged by fuzz_wire_support.WireProbe (a decodable
response or a clean close in time; waiting only where the protocol waits); every --health-every
inputs a long-lived second connection must get Metadata answered, and any ERROR the broker logs (a
handler crash, an unexpected exception) is a finding. The mutate engine records findings and goes on;
atheris stops at the first one and writes the input to crash-<sha1>. Exit code 0 = no findings.
"""

from __future__ import annotations

import argparse
import collections
import logging
import os
import random
import resource
import struct
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

if TYPE_CHECKING:
    from tests.broker.apis import fuzz_wire_support as fz


class Run:
    def __init__(self, args: argparse.Namespace, probe: fz.WireProbe, errors: fz.BrokerErrorLog) -> None:
        self.args = args
        self.probe = probe
        self.errors = errors
        self.started = time.monotonic()
        self.inputs = 0
        self.outcomes: collections.Counter[str] = collections.Counter()
        self.findings: list[str] = []
        self.unhealthy = 0
        # The last inputs with their durations, reported with a finding: a stall is often caused by the
        # input before the one that timed out.
        self.recent: collections.deque[str] = collections.deque(maxlen=5)
        self.slow: list[str] = []  # inputs that took longer than --slow-s (reported, not findings)

    def record(self, frame: bytes, kind: str) -> None:
        started = time.monotonic()
        try:
            out = self.probe.run(frame)
            self.outcomes[f"{kind}:{'response' if out.responses else 'waited' if out.waited else 'closed'}"] += 1
        except fz.Finding as exc:
            self.findings.append(f"{kind}: {exc}; previous inputs: {list(self.recent)}")
            self.outcomes[f"{kind}:FINDING"] += 1
        except OSError as exc:  # could not even connect: the broker is down or out of sockets
            self.findings.append(f"{kind}: connection failed: {exc!r}")
        took = time.monotonic() - started
        self.recent.append(f"{kind} {took:.2f}s {frame[:40].hex()}")
        if took > self.args.slow_s and len(self.slow) < 100:
            self.slow.append(f"{kind} {took:.2f}s len {len(frame)} {frame[:60].hex()}")
        for line in self.errors.take():
            self.findings.append(f"{kind}: broker logged: {line.splitlines()[0]} input={frame[:64].hex()}")
        self.inputs += 1
        if self.inputs % self.args.health_every == 0:
            if not self.probe.healthy():
                self.unhealthy += 1
                self.findings.append(f"after {self.inputs} inputs the health connection failed")
            if self.inputs % (self.args.health_every * 50) == 0:
                # libFuzzer ends the process with exit() after -runs, so atheris runs report as they go.
                self.summary() if self.args.engine == "atheris" else self.progress()

    def progress(self) -> None:
        rate = self.inputs / max(1e-9, time.monotonic() - self.started)
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
        print(f"{self.inputs} inputs, {rate:.0f}/s, {len(self.findings)} findings, max RSS {rss} MiB",
              flush=True)

    def summary(self) -> None:
        elapsed = time.monotonic() - self.started
        print(f"\n== {self.args.engine}: {self.inputs} inputs in {elapsed:.0f} s "
              f"({self.inputs / max(elapsed, 1e-9):.0f}/s), {len(self.findings)} findings, "
              f"{self.unhealthy} failed health checks")
        by_kind: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
        for key, n in self.outcomes.items():
            kind, result = key.rsplit(":", 1)
            by_kind[kind][result] = n
        for kind in sorted(by_kind):
            print(f"  {kind:14s} " + ", ".join(f"{r} {n}" for r, n in sorted(by_kind[kind].items())))
        for f in self.findings[:50]:
            print("FINDING", f)
        print(f"{len(self.slow)} inputs took longer than {self.args.slow_s}s (excluding protocol waits)")
        for line in self.slow[:20]:
            print("  SLOW", line)
        sys.stdout.flush()  # libFuzzer may end the process with _exit right after this


def _mutate_engine(run: Run, args: argparse.Namespace) -> None:
    rng = random.Random(args.seed)
    versions = fz.request_versions()
    kinds = [*fz.MUTATIONS, "splice", "valid"]
    for i in range(args.inputs):
        key, version = rng.choice(versions)
        frame = fz.valid_request(fz.APIS[key], version, rng, correlation_id=i & 0x7FFFFFFF)
        kind = rng.choice(kinds)
        if kind == "splice":
            other = fz.APIS[rng.choice(sorted(fz.APIS))]
            frame = fz.splice(frame, fz.valid_request(other, other.max_version, rng, 7), rng)
        elif kind != "valid":
            frame = fz.mutate(frame, rng, kind)
        run.record(frame, kind)


def _atheris_engine(run: Run, args: argparse.Namespace) -> None:
    import atheris  # type: ignore[import-not-found]

    corpus = Path(tempfile.mkdtemp(prefix="fuzz-corpus-"))
    rng = random.Random(args.seed)
    for n, (key, version) in enumerate(fz.request_versions()):
        for j in range(3):
            # First byte 0: the harness adds the size prefix; 1: the input is the raw byte stream.
            (corpus / f"{n}-{j}").write_bytes(b"\x00" + fz.valid_request(fz.APIS[key], version, rng, n)[4:])

    def target(data: bytes) -> None:
        if not data:
            return
        body = data[1:]
        frame = body if data[0] & 1 else struct.pack(">i", len(body)) + body
        before = len(run.findings)
        run.record(frame, "atheris")
        if len(run.findings) > before:
            run.summary()
            raise fz.Finding(run.findings[-1])

    argv = [sys.argv[0], f"-runs={args.inputs}", f"-seed={args.seed}", "-max_len=4096", "-rss_limit_mb=0",
            f"-artifact_prefix={args.artifacts}/", str(corpus)]
    atheris.Setup(argv, target)
    atheris.Fuzz()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--engine", choices=["mutate", "atheris"], default="mutate")
    parser.add_argument("--inputs", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--health-every", type=int, default=100)
    # Generous: on a shared machine a starved broker can pause for seconds; a hang is "never".
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds an input may take to be answered")
    parser.add_argument("--slow-s", type=float, default=2.0, help="report inputs slower than this")
    parser.add_argument("--artifacts", default=".", help="where atheris writes crash inputs")
    parser.add_argument("--data-dir", default=None)
    args = parser.parse_args()
    logging.basicConfig(level=logging.CRITICAL)  # the judge reads the broker's ERRORs itself

    global fz
    if args.engine == "atheris":
        import atheris  # type: ignore[import-not-found]

        # Coverage feedback from the broker and kafka-python's protocol code only (the handler modules
        # are imported by load_all, inside the block too).
        with atheris.instrument_imports(include=["kafka_txn_broker", "kafka.protocol"]):
            from tests.broker.apis import fuzz_wire_support as fz

            fz.apis()
    else:
        from tests.broker.apis import fuzz_wire_support as fz
    from kafka_txn_broker import EmbeddedCluster

    data_dir = args.data_dir or tempfile.mkdtemp(prefix="fuzz-long-")
    cluster = EmbeddedCluster(nodes=1, data_dir=data_dir, config=fz.FUZZ_CONFIG).start()
    cluster.create_topic(fz.FUZZ_TOPIC, 2, 1)
    errors_cm: Any = fz.broker_errors()
    run = Run(args, fz.WireProbe(cluster.bootstrap_servers, timeout_s=args.timeout), errors_cm.__enter__())
    print(f"fuzzing {len(fz.APIS)} APIs ({len(fz.request_versions())} API versions) on "
          f"{cluster.bootstrap_servers}, data in {data_dir}", flush=True)
    if args.engine == "atheris":
        _atheris_engine(run, args)  # does not return
    _mutate_engine(run, args)
    healthy = run.probe.healthy()
    run.summary()
    run.probe.close()
    cluster.stop()
    return 0 if not run.findings and healthy else 1


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
