"""CoordinatorRuntime: the partitions of one coordinator topic this node coordinates, each in a state
(Kafka's CoordinatorRuntime and its CoordinatorState).

    INITIAL --load--> LOADING --replayed to the log end--> ACTIVE
                         |  \\--replay failed--> FAILED --load at a newer epoch--> LOADING
                         \\------ unload (any state) --> CLOSED (the partition is forgotten)

- `schedule_load(partition, epoch)` (this node became the partition's leader) builds a fresh shard and starts
  the asynchronous chunked load (loader.py). A load at an epoch no newer than the partition's is ignored; a
  partition already LOADING or ACTIVE just takes the newer epoch, as in Kafka.
- `schedule_unload(partition, epoch)` (leadership moved away; epoch None: unconditionally) cancels a load
  under way, unloads the shard and forgets the partition. A load that ends after its partition was unloaded,
  or unloaded and loaded again, is discarded: only the load of the partition's current context is applied.
- `active(partition)` is what a request gets: the ACTIVE shard, else COORDINATOR_LOAD_IN_PROGRESS while the
  partition loads and NOT_COORDINATOR otherwise (never loaded here, FAILED, CLOSED), as Kafka's runtime
  answers. Clients retry the first and look the coordinator up again after the second.

When the load has replayed the whole log, the shard's `finish_load()` runs and then the `on_loaded` listener
(the transaction coordinator re-drives the transactions it found in PREPARE_*), in the same event-loop step
as the loader's last look at the log end.

Outside an event loop (a node driven by hand in a unit test) a load runs to completion inside
`schedule_load`, so such a test sees the partition ACTIVE at once.

Threading: one asyncio event loop owns broker state; the runtime, its shards and its load tasks all live on
it, so a request never sees a shard mid-chunk and no locks are needed. Collaborators come through the
constructor: the topic, this node's id, the loader, the shard builder and the listener.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

from kafka_txn_broker.coordinator.loader import CoordinatorPlayback
from kafka_txn_broker.formats.errors import CoordinatorLoadInProgressError, NotCoordinatorError

if TYPE_CHECKING:
    from kafka_txn_broker.coordinator.loader import CoordinatorLoader, LoadSummary

log = logging.getLogger(__name__)


class CoordinatorState(enum.Enum):
    INITIAL = "initial"
    LOADING = "loading"
    ACTIVE = "active"
    FAILED = "failed"
    CLOSED = "closed"


# Kafka's CoordinatorState.canTransitionFrom: the states each state may be entered from.
_ENTERED_FROM = {
    CoordinatorState.LOADING: {CoordinatorState.INITIAL, CoordinatorState.FAILED},
    CoordinatorState.ACTIVE: {CoordinatorState.LOADING, CoordinatorState.ACTIVE},
    CoordinatorState.FAILED: {CoordinatorState.LOADING, CoordinatorState.ACTIVE},
    CoordinatorState.CLOSED: set(CoordinatorState),
}


class CoordinatorShard(CoordinatorPlayback, Protocol):
    """One partition's state as its coordinator keeps it (Kafka's CoordinatorShard)."""

    def finish_load(self) -> None:
        """The whole log was replayed: the shard is about to serve requests."""
        ...

    def unload(self) -> None:
        """The partition is no longer coordinated here (or its load failed): let go of waiters and state."""
        ...


class LeaderChange(Protocol):
    """A partition's new leadership as the metadata announces it."""

    @property
    def topic(self) -> str: ...

    @property
    def partition(self) -> int: ...

    @property
    def leader(self) -> int: ...

    @property
    def leader_epoch(self) -> int: ...


S = TypeVar("S", bound=CoordinatorShard)


@dataclass(eq=False)
class _Context(Generic[S]):
    """One partition's coordinator (Kafka's CoordinatorContext)."""

    partition: int
    epoch: int = -1
    state: CoordinatorState = CoordinatorState.INITIAL
    shard: S | None = None
    task: asyncio.Task[None] | None = None

    def transition(self, state: CoordinatorState) -> None:
        if self.state not in _ENTERED_FROM[state]:
            raise RuntimeError(f"partition {self.partition}: cannot go from {self.state.name} to {state.name}")
        self.state = state


