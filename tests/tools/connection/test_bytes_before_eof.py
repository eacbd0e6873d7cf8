"""A broker's last answer before it closes the connection reaches the client: Apache Kafka sends a refused SASL
token's error (SaslAuthenticate, with its message) and closes at once, so the client reads both together.
kafka-python's transports, read as they are (connection/connect.py), hand over the bytes first and report the
end of the stream on the next read. tests/external/real_kafka/test_secured_real.py sees this against real Kafka.
"""

from __future__ import annotations

import socket

import pytest
from kafka.net.transport import KafkaSSLTransport, KafkaTCPTransport

import kafka_txn_tools.connection.connect  # noqa: F401 - importing it sets kafka-python's transports right


@pytest.mark.parametrize("transport", [KafkaTCPTransport, KafkaSSLTransport])
def test_the_bytes_read_with_the_end_of_the_stream_come_first(transport: type[KafkaTCPTransport]) -> None:
    ours, broker = socket.socketpair()
    with ours, broker:
        ours.setblocking(False)
        broker.sendall(b"the refusal")
        broker.close()  # both are waiting when the client reads
        t = object.__new__(transport)  # only its reading: the socket stands for the TLS one, as TLS's recv
        KafkaTCPTransport.__init__(t, net=None, sock=ours)
        assert t._sock_recv() == (b"the refusal", None)
        data, err = t._sock_recv()
        assert data == b"" and "socket disconnected" in str(err)


def test_an_end_of_the_stream_alone_is_still_one() -> None:
    ours, broker = socket.socketpair()
    with ours, broker:
        ours.setblocking(False)
        broker.close()
        data, err = KafkaTCPTransport(net=None, sock=ours)._sock_recv()
        assert data == b"" and err is not None
