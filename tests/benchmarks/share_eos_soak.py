"""KIP-1289 exactly-once over a share group, with kill -9 (outside CI; a long run):

    python tests/benchmarks/share_eos_soak.py --inputs 10000 --kills 1 --abort-rate 0.1

`kafka-txn broker start` runs in a child process with transactional share acknowledgements enabled. The
input topic gets N records. A read-process-write loop reads them with librdkafka's ShareConsumer (explicit
acknowledgement) and, in one transaction of the project's TransactionalShareProducer, writes one output per
input and stages the inputs' ACCEPTs (send_share_acknowledgements_to_transaction); a random share of the
transactions is aborted instead of committed. At random moments (--kills times) the broker process is killed
with SIGKILL and restarted on the same ports and data; the loop builds new clients and goes on.

When every input has its output (or nothing moves for --stall-s), it checks what KIP-1289 promises:
- every input's output is visible to a read_committed reader exactly once (none missing, none twice);
- no input is acknowledged without its output: the share group has delivered everything it will (a new
  member gets nothing more) and each share-partition's start offset is at the end of its input partition;
- the inputs of aborted transactions were delivered again (the ledger of what the loop aborted).
Exit code 0 = all held.
"""

from __future__ import annotations

import argparse
import contextlib
import random
import socket
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.e2e.helpers import BrokerProcess, consume_all  # noqa: E402

GROUP, READER, TXN_ID = "eos-group", "eos-reader", "eos-loop"
SETS = ("share.transactional.acknowledgement.enable=true", "transaction.state.log.num.partitions=3",
        "offsets.topic.num.partitions=3")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Loop:
    """The read-process-write loop; survives broker kills by building its clients again."""

    def __init__(self, args: argparse.Namespace, broker: BrokerProcess) -> None:
        self.args, self.broker = args, broker
        self.rng = random.Random(args.seed)
        self.committed_inputs: set[str] = set()  # the loop was told: committed
        self.aborted_inputs: set[str] = set()  # the loop aborted them itself
        self.redelivered_after_abort: set[str] = set()
        self.transactions = Counter[str]()
        self.failures = 0
        self.stop = threading.Event()
        self.last_progress = time.monotonic()

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                self._session()
            except Exception as exc:  # the broker died under us: new clients once it is back
                self.failures += 1
                print(f"  loop: {type(exc).__name__}: {str(exc)[:120]} -> new clients", flush=True)
                time.sleep(1.0)

    def _session(self) -> None:
        from confluent_kafka import ShareConsumer

        from kafka_txn_tools.clients import AbortableShareAcknowledgementError, TransactionalShareProducer

        bootstrap = self.broker.bootstrap
        consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "client.id": READER,
                                  "share.acknowledgement.mode": "explicit", "log_level": 0})
        consumer.subscribe(["in"])
        producer = TransactionalShareProducer(bootstrap_servers=bootstrap, transactional_id=TXN_ID,
                                              transaction_timeout_ms=self.args.txn_timeout_ms)
        try:
            producer.init_transactions()  # fences the previous instance; its open transaction is aborted
            polled_at = time.monotonic()
            while not self.stop.is_set():
                batch = [m for m in consumer.poll(0.5) if m.error() is None]
                if not batch:
                    if time.monotonic() - polled_at > self.args.idle_s:
                        # librdkafka's ShareConsumer can stay silent after its broker was killed and
                        # restarted: a new member (and producer) picks the work up.
                        raise TimeoutError(f"nothing polled for {self.args.idle_s:.0f} s")
                    continue
                polled_at = time.monotonic()
                try:  # a poll can return hundreds: small transactions, so a kill lands inside one
                    for i in range(0, len(batch), self.args.batch):
                        try:
                            self._one_transaction(producer, batch[i:i + self.args.batch])
                        except AbortableShareAcknowledgementError:
                            producer.abort_transaction()  # e.g. the member's epoch moved: the records come back
                            self.transactions["abortable"] += 1
                finally:
                    self._release(consumer, batch)
        finally:
            for close in (consumer.close, producer.close):
                with contextlib.suppress(Exception):  # a dead broker: nothing to close cleanly
                    close()

    def _one_transaction(self, producer: Any, batch: list[Any]) -> None:
        from kafka_txn_tools.clients import acks_from_messages

        meta = producer.share_group_metadata(GROUP, READER)
        ids = [m.value().decode() for m in batch]
        self.redelivered_after_abort.update(i for i in ids if i in self.aborted_inputs)
        producer.begin_transaction()
        for value in ids:
            producer.send("out", value=("out-" + value).encode())
        producer.send_share_acknowledgements_to_transaction(acks_from_messages(batch), meta)
        if self.rng.random() < self.args.abort_rate:
            producer.abort_transaction()
            self.aborted_inputs.update(ids)
            self.transactions["aborted"] += 1
        else:
            producer.commit_transaction()
            self.committed_inputs.update(ids)
            self.transactions["committed"] += 1
            self.last_progress = time.monotonic()

    @staticmethod
    def _release(consumer: Any, batch: list[Any]) -> None:
        from kafka_txn_tools.clients import release_polled

        with contextlib.suppress(Exception):  # the consumer is rebuilt when its broker went away
            release_polled(consumer, batch)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--inputs", type=int, default=10_000)
    parser.add_argument("--partitions", type=int, default=3)
    parser.add_argument("--nodes", type=int, default=1, help="broker nodes in the killed process")
    parser.add_argument("--kills", type=int, default=1)
    parser.add_argument("--batch", type=int, default=20, help="inputs per transaction at most")
    parser.add_argument("--idle-s", type=float, default=5.0, help="new clients after this long without a record")
    parser.add_argument("--abort-rate", type=float, default=0.1)
    parser.add_argument("--txn-timeout-ms", type=int, default=20_000)
    parser.add_argument("--stall-s", type=float, default=30.0,
                        help="end after this long without a commit (a commit whose answer a kill lost "
                             "is not counted)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--data-dir", default=None)
    args = parser.parse_args()
    data_dir = Path(args.data_dir or tempfile.mkdtemp(prefix="share-eos-"))
    broker = BrokerProcess(data_dir, args.nodes, free_port(), SETS)
    bootstrap = broker.start()
    print(f"share EOS soak: {args.inputs} inputs, {args.kills} kill(s), abort rate {args.abort_rate}, "
          f"broker {bootstrap}, data {data_dir}", flush=True)
    prepare(bootstrap, args)
    loop = Loop(args, broker)
    worker = threading.Thread(target=loop.run, daemon=True)
    started = time.monotonic()
    worker.start()
    rng = random.Random(args.seed + 1)
    kill_points = sorted(rng.uniform(0.1, 0.9) for _ in range(args.kills))
    for point in kill_points:
        # Each kill waits for its point, and for the loop to have committed again since the last restart.
        resumed_from = len(loop.committed_inputs) + 3 * args.batch
        while len(loop.committed_inputs) < max(point * args.inputs, resumed_from) and not stalled(loop, args):
            time.sleep(0.05)
        time.sleep(rng.uniform(0.0, 0.5))  # somewhere inside a transaction, or between two
        broker.kill9()
        print(f"  kill -9 at {len(loop.committed_inputs)} committed inputs ({time.monotonic() - started:.0f} s)",
              flush=True)
        time.sleep(rng.uniform(0.5, 3.0))
        broker.start()
    while not stalled(loop, args) and len(loop.committed_inputs) < args.inputs:
        time.sleep(0.2)
    time.sleep(2.0)  # the last transactions' markers
    loop.stop.set()
    worker.join(60)
    problems = verify(broker.bootstrap, args, loop)
    print(f"  transactions {dict(loop.transactions)}, loop restarts {loop.failures}, "
          f"inputs aborted once or more {len(loop.aborted_inputs)}, of them delivered again "
          f"{len(loop.redelivered_after_abort)}; {time.monotonic() - started:.0f} s", flush=True)
    broker.terminate()
    if problems:
        print("FAILED: " + "; ".join(problems), flush=True)
        return 1
    print(f"PASSED: {args.inputs} inputs exactly once through {args.kills} kill -9", flush=True)
    return 0


