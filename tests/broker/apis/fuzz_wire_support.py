"""Wire fuzzing shared by tests/broker/apis/test_fuzz_wire.py (bounded, in CI) and
tests/benchmarks/fuzz_long.py (a million inputs, outside CI).

Inputs start as *valid* requests, built from the request schema of every API the broker registers
(values chosen by field name so handlers get past their first checks: the fuzz topic, group and
transactional id exist), then are mutated at the byte level: bit flips, truncation, frame length
fields, random tails, wrong API versions, huge array/string counts, spliced requests, pure noise.

`WireProbe.run` sends one input on its own connection, half-closes it and reads until the broker
closes, then judges the outcome:
- a complete response frame must carry our correlation id and decode as the API's response at the
  requested version (the broker never sends garbage);
- otherwise the connection must be closed cleanly within the timeout;
- waiting is allowed only where the protocol itself waits (a decodable Fetch/JoinGroup/SyncGroup);
- a handler exception (logged by server/socket_server.py / formats/errors.py) is a finding even though the broker
  contained it: a decodable request deserves a Kafka error code, not a dropped connection.
"""

from __future__ import annotations

import logging
import random
import socket
import struct
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from kafka_txn_broker.apis.registry import APIS, ApiSpec, load_all
from kafka_txn_broker.formats.record_batch import build_batch, crc32c

FUZZ_TOPIC = "fuzz"
FUZZ_GROUP = "fuzz-group"
FUZZ_TXN = "fuzz-txn"
TOPICS = [FUZZ_TOPIC, "fuzz-other", "__consumer_offsets", "__transaction_state", "", "no-such-topic", "a" * 300]
GROUPS = [FUZZ_GROUP, "", "other-group", "g" * 300]
TXN_IDS = [FUZZ_TXN, "", "other-txn"]
# The fuzz cluster: members left behind by fuzzed JoinGroups expire quickly (so later joins do not
# wait on them), and few internal partitions keep it light.
FUZZ_CONFIG = {
    "group.min.session.timeout.ms": 10,
    "offsets.topic.num.partitions": 3,
    "transaction.state.log.num.partitions": 3,
    "share.transactional.acknowledgement.enable": True,  # so KIP-1289's gated API is fuzzed too
}
# APIs whose response may legitimately wait on other clients or on MaxWaitMs: Fetch, JoinGroup, SyncGroup,
# and ShareFetch, which long-polls up to its MaxWaitMs like Fetch (a mutated byte there can ask for minutes;
# once, under load, such an input went past the 5 s budget and was reported as a hang).
WAITING_APIS = {1, 11, 14, 78}
INT_EDGES = [0, 1, -1, 2, 127, 128, 255, 256, 32767, -32768, 65535, 2**31 - 1, -(2**31), 2**63 - 1, -(2**63)]

HEADER = struct.Struct(">ihhi")  # size, api key, api version, correlation id


def apis() -> dict[int, ApiSpec]:
    return load_all()


# ---- valid requests from the schema ---------------------------------------------------------------------
def _int_value(name: str, bits: int, rng: random.Random) -> int:
    if name == "max_wait_ms":
        return rng.choice([0, 5, 20])
    if name in ("session_timeout_ms", "rebalance_timeout_ms"):
        # Short, so members left behind by earlier inputs expire soon (the fuzz cluster lowers
        # group.min.session.timeout.ms) and joins do not wait for them long.
        return rng.choice([100, 200])
    if name == "transaction_timeout_ms":
        return rng.choice([60000, 1000, 0, -1])
    if name == "timeout_ms":
        return rng.choice([0, 100, 1000])
    if name in ("partition", "index", "partition_index", "partitions", "partition_indexes", "broker_ids"):
        return rng.choice([0, 0, 0, 1, -1, 99])
    if name in ("max_bytes", "partition_max_bytes"):
        return rng.choice([1 << 20, 0, 100])
    if name == "min_bytes":
        return rng.choice([0, 1])
    if name == "num_partitions":
        return rng.choice([1, 2, -1, 0])
    if name in ("replication_factor",):
        return rng.choice([1, -1, 3])
    if name == "acks":
        return rng.choice([-1, 1, 1, 0, 2])
    if name in ("producer_id", "v3_and_below_producer_id", "producer_id_filters"):
        return rng.choice([-1, 0, 1000, 1])
    if name in ("producer_epoch", "v3_and_below_producer_epoch"):
        return rng.choice([-1, 0, 1])
    if name == "isolation_level":
        return rng.choice([0, 1])
    if name == "key_type":
        return rng.choice([0, 1, 2])
    if name == "transaction_version":
        return rng.choice([0, 1, 2])
    if name in ("fetch_offset", "committed_offset", "log_start_offset"):
        return rng.choice([0, 0, 1, -1, 10**12])
    if name == "timestamp":
        return rng.choice([-1, -2, -3, 0])
    if name == "duration_filter":
        return rng.choice([-1, 0, 1000])
    value = rng.choice([0, 1, -1, 2])
    if rng.random() < 0.05:
        value = rng.choice(INT_EDGES)
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return max(lo, min(hi, value))