class CoordinatorRuntime(Generic[S]):
    def __init__(self, topic: str, node_id: int, loader: CoordinatorLoader, build_shard: Callable[[int, int], S],
                 on_loaded: Callable[[int, S], None] | None = None) -> None:
        self.topic = topic
        self.node_id = node_id
        self.loader = loader
        self.build_shard = build_shard
        self.on_loaded = on_loaded
        self._contexts: dict[int, _Context[S]] = {}
        # Requests answered COORDINATOR_LOAD_IN_PROGRESS since the start (how often clients had to wait).
        self.load_in_progress_answers = 0

    # ---- leadership ------------------------------------------------------------------------------
    def on_leadership_change(self, changed: Iterable[LeaderChange]) -> None:
        """Kafka's onElection / onResignation for this runtime's topic."""
        for state in changed:
            if state.topic != self.topic:
                continue
            if state.leader == self.node_id:
                self.schedule_load(state.partition, state.leader_epoch)
            else:
                self.schedule_unload(state.partition)

    def schedule_load(self, partition: int, epoch: int) -> None:
        """This node leads the partition at `epoch`: load it unless it is loading or loaded already."""
        ctx = self._contexts.get(partition)
        if ctx is None:
            ctx = self._contexts[partition] = _Context(partition)
        if epoch <= ctx.epoch:
            log.debug("node %s: ignored loading %s-%s at epoch %s (it is at %s)", self.node_id, self.topic,
                      partition, epoch, ctx.epoch)
            return
        ctx.epoch = epoch
        if ctx.state in (CoordinatorState.INITIAL, CoordinatorState.FAILED):
            self._start_load(ctx)

    def schedule_unload(self, partition: int, epoch: int | None = None) -> None:
        """This node no longer leads the partition: stop a load, unload the shard, forget it. With `epoch`,
        an unload older than the partition's current epoch is ignored (Kafka's rule)."""
        ctx = self._contexts.get(partition)
        if ctx is None or (epoch is not None and epoch <= ctx.epoch):
            return
        self._close(ctx)

    def ensure_loading(self, partition: int) -> None:
        """A request for a partition this node leads by the metadata, with no load under way or done: the
        election hook has not run yet (a node starting), or the last load failed. Start one."""
        ctx = self._contexts.get(partition)
        if ctx is not None and ctx.state in (CoordinatorState.LOADING, CoordinatorState.ACTIVE):
            return
        epoch = max(ctx.epoch, 0) if ctx is not None else 0
        if ctx is not None:
            self._close(ctx)
        self.schedule_load(partition, epoch)

    def close(self) -> None:
        """Shutdown: unload every partition."""
        for ctx in list(self._contexts.values()):
            self._close(ctx)

    # ---- what requests see -----------------------------------------------------------------------
    def active(self, partition: int) -> S:
        """The partition's ACTIVE shard; COORDINATOR_LOAD_IN_PROGRESS or NOT_COORDINATOR otherwise."""
        ctx = self._contexts.get(partition)
        if ctx is not None and ctx.state is CoordinatorState.ACTIVE and ctx.shard is not None:
            return ctx.shard
        if ctx is not None and ctx.state is CoordinatorState.LOADING:
            self.load_in_progress_answers += 1
            raise CoordinatorLoadInProgressError(f"node {self.node_id} is loading {self.topic}-{partition}")
        state = "never loaded" if ctx is None else ctx.state.name
        raise NotCoordinatorError(f"node {self.node_id} is not the coordinator of {self.topic}-{partition} ({state})")

    def active_or_none(self, partition: int) -> S | None:
        ctx = self._contexts.get(partition)
        return ctx.shard if ctx is not None and ctx.state is CoordinatorState.ACTIVE else None

    def active_shards(self) -> list[S]:
        return list(self.active_by_partition().values())

    def active_by_partition(self) -> dict[int, S]:
        return {p: c.shard for p, c in self._contexts.items()
                if c.state is CoordinatorState.ACTIVE and c.shard is not None}

    def state(self, partition: int) -> CoordinatorState | None:
        ctx = self._contexts.get(partition)
        return None if ctx is None else ctx.state

    def epoch(self, partition: int) -> int | None:
        ctx = self._contexts.get(partition)
        return None if ctx is None else ctx.epoch

    def loading_partitions(self) -> list[int]:
        return sorted(p for p, c in self._contexts.items() if c.state is CoordinatorState.LOADING)

    @property
    def loading(self) -> bool:
        return any(c.state is CoordinatorState.LOADING for c in self._contexts.values())

    # ---- loading ---------------------------------------------------------------------------------
    def _start_load(self, ctx: _Context[S]) -> None:
        ctx.transition(CoordinatorState.LOADING)
        shard = ctx.shard = self.build_shard(ctx.partition, ctx.epoch)
        log.info("node %s: loading %s-%s at epoch %s", self.node_id, self.topic, ctx.partition, ctx.epoch)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # a node driven by hand, outside an event loop
            try:
                summary = self.loader.load_now(self.topic, ctx.partition, shard)
            except Exception as exc:
                self._failed(ctx, exc)
                return
            self._loaded(ctx, summary)
            return
        ctx.task = loop.create_task(self._load(ctx, shard), name=f"load-{self.topic}-{ctx.partition}")

    async def _load(self, ctx: _Context[S], shard: S) -> None:
        try:
            summary = await self.loader.load(self.topic, ctx.partition, shard)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self._failed(ctx, exc)
            return
        finally:
            if ctx.task is asyncio.current_task():
                ctx.task = None
        self._loaded(ctx, summary)

    def _current(self, ctx: _Context[S]) -> bool:
        """Is this load still wanted: its context not unloaded or replaced, and still loading."""
        return self._contexts.get(ctx.partition) is ctx and ctx.state is CoordinatorState.LOADING

    def _loaded(self, ctx: _Context[S], summary: LoadSummary) -> None:
        if not self._current(ctx) or ctx.shard is None:
            log.info("node %s: discarded a finished load of %s-%s (%s)", self.node_id, self.topic,
                     ctx.partition, ctx.state.name)
            return
        shard = ctx.shard
        try:
            shard.finish_load()
        except Exception as exc:
            self._failed(ctx, exc)
            return
        ctx.transition(CoordinatorState.ACTIVE)
        log.info("node %s: loaded %s-%s at epoch %s in %d ms: %d records, %d bytes in %d chunks", self.node_id,
                 self.topic, ctx.partition, ctx.epoch, summary.end_ms - summary.start_ms, summary.records,
                 summary.bytes, summary.chunks)
        if self.on_loaded is not None:
            self.on_loaded(ctx.partition, shard)

    def _failed(self, ctx: _Context[S], exc: Exception) -> None:
        if not self._current(ctx):
            return
        log.error("node %s: loading %s-%s at epoch %s failed: %r", self.node_id, self.topic, ctx.partition,
                  ctx.epoch, exc)
        ctx.transition(CoordinatorState.FAILED)
        self._unload_shard(ctx)

    def _close(self, ctx: _Context[S]) -> None:
        if self._contexts.get(ctx.partition) is ctx:
            del self._contexts[ctx.partition]
        if ctx.task is not None:
            ctx.task.cancel()
            ctx.task = None
        was_active = ctx.state is CoordinatorState.ACTIVE
        ctx.transition(CoordinatorState.CLOSED)
        self._unload_shard(ctx)
        if was_active:
            log.info("node %s: unloaded %s-%s", self.node_id, self.topic, ctx.partition)

    def _unload_shard(self, ctx: _Context[S]) -> None:
        shard, ctx.shard = ctx.shard, None
        if shard is None:
            return
        try:
            shard.unload()
        except Exception:  # one shard's bug must not keep the others loaded
            log.exception("node %s: unloading %s-%s failed", self.node_id, self.topic, ctx.partition)
