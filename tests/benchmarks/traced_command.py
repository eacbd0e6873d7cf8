"""A `kafka-txn` command (`broker start`, `monitor`) with tracemalloc on request (used by load_soak.py and
monitor_soak.py; outside CI).

    python tests/benchmarks/traced_command.py --dump-dir DIR [--frames N] -- broker start --nodes 1 ...

Runs the CLI unchanged in this process. Signals drive tracemalloc, so a process that is not asked
pays nothing:
- SIGUSR1 starts tracing (only allocations made from then on are traced);
- SIGUSR2 takes a snapshot: the first becomes the baseline (`DIR/base.json` says so), each later one
  writes `DIR/diff-N.json`: the allocation sites that grew since the baseline, largest first, with
  the traced totals. A garbage collection runs first, so only what is still reachable counts.
Python runs the handlers on the main thread between bytecodes, i.e. between two steps of the broker's
event loop, so the snapshot sees consistent state (and stalls the broker while it is taken).
--frames: the frames kept per allocation (default 4; more tell callers apart, and slow tracing).
"""

from __future__ import annotations

import gc
import json
import os
import runpy
import signal
import sys
import tracemalloc
from pathlib import Path
from types import FrameType

FRAMES = 4  # enough to tell which caller an append in a shared helper serves; each frame slows tracing
TOP = 25
_IGNORED = (tracemalloc.__file__, "<frozen importlib._bootstrap>", "<frozen importlib._bootstrap_external>",
            "<unknown>")


class Tracer:
    def __init__(self, dump_dir: Path, frames: int = FRAMES) -> None:
        self.dump_dir = dump_dir
        self.frames = frames
        self.base_path = dump_dir / "base.snapshot"  # on disk: holding it would add to the RSS being judged
        self.diffs = 0

    def start(self, _sig: int = 0, _frame: FrameType | None = None) -> None:
        if not tracemalloc.is_tracing():
            tracemalloc.start(self.frames)

    def snapshot(self, _sig: int = 0, _frame: FrameType | None = None) -> None:
        self.start()
        gc.collect()
        snap = tracemalloc.take_snapshot().filter_traces(
            [tracemalloc.Filter(False, name) for name in _IGNORED])
        traced, peak = tracemalloc.get_traced_memory()
        if not self.base_path.exists():
            snap.dump(str(self.base_path))
            self._write("base.json", {"traced": traced})
            return
        self.diffs += 1
        stats = snap.compare_to(tracemalloc.Snapshot.load(str(self.base_path)), "traceback")
        self._write(f"diff-{self.diffs}.json", {
            "traced": traced, "peak": peak, "tracemalloc_overhead": tracemalloc.get_tracemalloc_memory(),
            "sites": [{"size_diff": s.size_diff, "count_diff": s.count_diff, "size": s.size,
                       "frames": [f"{f.filename}:{f.lineno}" for f in s.traceback]}
                      for s in stats[:TOP]]})

    def _write(self, name: str, data: object) -> None:
        tmp = self.dump_dir / f".{name}.tmp"
        tmp.write_text(json.dumps(data))
        os.replace(tmp, self.dump_dir / name)  # the reader polls for the name: it appears whole


def main() -> None:
    args = sys.argv[1:]
    frames = FRAMES
    if args[2:3] == ["--frames"] and len(args) > 3:
        frames = int(args[3])
        del args[2:4]
    if len(args) < 3 or args[0] != "--dump-dir" or args[2] != "--":
        sys.exit("usage: traced_command.py --dump-dir DIR [--frames N] -- <kafka-txn arguments>")
    tracer = Tracer(Path(args[1]), frames)
    signal.signal(signal.SIGUSR1, tracer.start)
    signal.signal(signal.SIGUSR2, tracer.snapshot)
    sys.argv = ["kafka-txn", *args[3:]]
    runpy.run_module("kafka_txn_tools", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