def _string_value(name: str, rng: random.Random) -> str:
    if name in ("topic", "topic_names") or name == "name":
        return rng.choice(TOPICS[:2] * 4 + TOPICS)
    if name in ("group_id", "groups", "groups_names", "coordinator_keys"):
        return rng.choice(GROUPS[:1] * 4 + GROUPS)
    if name in ("transactional_id", "v3_and_below_transactional_id", "transactional_ids"):
        return rng.choice(TXN_IDS[:1] * 4 + TXN_IDS)
    if name == "member_id":
        return rng.choice(["", "", "member-1"])
    if name == "protocol_type":
        return "consumer"
    if name == "protocol_name":
        return rng.choice(["range", "roundrobin"])
    if name == "transactional_id_pattern":
        return rng.choice([".*", "fuzz.*", "(", "a{99999}"])
    if name in ("state_filters", "states_filter"):
        return rng.choice(["Ongoing", "Empty", "Bogus", "Stable"])
    if name == "types_filter":
        return rng.choice(["classic", "consumer", "x"])
    if name == "value":
        return rng.choice(["1", "compact", "-5", "x"])
    return rng.choice(["x", "", "fuzz", "\u00e9\u6f22"])


def _crc_valid_garbage(rng: random.Random) -> bytes:
    """A batch whose header and CRC are right but whose records section is noise: byte flips elsewhere
    in the frame break the CRC, so only this reaches the record walk behind it."""
    count = rng.choice([0, 1, 2, 5, 200, 2**31 - 1])
    garbage = bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 80)))
    attributes = rng.choice([0, 0, 0x10, 0x20, 1, 4])  # plain, transactional, control, gzip, zstd
    pid, seq = rng.choice([(-1, -1), (1000, 0)])
    body = struct.pack(">hiqqqhii", attributes, max(count, 1) - 1, 1_700_000_000_000, 1_700_000_000_000, pid, 0,
                       seq, count) + garbage
    return struct.pack(">qiibI", 0, len(body) + 9, 0, 2, crc32c(body)) + body


def _records(rng: random.Random) -> bytes:
    if rng.random() < 0.15:
        return _crc_valid_garbage(rng)
    n = rng.randint(1, 3)
    recs = [(b"k%d" % i if rng.random() < 0.5 else None, b"v" * rng.randint(0, 40)) for i in range(n)]
    kind = rng.random()
    if kind < 0.6:
        return build_batch(recs, timestamp_ms=1_700_000_000_000)
    if kind < 0.8:
        return build_batch(recs, timestamp_ms=1_700_000_000_000, producer_id=rng.choice([0, 1, 1000]),
                           producer_epoch=0, base_sequence=rng.choice([0, 5]))
    return build_batch(recs, timestamp_ms=1_700_000_000_000, producer_id=rng.choice([0, 1000]),
                       producer_epoch=0, base_sequence=0, transactional=True)


def _simple_value(f: Any, version: int, rng: random.Random, name: str) -> Any:
    t = f._type_str.removeprefix("[]")
    if t in ("int8", "int16", "int32", "int64", "uint16"):
        bits = {"int8": 8, "int16": 16, "int32": 32, "int64": 64, "uint16": 17}[t]
        value = _int_value(name, bits, rng)
        return value & 0xFFFF if t == "uint16" else value
    if t == "float64":
        return rng.choice([0.0, 1.5, -1.0])
    if t == "bool":
        return rng.random() < 0.5
    if t == "uuid":
        return rng.choice([None, uuid.UUID(int=0), uuid.UUID(int=rng.getrandbits(128))])
    if t == "string":
        return _string_value(name, rng)
    if t == "records":
        return _records(rng)
    if t == "bytes":
        return bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 16)))
    if t == "bitfield":  # responses only (authorized operations): a set of bit numbers of an int32
        return set(rng.sample(range(32), rng.randint(0, 4)))
    raise AssertionError(f"unhandled schema type {t}")


def _nullable(f: Any, version: int, rng: random.Random) -> bool:
    return bool(f.nullable_for_version_q(version)) and rng.random() < 0.1


