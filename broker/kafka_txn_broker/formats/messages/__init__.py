"""The wire codec: every Kafka protocol message the broker reads or writes, and how a framed request or
response is decoded and encoded. The one door to the library that does it (kafka-python 3.0.12's
schema-generated classes): no other module of kafka_txn_broker imports kafka-python (a contract in
pyproject.toml), so an upgrade or another codec changes this package only.

    from kafka_txn_broker.formats.messages import ProduceResponse, ShareFetchRequest
    ProduceResponse[9](responses=[...])

What it gives, by name:
- the request and response classes of the APIs kafka-python has (`KAFKA_PYTHON`: API -> its module there);
- the messages it lacks (share groups, KIP-848's consumer-group APIs, KIP-1289's TxnShareAcknowledge), built
  by its class builder from JSON definitions in this package, written for kafka-txn-tools from Kafka's
  published field lists (`MESSAGES`);
- the ACL enums of the ACL APIs, and `BROKER_API_VERSIONS`: the API version ranges of Apache Kafka releases.

Every class offers the same interface, which the handlers use: `API_KEY`, `min_version`/`max_version`,
`Cls[version]`, construction by field name, the struct classes nested as attributes
(`ProduceResponse.TopicProduceResponse`), fields as attributes. Framing and the header go through the
functions below (`decode_request`, `encode_response`, and the client side's `encode_request`,
`decode_response`), so nothing else names the library's methods. A codec of another shape would be adapted
to this interface here.

Nothing is imported with this package: a name resolves on first use (module __getattr__), so the formats
package stays importable without kafka-python. The handlers bind their classes when they are imported, so a
request pays no lookup. Threading: names are resolved at import time in practice; two threads resolving one
name at once may build it twice, and both keep the first.
"""

from __future__ import annotations

import importlib
import struct
import types
from typing import Any

from kafka_txn_broker.formats.messages.plain import PlainResponse
from kafka_txn_broker.formats.messages.validate import null_violation
from kafka_txn_broker.gc_pause import bulk

MESSAGES = frozenset(f"{api}{kind}" for api in (
    "ShareGroupHeartbeat", "ShareGroupDescribe", "ShareFetch", "ShareAcknowledge", "DescribeShareGroupOffsets",
    "AlterShareGroupOffsets", "DeleteShareGroupOffsets", "ConsumerGroupHeartbeat", "ConsumerGroupDescribe",
    "TxnShareAcknowledge",
) for kind in ("Request", "Response"))
# KIP-1289's TxnShareAcknowledge: the KIP says 93, which Kafka trunk gave to StreamsGroupTopologyDescriptionUpdate
# (KIP-1331); the draft implementation moved to 94, which this broker uses until a key is final. The JSON
# definitions carry the same number (a test keeps them equal).
TXN_SHARE_ACKNOWLEDGE_KEY = 94

# The APIs whose classes kafka-python has, by the module that defines them there.
KAFKA_PYTHON: dict[str, str] = {
    **dict.fromkeys(("Produce", "InitProducerId", "AddPartitionsToTxn", "AddOffsetsToTxn", "EndTxn",
                     "TxnOffsetCommit", "WriteTxnMarkers"), "kafka.protocol.producer"),
    **dict.fromkeys(("Fetch", "ListOffsets", "OffsetCommit", "OffsetFetch", "OffsetDelete", "OffsetForLeaderEpoch",
                     "JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup"), "kafka.protocol.consumer"),
    **dict.fromkeys(("ApiVersions", "Metadata", "FindCoordinator"), "kafka.protocol.metadata"),
    **dict.fromkeys(("AlterConfigs", "AlterPartitionReassignments", "CreateAcls", "CreatePartitions",
                     "CreateTopics", "DeleteAcls", "DeleteGroups", "DeleteRecords", "DeleteTopics", "DescribeAcls",
                     "DescribeCluster", "DescribeConfigs", "DescribeGroups", "DescribeLogDirs", "DescribeProducers",
                     "DescribeTransactions", "ElectLeaders", "IncrementalAlterConfigs", "ListGroups",
                     "ListPartitionReassignments", "ListTransactions"), "kafka.protocol.admin"),
    **dict.fromkeys(("SaslHandshake", "SaslAuthenticate"), "kafka.protocol.sasl"),
}
_OTHER_NAMES = {
    **dict.fromkeys(("ACLOperation", "ACLPermissionType", "ACLResourcePatternType", "ACLResourceType"),
                    "kafka.protocol.admin"),
    "BROKER_API_VERSIONS": "kafka.protocol.broker_version_data",
}
_MODULE_OF = {**{f"{api}{kind}": module for api, module in KAFKA_PYTHON.items() for kind in ("Request", "Response")},
              **_OTHER_NAMES}
