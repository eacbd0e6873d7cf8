"""Protocol messages kafka-python 3.0.12 has no classes for, built by its class builder from JSON
definitions in this package (written for kafka-txn-tools from Kafka's published field lists):

    from kafka_txn_broker.formats.messages import ShareFetchRequest
    ShareFetchRequest[1](group_id="g", member_id="m", share_session_epoch=0, ...)

The classes behave like kafka-python's own (encode/decode, versions, nested struct classes). Importing
this module costs the class builds (a few milliseconds): the CLI imports it inside commands only.
"""

from __future__ import annotations

import types
from typing import Any

from kafka.protocol.api_message import ApiMessage


def _message(name: str) -> Any:
    """kafka-python's class builder reads `<name>.json` from this package (the load_json class keyword)."""
    return types.new_class(name, (ApiMessage,), {"load_json": __name__})


ShareGroupHeartbeatRequest: Any = _message("ShareGroupHeartbeatRequest")
ShareGroupHeartbeatResponse: Any = _message("ShareGroupHeartbeatResponse")
ShareGroupDescribeRequest: Any = _message("ShareGroupDescribeRequest")
ShareGroupDescribeResponse: Any = _message("ShareGroupDescribeResponse")
ShareFetchRequest: Any = _message("ShareFetchRequest")
ShareFetchResponse: Any = _message("ShareFetchResponse")
ShareAcknowledgeRequest: Any = _message("ShareAcknowledgeRequest")
ShareAcknowledgeResponse: Any = _message("ShareAcknowledgeResponse")
DescribeShareGroupOffsetsRequest: Any = _message("DescribeShareGroupOffsetsRequest")
DescribeShareGroupOffsetsResponse: Any = _message("DescribeShareGroupOffsetsResponse")
AlterShareGroupOffsetsRequest: Any = _message("AlterShareGroupOffsetsRequest")
AlterShareGroupOffsetsResponse: Any = _message("AlterShareGroupOffsetsResponse")
DeleteShareGroupOffsetsRequest: Any = _message("DeleteShareGroupOffsetsRequest")
DeleteShareGroupOffsetsResponse: Any = _message("DeleteShareGroupOffsetsResponse")