def _struct_value(struct: Any, version: int, rng: random.Random) -> Any:
    values: dict[str, Any] = {}
    for f in struct._fields:
        if not f.for_version_q(version):
            continue
        if f.tagged_field_q(version) and rng.random() < 0.5:
            continue  # tagged fields are optional on the wire
        values[f.name] = _field_value(f, version, rng)
    return struct.data_class(version=version, **values)


def _field_value(f: Any, version: int, rng: random.Random) -> Any:
    if _nullable(f, version, rng):
        return None
    if f.is_struct_array():
        return [_struct_value(f.array_of, version, rng) for _ in range(rng.choice([1, 1, 1, 2, 0]))]
    if f.is_struct():
        return _struct_value(f, version, rng)
    if f.is_array():
        return [_simple_value(f, version, rng, f.name) for _ in range(rng.choice([1, 1, 2, 0]))]
    return _simple_value(f, version, rng, f.name)


def valid_request_object(spec: ApiSpec, version: int, rng: random.Random) -> Any:
    """A well-formed request of this API and version with plausible field values."""
    values = {}
    for f in spec.request._struct._fields:
        if f.for_version_q(version) and not (f.tagged_field_q(version) and rng.random() < 0.5):
            values[f.name] = _field_value(f, version, rng)
    return spec.request[version](**values)


def encode_request(req: Any, correlation_id: int, client_id: str | None = "fuzz") -> bytes:
    req.with_header(correlation_id=correlation_id, client_id=client_id)
    return bytes(req.encode(header=True, framed=True))


def valid_request(spec: ApiSpec, version: int, rng: random.Random, correlation_id: int) -> bytes:
    """The framed bytes of `valid_request_object`."""
    req = valid_request_object(spec, version, rng)
    return encode_request(req, correlation_id, rng.choice(["fuzz", "", None]))


# ---- byte-level mutations -----------------------------------------------------------------------------
def _reframe(body: bytes) -> bytes:
    return struct.pack(">i", len(body)) + body


def _flip_bits(frame: bytes, rng: random.Random) -> bytes:
    body = bytearray(frame[4:])
    if not body:
        return frame
    for _ in range(rng.randint(1, 8)):
        pos = rng.randrange(len(body))
        body[pos] ^= 1 << rng.randrange(8)
    return _reframe(bytes(body))


def _truncate(frame: bytes, rng: random.Random) -> bytes:
    body = frame[4:]
    return _reframe(body[:rng.randrange(len(body))]) if body else frame


def _size_field(frame: bytes, rng: random.Random) -> bytes:
    body = frame[4:]
    size = rng.choice([0, -1, 1, 7, 8, len(body) - 1, len(body) + 1, len(body) * 2, 2**31 - 1, -(2**31),
                       100 * 1024 * 1024 + 1, rng.randrange(-(2**31), 2**31)])
    return struct.pack(">i", size) + body


def _random_tail(frame: bytes, rng: random.Random) -> bytes:
    tail = bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 64)))
    return _reframe(frame[4:] + tail)


def _wrong_version(frame: bytes, rng: random.Random) -> bytes:
    body = bytearray(frame[4:])
    if len(body) < 4:
        return frame
    struct.pack_into(">h", body, 2, rng.choice([-1, 0, 1, 3, 13, 99, 32767, -32768, rng.randrange(-32768, 32768)]))
    return _reframe(bytes(body))


def _wrong_api_key(frame: bytes, rng: random.Random) -> bytes:
    body = bytearray(frame[4:])
    if len(body) < 2:
        return frame
    struct.pack_into(">h", body, 0, rng.choice([*APIS, -1, 17, 36, 999, rng.randrange(-32768, 32768)]))
    return _reframe(bytes(body))


def _count_positions(body: bytes) -> list[tuple[int, int]]:
    """Where an array/string length probably sits: (position, width) of int32 1..8 and int16 1..300
    (non-flexible lengths) and single-byte varints 1..9 (flexible: count + 1)."""
    out = []
    for i in range(8, len(body) - 3):
        (v,) = struct.unpack_from(">i", body, i)
        if 1 <= v <= 8:
            out.append((i, 4))
    for i in range(8, len(body) - 1):
        (v,) = struct.unpack_from(">h", body, i)
        if 1 <= v <= 300:
            out.append((i, 2))
        if 1 <= body[i] <= 9:
            out.append((i, 1))
    return out


