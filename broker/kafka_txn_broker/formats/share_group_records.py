"""The share groups' record in `__consumer_offsets`: ShareGroupMetadata (record type 11).

Key: int16 11, then GroupId (int16-length string). Value: int16 version 0, then (flexible) Epoch int32,
MetadataHash int64, an empty tagged-field section. A null value (tombstone) deletes the group.
Kafka also keeps a share group's members and assignments there (types 10, 12-15); the embedded broker
keeps only the group and its epoch, so a new coordinator knows the group and its members rejoin.
Pure: no I/O.
"""

from __future__ import annotations

import struct

SHARE_GROUP_METADATA = 11
VALUE_VERSION = 0


class RecordFormatError(ValueError):
    """A share group record this code cannot parse."""


def encode_key(group_id: str) -> bytes:
    raw = group_id.encode()
    return struct.pack(">hh", SHARE_GROUP_METADATA, len(raw)) + raw


def decode_key(data: bytes) -> str | None:
    """The group id of a ShareGroupMetadata key; None for other record types."""
    if len(data) < 4:
        raise RecordFormatError("share group key too short")
    kind, n = struct.unpack_from(">hh", data)
    if kind != SHARE_GROUP_METADATA:
        return None
    if n < 0 or 4 + n > len(data):
        raise RecordFormatError("bad group id length in a share group key")
    return data[4:4 + n].decode()


def encode_value(epoch: int, metadata_hash: int) -> bytes:
    return struct.pack(">hiq", VALUE_VERSION, epoch, metadata_hash) + b"\x00"


def decode_value(data: bytes) -> tuple[int, int]:
    """(epoch, metadata hash)."""
    if len(data) < 14:
        raise RecordFormatError("share group value too short")
    version, epoch, metadata_hash = struct.unpack_from(">hiq", data)
    if version != VALUE_VERSION:
        raise RecordFormatError(f"unsupported share group value version {version}")
    return epoch, metadata_hash