_resolved: dict[str, Any] = {}


class MalformedRequest(ValueError):
    """A frame Kafka's request reader would refuse (the broker closes the connection, as Kafka does)."""


# The request header (v1, and v2 for flexible versions: KIP-482) up to its client id: frame size, API key,
# API version, correlation id, client id length (a nullable string, never compact).
_REQUEST_HEAD = struct.Struct(">ihhih")
_RESPONSE_HEAD = struct.Struct(">ii")  # frame size, correlation id
_NO_TAGGED_FIELDS = b"\x00"
# A request this big is decoded with the garbage collector paused (gc_pause): a ListOffsets request for 6,700
# partitions is 120 KB, and collections in the middle of its decode set off full collections of the broker's heap.
BULK_FRAME_BYTES = 16 * 1024
_API_VERSIONS_KEY = 18


def decode_request(request_class: Any, frame: bytes, version: int) -> tuple[Any, int, str | None]:
    """(request, correlation id, client id) of a framed request (size, header, body) at `version`.

    The header is read here and only the body handed to the generated decoder, which would copy the whole
    frame to read the header (a hot path: every request); a header it would read differently (tagged fields,
    a client id past the frame's end) goes to it whole. MalformedRequest for bytes that do not decode, and for
    a null in a field that is not nullable in this version, which Kafka's reader refuses too ("non-nullable
    field X was serialized as null")."""
    try:
        if len(frame) < BULK_FRAME_BYTES:
            request, correlation_id, client_id = _decode(request_class, frame, version)
        else:  # thousands of objects, all kept: see gc_pause
            with bulk():
                request, correlation_id, client_id = _decode(request_class, frame, version)
    except Exception as exc:  # the generated decoder raises many types on garbage
        raise MalformedRequest(f"cannot decode API {request_class.API_KEY} v{version}: {exc!r}") from None
    bad_null = null_violation(request, version)
    if bad_null is not None:
        raise MalformedRequest(f"API {request_class.API_KEY} v{version}: non-nullable field {bad_null} is null")
    return request, correlation_id, client_id


def _decode(request_class: Any, frame: bytes, version: int) -> tuple[Any, int, str | None]:
    plan = _REQUEST_PLANS.get((request_class, version))
    if plan is None:
        plan = _request_plan(request_class, version)
    if plan is not None and len(frame) >= _REQUEST_HEAD.size:
        flexible, decode_body = plan
        _size, _key, _version, correlation_id, length = _REQUEST_HEAD.unpack_from(frame)
        pos = _REQUEST_HEAD.size + max(length, 0)
        if pos + flexible <= len(frame) and (not flexible or frame[pos] == 0):
            client_id = None if length < 0 else str(frame[_REQUEST_HEAD.size:pos], "utf-8")
            return decode_body(memoryview(frame), pos + flexible)[0], correlation_id, client_id
    request = request_class.decode(frame, version=version, header=True, framed=True)
    return request, request.header.correlation_id, getattr(request.header, "client_id", None)


# (request class, version) -> (flexible: the header ends with tagged fields, the body decoder kafka-python
# generates for that version: what the class's decode() calls after its checks)
_REQUEST_PLANS: dict[tuple[Any, int], tuple[int, Any]] = {}


def _request_plan(request_class: Any, version: int) -> tuple[int, Any] | None:
    """None for a version the message does not have (its decode() says so)."""
    if not 0 <= version <= request_class.max_version:
        return None
    flexible = 1 if request_class.flexible_version_q(version) else 0
    primary = request_class[None]
    decode_body = primary._struct.compiled_decode_from(version, compact=bool(flexible), tagged=bool(flexible),
                                                       data_class=primary)
    return _REQUEST_PLANS.setdefault((request_class, version), (flexible, decode_body))


def encode_response(response: Any, version: int, correlation_id: int) -> bytes:
    """The framed response (size, header, body) at `version`, whatever version the object was built at: its
    header is v0, or v1 with no tagged fields for flexible versions, except ApiVersions, whose header stays
    v0 so that any client can read it (KIP-511); written here, the body by the generated encoder (or, for a
    PlainResponse, by its own `body`)."""
    if isinstance(response, PlainResponse):  # written from plain values (plain.py)
        body = response.body(version)
        tagged = response.flexible(version)
    else:
        if version != response.API_VERSION:
            response.API_VERSION = version
        body = response.encode()
        tagged = response.API_KEY != _API_VERSIONS_KEY and response.flexible_version_q(version)
    head = _RESPONSE_HEAD.pack(len(body) + 4 + tagged, correlation_id)
    return b"".join((head, _NO_TAGGED_FIELDS, body) if tagged else (head, body))


