"""Kafka's primitive encodings: varints, and a reader and writer for the record keys and values of the
internal topics (`__transaction_state`, `__consumer_offsets`).

Signed varints are zigzag + LEB128 (record fields); unsigned varints are plain LEB128 (the lengths and
tags of flexible versions). Classic versions use int16 string lengths and int32 array and byte lengths,
-1 for null; flexible versions use unsigned varints holding length + 1, 0 for null, and end each
structure with a tagged-field section. A `Reader` or `Writer` is made for one of the two.
"""

from __future__ import annotations

import struct

from kafka_txn_broker.formats.errors import CorruptRecordError

Buffer = bytes | bytearray | memoryview

_MASK64 = 0xFFFFFFFFFFFFFFFF


# The one-byte varints (0-127): most of a record's varints, built once. A record built by the broker (a
# marker, a coordinator's record) encodes five to ten of them.
_ONE_BYTE = tuple(bytes((z,)) for z in range(0x80))


def encode_varint(value: int) -> bytes:
    """Zigzag + LEB128 (a record's lengths, deltas and header count)."""
    z = ((value << 1) ^ (value >> 63)) & _MASK64
    return _ONE_BYTE[z] if z < 0x80 else encode_uvarint(z)


def decode_varint(buf: Buffer, pos: int) -> tuple[int, int]:
    """(value, position after it) of a zigzag varint."""
    if pos < len(buf) and buf[pos] < 0x80:  # one byte: the common case, without the loop
        z = buf[pos]
        return (z >> 1) ^ -(z & 1), pos + 1
    z, pos = decode_uvarint(buf, pos)
    return (z >> 1) ^ -(z & 1), pos


def encode_uvarint(value: int) -> bytes:
    if 0 <= value < 0x80:
        return _ONE_BYTE[value]
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def decode_uvarint(buf: Buffer, pos: int) -> tuple[int, int]:
    """(value, position after it) of an unsigned LEB128 varint of at most 64 bits."""
    shift = 0
    value = 0
    while True:
        if pos >= len(buf):
            raise CorruptRecordError("varint runs past the end of the buffer")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            raise CorruptRecordError("varint is too long")


class Reader:
    """A big-endian cursor over one key or value. Every read names the field it was reading, so a
    truncated or corrupt input raises `error` ("value ends inside ProducerId")."""

    __slots__ = ("data", "pos", "flexible", "error")

    def __init__(self, data: Buffer, *, flexible: bool = False, error: type[Exception] = ValueError) -> None:
        self.data = memoryview(data)
        self.pos = 0
        self.flexible = flexible
        self.error = error

    def take(self, fmt: str, what: str) -> int:
        """One fixed-size integer (a struct format of one field)."""
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.data):
            raise self.error(f"value ends inside {what}")
        (value,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += size
        return int(value)

    def int16(self, what: str) -> int:
        return self.take(">h", what)

    def int32(self, what: str) -> int:
        return self.take(">i", what)

    def int64(self, what: str) -> int:
        return self.take(">q", what)

    def raw(self, size: int, what: str) -> bytes:
        if size < 0 or self.pos + size > len(self.data):
            raise self.error(f"value ends inside {what}")
        out = bytes(self.data[self.pos:self.pos + size])
        self.pos += size
        return out

    def uvarint(self, what: str) -> int:
        try:
            value, self.pos = decode_uvarint(self.data, self.pos)
        except CorruptRecordError as exc:
            raise self.error(f"{what}: {exc}") from None
        return value

    def _length(self, classic_fmt: str, what: str) -> int:
        """A length: uvarint holding n + 1 when flexible, else the classic fixed-size field; -1 = null."""
        return self.uvarint(what) - 1 if self.flexible else self.take(classic_fmt, what)

    def string(self, what: str) -> str | None:
        n = self._length(">h", f"{what} length")
        if n < 0:
            return None
        try:
            return self.raw(n, what).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise self.error(f"{what} is not UTF-8: {exc}") from None

    def blob(self, what: str) -> bytes | None:
        n = self._length(">i", f"{what} length")
        return None if n < 0 else self.raw(n, what)

    def array_length(self, what: str) -> int:
        """Element count of an array; -1 for a null array."""
        return self._length(">i", f"{what} count")

    def tags(self) -> dict[int, bytes]:
        """The tagged fields of a flexible structure, raw (callers decode the tags they know and skip
        the others, as the spec requires); nothing in a classic one."""
        if not self.flexible:
            return {}
        found = {}
        for _ in range(self.uvarint("tagged field count")):
            tag = self.uvarint("tag")
            found[tag] = self.raw(self.uvarint(f"tagged field {tag} size"), f"tagged field {tag}")
        return found


class Writer:
    """Builds one key or value; the mirror of `Reader`."""

    __slots__ = ("_parts", "flexible")

    def __init__(self, *, flexible: bool = False) -> None:
        self._parts: list[bytes] = []
        self.flexible = flexible

    def pack(self, fmt: str, *values: int) -> Writer:
        self._parts.append(struct.pack(fmt, *values))
        return self

    def int16(self, value: int) -> Writer:
        return self.pack(">h", value)

    def int32(self, value: int) -> Writer:
        return self.pack(">i", value)

    def int64(self, value: int) -> Writer:
        return self.pack(">q", value)

    def raw(self, data: bytes) -> Writer:
        self._parts.append(bytes(data))
        return self

    def _length(self, classic_fmt: str, n: int) -> Writer:
        if self.flexible:
            self._parts.append(encode_uvarint(n + 1))
            return self
        return self.pack(classic_fmt, n)

    def string(self, value: str | None) -> Writer:
        if value is None:
            return self._length(">h", -1)
        raw = value.encode()
        return self._length(">h", len(raw)).raw(raw)

    def blob(self, value: bytes | None) -> Writer:
        if value is None:
            return self._length(">i", -1)
        return self._length(">i", len(value)).raw(value)

    def array_length(self, n: int) -> Writer:
        """Element count of an array; -1 writes a null array."""
        return self._length(">i", n)

    def tags(self, tags: list[tuple[int, bytes]] | None = None) -> Writer:
        """A flexible structure's tagged fields (in tag order); nothing in a classic one."""
        if not self.flexible:
            return self
        items = tags or []
        self._parts.append(encode_uvarint(len(items)))
        for tag, value in items:
            self._parts.append(encode_uvarint(tag) + encode_uvarint(len(value)) + value)
        return self

    def to_bytes(self) -> bytes:
        return b"".join(self._parts)