def _huge_count(frame: bytes, rng: random.Random) -> bytes:
    body = bytearray(frame[4:])
    spots = _count_positions(bytes(body))
    if not spots:
        return _flip_bits(frame, rng)
    pos, width = rng.choice(spots)
    if width == 4:
        body[pos:pos + 4] = struct.pack(">i", rng.choice([2**31 - 1, 2**30, 10**6, -2, -(2**31)]))
    elif width == 2:
        body[pos:pos + 2] = struct.pack(">h", rng.choice([32767, -2, 30000]))
    else:
        # A 5-byte unsigned varint (up to 2^32 - 1) replacing a 1-byte one.
        body[pos:pos + 1] = rng.choice([b"\xff\xff\xff\xff\x0f", b"\xff\xff\xff\x7f", b"\x80\x80\x80\x80\x08"])
    return _reframe(bytes(body))


def _int_edges(frame: bytes, rng: random.Random) -> bytes:
    body = bytearray(frame[4:])
    if len(body) < 12:
        return _flip_bits(frame, rng)
    width = rng.choice([1, 2, 4, 8])
    pos = rng.randrange(8, max(9, len(body) - width))
    value = rng.choice(INT_EDGES)
    fmt = {1: ">b", 2: ">h", 4: ">i", 8: ">q"}[width]
    lo, hi = -(1 << (8 * width - 1)), (1 << (8 * width - 1)) - 1
    body[pos:pos + width] = struct.pack(fmt, max(lo, min(hi, value)))[:max(0, len(body) - pos)]
    return _reframe(bytes(body))


def _delete_insert(frame: bytes, rng: random.Random) -> bytes:
    body = bytearray(frame[4:])
    pos = rng.randrange(8, max(9, len(body)))
    if rng.random() < 0.5:
        del body[pos:pos + rng.randint(1, 8)]
    else:
        body[pos:pos] = bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 8)))
    return _reframe(bytes(body))


def _noise(frame: bytes, rng: random.Random) -> bytes:
    body = frame[4:12] + bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 200)))
    return _reframe(body)


MUTATIONS: dict[str, Callable[[bytes, random.Random], bytes]] = {
    "bit_flip": _flip_bits, "truncate": _truncate, "size_field": _size_field, "random_tail": _random_tail,
    "wrong_version": _wrong_version, "wrong_api_key": _wrong_api_key, "huge_count": _huge_count,
    "int_edges": _int_edges, "delete_insert": _delete_insert, "noise": _noise,
}


def mutate(frame: bytes, rng: random.Random, kind: str | None = None) -> bytes:
    if kind is None:
        kind = rng.choice(list(MUTATIONS))
    out = MUTATIONS[kind](frame, rng)
    if kind != "size_field" and rng.random() < 0.2:
        out = MUTATIONS[rng.choice(["bit_flip", "huge_count", "int_edges"])](out, rng)
    return out


def splice(a: bytes, b: bytes, rng: random.Random) -> bytes:
    """The head of one request with the tail of another (headers survive, bodies mismatch)."""
    cut_a = rng.randrange(12, max(13, len(a)))
    cut_b = rng.randrange(12, max(13, len(b)))
    return _reframe(a[4:cut_a] + b[cut_b:])


# ---- sending and judging ------------------------------------------------------------------------------
class Finding(AssertionError):
    """The broker misbehaved on one input; the message says how and carries the input."""


@dataclass
class Outcome:
    responses: list[bytes] = field(default_factory=list)
    closed: bool = False
    waited: bool = False


def _recv_exact(s: socket.socket, n: int, deadline: float) -> bytes | None:
    buf = bytearray()
    while len(buf) < n:
        s.settimeout(max(0.001, deadline - time.monotonic()))
        try:
            chunk = s.recv(n - len(buf))
        except ConnectionResetError:
            return None
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


def decodes_as_request(frame: bytes) -> tuple[ApiSpec, Any] | None:
    """Decode the first request of a byte stream as the broker would (its size prefix may claim fewer
    bytes than follow: the rest is the next frame); None if the broker cannot."""
    if len(frame) < 12:
        return None
    size, key, version, _cid = HEADER.unpack_from(frame)
    spec = APIS.get(key)
    if spec is None or not 8 <= size <= len(frame) - 4 or not spec.min_version <= version <= spec.max_version:
        return None
    try:
        return spec, spec.request.decode(frame[:4 + size], version=version, header=True, framed=True)
    except Exception:
        return None


def _may_wait(frame: bytes) -> bool:
    decoded = decodes_as_request(frame)
    return decoded is not None and decoded[0].key in WAITING_APIS


