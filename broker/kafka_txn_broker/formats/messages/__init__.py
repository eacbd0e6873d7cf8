"""Protocol messages kafka-python 3.0.12 has no classes for, built by its class builder from JSON
definitions in this package (written for kafka-txn-tools from Kafka's published field lists):

    from kafka_txn_broker.formats.messages import ShareFetchRequest
    ShareFetchRequest[1](group_id="g", member_id="m", share_session_epoch=0, ...)

The classes behave like kafka-python's own (encode/decode, versions, nested struct classes). They are
built on first use (module __getattr__), and only then is kafka-python imported: the formats package
stays importable without it, as its other modules are.
"""

from __future__ import annotations

from typing import Any

MESSAGES = frozenset(f"{api}{kind}" for api in (
    "ShareGroupHeartbeat", "ShareGroupDescribe", "ShareFetch", "ShareAcknowledge", "DescribeShareGroupOffsets",
    "AlterShareGroupOffsets", "DeleteShareGroupOffsets", "ConsumerGroupHeartbeat", "ConsumerGroupDescribe",
    "TxnShareAcknowledge",
) for kind in ("Request", "Response"))
# KIP-1289's TxnShareAcknowledge: the KIP says 93, which Kafka trunk gave to StreamsGroupTopologyDescriptionUpdate
# (KIP-1331); the draft implementation moved to 94, which this broker uses until a key is final. The JSON
# definitions carry the same number (a test keeps them equal).
TXN_SHARE_ACKNOWLEDGE_KEY = 94
_built: dict[str, Any] = {}


def __getattr__(name: str) -> Any:
    """The message class `name`, made by kafka-python's class builder from `<name>.json` here."""
    if name not in MESSAGES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if name not in _built:
        import types

        from kafka_txn_broker.formats.kafka_python import schema_loading

        with schema_loading():  # kafka-python reads the JSON with an API Python 3.11/3.12 flag as deprecated
            from kafka.protocol.api_message import ApiMessage

            _built[name] = types.new_class(name, (ApiMessage,), {"load_json": __name__})
        if name.endswith("Request"):
            # kafka-python decodes a response with the class registered for its API key when that class was
            # created: a process that only sends (a client) must build the response class too.
            __getattr__(name[: -len("Request")] + "Response")
    return _built[name]