def stalled(loop: Loop, args: argparse.Namespace) -> bool:
    return time.monotonic() - loop.last_progress > args.stall_s


def prepare(bootstrap: str, args: argparse.Namespace) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    from tests.e2e.share_support import set_group_configs

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic("in", args.partitions, 1), NewTopic("out", 1, 1)]).values():
        f.result(30)
    set_group_configs(bootstrap, GROUP, share_auto_offset_reset="earliest")
    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5})
    for i in range(args.inputs):
        p.produce("in", value=f"in-{i}".encode(), partition=i % args.partitions)
        if i % 1000 == 999:
            p.poll(0)
    assert p.flush(60) == 0


def verify(bootstrap: str, args: argparse.Namespace, loop: Loop) -> list[str]:
    problems: list[str] = []
    outputs = Counter(v.decode() for part in consume_all(bootstrap, "out", 1, read_committed=True).values()
                      for _o, _k, v in part)
    wanted = {f"out-in-{i}" for i in range(args.inputs)}
    missing, twice = wanted - outputs.keys(), [k for k, n in outputs.items() if n > 1]
    if missing:
        problems.append(f"{len(missing)} inputs without output, e.g. {sorted(missing)[:5]}")
    if twice:
        problems.append(f"{len(twice)} outputs visible more than once, e.g. {sorted(twice)[:5]}")
    left = leftover_deliveries(bootstrap)
    if left:
        problems.append(f"{left} inputs still delivered after all were processed (acknowledged without output?)")
    if loop.aborted_inputs - loop.redelivered_after_abort - loop.committed_inputs:
        problems.append("inputs of aborted transactions never delivered again")
    print(f"  outputs visible: {sum(outputs.values())} ({len(outputs)} distinct); leftover deliveries: {left}",
          flush=True)
    return problems


def leftover_deliveries(bootstrap: str, seconds: float = 10.0) -> int:
    """What a new member of the group still gets (nothing, when every input is acknowledged)."""
    from confluent_kafka import ShareConsumer

    c = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "client.id": "eos-check",
                       "share.acknowledgement.mode": "explicit", "log_level": 0})
    c.subscribe(["in"])
    got = 0
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            batch = [m for m in c.poll(0.5) if m.error() is None]
            got += len(batch)
            for m in batch:
                c.acknowledge(m, 2)  # RELEASE: leave them for the group
    finally:
        c.close()
    return got


if __name__ == "__main__":
    sys.exit(main())