class WireProbe:
    def __init__(self, address: str, timeout_s: float = 5.0, wait_budget_s: float = 0.3) -> None:
        host, port = address.split(",")[0].rsplit(":", 1)
        self.addr = (host, int(port))
        self.timeout_s = timeout_s
        # How long a request the protocol lets wait (a decodable Fetch, JoinGroup, SyncGroup) is given
        # before we stop listening; the broker keeps it parked, which is allowed.
        self.wait_budget_s = wait_budget_s
        self._health: socket.socket | None = None
        self._health_cid = 0

    def run(self, frame: bytes) -> Outcome:
        """Send one (possibly broken) frame on a fresh connection and judge what comes back."""
        out = Outcome()
        may_wait = _may_wait(frame)
        with socket.create_connection(self.addr, timeout=self.timeout_s) as s:
            try:
                s.sendall(frame)
                s.shutdown(socket.SHUT_WR)  # EOF: the broker must not wait for bytes that never come
            except (BrokenPipeError, ConnectionResetError):
                out.closed = True  # closed while we were still sending: a clean refusal
                return out
            deadline = time.monotonic() + (self.wait_budget_s if may_wait else self.timeout_s)
            try:
                while True:
                    head = _recv_exact(s, 4, deadline)
                    if head is None:
                        out.closed = True
                        break
                    (size,) = struct.unpack(">i", head)
                    if not 4 <= size <= 64 * 1024 * 1024:
                        raise Finding(f"response frame size {size} for input {frame[:64].hex()}")
                    body = _recv_exact(s, size, deadline)
                    if body is None:
                        raise Finding(f"truncated response frame for input {frame[:64].hex()}")
                    out.responses.append(body)
            except TimeoutError:
                if not may_wait:
                    raise Finding(f"no response and no close within {self.timeout_s}s for input "
                                  f"{frame[:96].hex()} (len {len(frame)})") from None
                out.waited = True
        self._judge(frame, out)
        return out

    @staticmethod
    def _judge(frame: bytes, out: Outcome) -> None:
        if not out.responses:
            return
        decoded = decodes_as_request(frame)
        if decoded is None:
            # The broker answered what we sent, so it must have been readable by some rule (e.g. the
            # ApiVersions fallback, or a shorter size prefix leaving a second frame); only framing is
            # checked: each response starts with a correlation id.
            return
        spec, req = decoded
        _, _, version, cid = HEADER.unpack_from(frame)
        first = out.responses[0]
        (got_cid,) = struct.unpack_from(">i", first)
        if got_cid != cid:
            raise Finding(f"response correlation id {got_cid} != {cid} for API {spec.key} v{version}")
        try:
            spec.response.decode(_reframe(first), version=version, header=True, framed=True)
        except Exception as exc:
            raise Finding(f"undecodable API {spec.key} v{version} response: {exc!r}") from None

    # A long-lived connection that must keep working while others are fuzzed.
    def healthy(self) -> bool:
        from kafka.protocol.metadata import MetadataRequest, MetadataResponse

        if self._health is None:
            self._health = socket.create_connection(self.addr, timeout=self.timeout_s)
        self._health_cid += 1
        req = MetadataRequest[9](topics=[MetadataRequest.MetadataRequestTopic(name=FUZZ_TOPIC)],
                                 allow_auto_topic_creation=False, include_topic_authorized_operations=False)
        req.with_header(correlation_id=self._health_cid, client_id="health")
        self._health.sendall(bytes(req.encode(header=True, framed=True)))
        deadline = time.monotonic() + self.timeout_s
        head = _recv_exact(self._health, 4, deadline)
        if head is None:
            return False
        body = _recv_exact(self._health, struct.unpack(">i", head)[0], deadline)
        if body is None:
            return False
        resp = MetadataResponse.decode(_reframe(body), version=9, header=True, framed=True)
        return bool(resp.header.correlation_id == self._health_cid and resp.brokers)

    def close(self) -> None:
        if self._health is not None:
            self._health.close()
            self._health = None


# ---- handler exceptions the broker logged ---------------------------------------------------------------
class BrokerErrorLog(logging.Handler):
    """Collects ERROR records of the broker: handler crashes (server/socket_server.py) and unexpected exceptions
    turned into UNKNOWN_SERVER_ERROR (formats/errors.py)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def take(self) -> list[str]:
        out = [self.format(r) for r in self.records]
        self.records.clear()
        return out


@contextmanager
def broker_errors() -> Iterator[BrokerErrorLog]:
    handler = BrokerErrorLog()
    handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
    logger = logging.getLogger("kafka_txn_broker")
    old_level = logger.level
    if logger.getEffectiveLevel() > logging.ERROR:
        logger.setLevel(logging.ERROR)  # the records must reach the handler even if logging is quiet
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)


def request_versions() -> list[tuple[int, int]]:
    """Every (API key, version) the broker accepts."""
    return [(k, v) for k, s in sorted(apis().items()) for v in range(s.min_version, s.max_version + 1)]