def encode_request(request: Any, version: int, correlation_id: int, client_id: str | None) -> bytes:
    """The framed request (size, header, body) at `version`: a client's side."""
    request.with_header(correlation_id=correlation_id, client_id=client_id)
    return bytes(request.encode(version=version, header=True, framed=True))


def decode_response(response_class: Any, frame: bytes, version: int) -> Any:
    """A framed response (size, header, body) at `version`: a client's side."""
    return response_class.decode(frame, version=version, header=True, framed=True)


def new_message(cls: Any, version: int, /, **fields: Any) -> Any:
    """`cls[version](**fields)`, the same object built without kafka-python's constructor, which walks every
    field of the schema in Python: the handlers of the requests every transaction sends (Produce,
    AddPartitionsToTxn, EndTxn) build their responses here. As that constructor does: the fields of that
    version that are not given hold their schema defaults, a given tagged field is listed in `tags`."""
    plan = _MESSAGE_PLANS.get((cls, version))
    if plan is None:
        plan = _message_plan(cls, version)
    primary, defaults, tagged = plan
    obj = _new_object(primary)
    obj._header = obj._min_version = obj._max_version = obj.unknown_tags = obj.tags = None
    obj._version = version
    for name, default in defaults:
        setattr(obj, name, default)
    for name, value in fields.items():
        setattr(obj, name, value)
    if tagged and not tagged.isdisjoint(fields):
        obj.tags = {name for name in fields if name in tagged}
    return obj


def new_struct(cls: Any, /, **fields: Any) -> Any:
    """`cls(**fields)` for a struct nested in a message (`ProduceResponse.TopicProduceResponse`), built as
    new_message builds a message: the same object as kafka-python's constructor makes (the fields not given
    are not set; they read as their schema defaults)."""
    tagged = _STRUCT_TAGS.get(cls)
    if tagged is None:
        tagged = _STRUCT_TAGS.setdefault(cls, frozenset(f.name for f in cls._struct._fields if f._tag is not None))
    obj = _new_object(cls)
    obj._version = obj.unknown_tags = obj.tags = None
    for name, value in fields.items():
        setattr(obj, name, value)
    if tagged and not tagged.isdisjoint(fields):
        obj.tags = {name for name in fields if name in tagged}
    return obj


_new_object = object.__new__
# (message class, version) -> (its primary class, (field, default) of that version's fields, tagged fields)
_MESSAGE_PLANS: dict[tuple[Any, int], tuple[Any, tuple[tuple[str, Any], ...], frozenset[str]]] = {}
_STRUCT_TAGS: dict[Any, frozenset[str]] = {}


def _message_plan(cls: Any, version: int) -> tuple[Any, tuple[tuple[str, Any], ...], frozenset[str]]:
    cls[version]  # noqa: B018  (kafka-python's check of the version: ValueError outside the message's range)
    primary = cls[None]
    fields = primary._struct._fields
    plan = (primary, tuple((f.name, f.default) for f in fields if f.for_version_q(version)),
            frozenset(f.name for f in fields if f._tag is not None))
    return _MESSAGE_PLANS.setdefault((cls, version), plan)


def __getattr__(name: str) -> Any:
    """The message class (or enum, or table) `name`, resolved on first use."""
    found = _resolved.get(name)
    if found is not None:
        return found
    if name in MESSAGES:
        found = _build(name)
    elif name in _MODULE_OF:
        from kafka_txn_broker.formats.messages.kafka_python import schema_loading

        with schema_loading():  # the first import of kafka-python builds its classes (quietly)
            found = getattr(importlib.import_module(_MODULE_OF[name]), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return _resolved.setdefault(name, found)


def _build(name: str) -> Any:
    """One of our messages, made by kafka-python's class builder from `<name>.json` here."""
    from kafka_txn_broker.formats.messages.kafka_python import schema_loading

    with schema_loading():  # kafka-python reads the JSON with an API Python 3.11/3.12 flag as deprecated
        from kafka.protocol.api_message import ApiMessage

        built = types.new_class(name, (ApiMessage,), {"load_json": __name__})
    if name.endswith("Request"):
        # kafka-python decodes a response with the class registered for its API key when that class was
        # created: a process that only sends (a client) must build the response class too.
        __getattr__(name[: -len("Request")] + "Response")
    return built
