"""Reach each bootstrap address once, fast, before kafka-python's bootstrap, and say what is wrong.

kafka-python retries a bootstrap until its timeout whatever the failure, so "connection refused",
"no such host", "that is an HTTP server" and "wrong security.protocol" would all end, after the
whole --timeout, as "could not connect". This probe answers each in about one round trip:

1. DNS: the host resolves.
2. TCP: the port accepts a connection (refused and unreachable are told apart).
3. TLS (SSL, SASL_SSL): the handshake with the same SSLContext the client will use.
4. Kafka: an ApiVersions v0 request gets a Kafka answer. Its correlation id is the bytes CR LF CR LF,
   so a line-based server (HTTP, SMTP...) sees an end of line and answers in its own protocol,
   which is then named instead of waiting.
5. SASL: SaslHandshake for the configured mechanism, which also lists the enabled mechanisms when
   ours is not among them. Without SASL, one empty Metadata request checks the listener serves
   unauthenticated clients.

The probe authenticates nothing; a wrong password is caught during kafka-python's own login
(connection/client.py stops its retries at the first refusal). Addresses are probed concurrently on
daemon threads; the first usable one is enough to start.
"""

from __future__ import annotations

import queue
import socket
import ssl
import struct
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kafka_txn_tools.errors import UsageError

PROBE_CORRELATION_ID = 0x0D0A0D0A  # b"\r\n\r\n" on the wire
MAX_PROBE_S = 5.0
UNSUPPORTED_SASL_MECHANISM = 33
ILLEGAL_SASL_STATE = 34


@dataclass(frozen=True)
class Probe:
    address: str
    ok: bool
    problem: str = ""
    fix: str = ""


def split_address(address: str) -> tuple[str, int]:
    """host:port, [v6]:port; raise UsageError naming the address otherwise."""
    text = address.strip()
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise UsageError(f"bootstrap server {address!r} is not host:port", "e.g. --bootstrap-server kafka-1:9092")
    return host.strip("[]"), int(port)


def probe_all(addresses: Sequence[str], protocol: str, ssl_context: ssl.SSLContext | None,
              sasl_mechanism: str | None, timeout_s: float) -> list[Probe]:
    """Probe every address concurrently; return once one is usable, or all have failed."""
    targets = [(a, *split_address(a)) for a in addresses]
    results: queue.Queue[Probe] = queue.Queue()
    budget = min(timeout_s, MAX_PROBE_S)
    for address, host, port in targets:
        threading.Thread(target=lambda a=address, h=host, p=port: results.put(
            _probe_safely(a, h, p, protocol, ssl_context, sasl_mechanism, budget)), daemon=True).start()
    done: list[Probe] = []
    deadline = time.monotonic() + budget + 1.0
    while len(done) < len(targets):
        try:
            probe = results.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            break
        done.append(probe)
        if probe.ok:
            break
    answered = {p.address for p in done}
    done += [Probe(a, False, f"did not answer within {budget:g}s") for a, _h, _p in targets if a not in answered]
    return done


def _probe_safely(address: str, host: str, port: int, protocol: str, ssl_context: ssl.SSLContext | None,
                  mechanism: str | None, budget: float) -> Probe:
    try:
        return _probe(address, host, port, protocol, ssl_context, mechanism, budget)
    except Exception as exc:  # noqa: BLE001 - a probe bug must not hide the real connection attempt
        return Probe(address, True, f"not probed ({type(exc).__name__}: {exc})")


def _probe(address: str, host: str, port: int, protocol: str, ssl_context: ssl.SSLContext | None,
           mechanism: str | None, budget: float) -> Probe:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        return Probe(address, False, f"cannot resolve host {host!r} ({exc.strerror})",
                     "check the host name in --bootstrap-server")
    deadline = time.monotonic() + budget
    sock, problem = _connect(infos, deadline)
    if sock is None:
        return Probe(address, False, problem, "check the host and port, and that the broker is running")
    with sock:
        if protocol in ("SSL", "SASL_SSL"):
            assert ssl_context is not None
            wrapped, problem, fix = _tls(sock, host, ssl_context)
            if wrapped is None:
                return Probe(address, False, problem, fix)
            sock = wrapped
        return _kafka(address, sock, protocol, mechanism)


def _connect(infos: list[Any], deadline: float) -> tuple[socket.socket | None, str]:
    problem = "no address to connect to"
    for family, kind, proto, _name, sockaddr in infos:
        sock = socket.socket(family, kind, proto)
        sock.settimeout(max(0.05, deadline - time.monotonic()))
        try:
            sock.connect(sockaddr)
            return sock, ""
        except ConnectionRefusedError:
            problem = "refused the connection (nothing listens on that port)"
        except TimeoutError:
            problem = "did not accept a connection in time (a firewall, or the wrong host)"
        except OSError as exc:
            problem = f"cannot be reached ({exc.strerror or exc})"
        sock.close()
    return None, problem


def _tls(sock: socket.socket, host: str, ctx: ssl.SSLContext) -> tuple[ssl.SSLSocket | None, str, str]:
    try:
        return ctx.wrap_socket(sock, server_hostname=host), "", ""
    except ssl.SSLCertVerificationError as exc:
        return None, f"TLS: the broker's certificate was not accepted ({exc.verify_message})", (
            "set ssl.truststore.location to the CA that signed it (and check the host name, or "
            "ssl.endpoint.identification.algorithm)")
    except ssl.SSLError as exc:
        if "WRONG_VERSION_NUMBER" in str(exc) or "record layer failure" in str(exc):
            return None, "does not speak TLS", "this listener is not an SSL one: check security.protocol"
        if "EOF" in str(exc):
            return None, "closed the connection during the TLS handshake: it does not speak TLS, or wants a client " \
                         "certificate", "check security.protocol (not an SSL listener?) and ssl.keystore.location"
        return None, f"TLS handshake failed ({exc.reason or exc})", (
            "check the ssl.* properties; the broker may require a client certificate (ssl.keystore.location)")
    except (ConnectionError, TimeoutError, OSError) as exc:
        return None, f"closed the connection during the TLS handshake ({exc.strerror or exc})", (
            "check security.protocol (not an SSL listener?) and ssl.keystore.location (a client certificate?)")


def _request(request: Any, version: int, correlation_id: int) -> bytes:
    request.with_header(correlation_id=correlation_id, client_id="kafka-txn")
    return bytes(request.encode(version=version, header=True, framed=True))


def _read_frame(sock: socket.socket) -> bytes | None:
    head = _read(sock, 4)
    if len(head) < 4:
        return head or None
    (size,) = struct.unpack(">i", head)
    if not 4 <= size <= 64 * 1024 * 1024:
        return head  # not Kafka framing: the caller names what it looks like
    return head + _read(sock, size)


def _read(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            break
        data += chunk
    return data


def _kafka(address: str, sock: socket.socket, protocol: str, mechanism: str | None) -> Probe:
    from kafka.protocol.metadata import ApiVersionsRequest

    try:
        sock.sendall(_request(ApiVersionsRequest(), 0, PROBE_CORRELATION_ID))
        frame = _read_frame(sock)
    except TimeoutError:
        return Probe(address, False, "accepted the connection but did not answer a Kafka request",
                     "is this a Kafka listener? (check the port)")
    except OSError as exc:
        return Probe(address, False, f"closed the connection on a Kafka request ({exc.strerror or exc})",
                     _wrong_protocol_fix(protocol))
    if not frame:
        return Probe(address, False, "closed the connection without answering a Kafka request",
                     _wrong_protocol_fix(protocol))
    if len(frame) < 8 or struct.unpack(">i", frame[4:8])[0] != PROBE_CORRELATION_ID:
        return Probe(address, False, f"answered, but is not a Kafka broker ({_looks_like(frame)})",
                     "check the port in --bootstrap-server")
    if protocol.startswith("SASL_"):
        return _sasl(address, sock, mechanism or "GSSAPI")
    return _unauthenticated_metadata(address, sock)


def _looks_like(data: bytes) -> str:
    text = data[:16]
    if text.startswith((b"HTTP", b"<!DO", b"<!do", b"<htm", b"<HTM")):
        return "it answered like an HTTP server"
    if text.startswith(b"SSH-"):
        return "it is an SSH server"
    if text[:1] == b"\x15" and text[1:2] == b"\x03":
        return "it answered with a TLS alert: it expects TLS (security.protocol=SSL or SASL_SSL)"
    return f"first bytes {text!r}"


def _wrong_protocol_fix(protocol: str) -> str:
    if protocol in ("PLAINTEXT", "SASL_PLAINTEXT"):
        return "is this a TLS listener? then set security.protocol=SSL (or SASL_SSL)"
    # TLS 1.3 completes the client's handshake before the broker checks its certificate.
    return ("the broker may require a client certificate (ssl.keystore.location); else check security.protocol "
            "and the port")


def _sasl(address: str, sock: socket.socket, mechanism: str) -> Probe:
    from kafka.protocol.sasl import SaslHandshakeRequest, SaslHandshakeResponse

    try:
        sock.sendall(_request(SaslHandshakeRequest(mechanism=mechanism), 1, 2))
        frame = _read_frame(sock)
        answer = SaslHandshakeResponse.decode(frame[4:], version=1, header=True) if frame else None
    except (OSError, ValueError):
        answer = None
    if answer is None:
        return Probe(address, False, "closed the connection on a SASL handshake",
                     "does this listener use SASL? check security.protocol")
    if answer.error_code == UNSUPPORTED_SASL_MECHANISM:
        enabled = ", ".join(answer.mechanisms) or "none"
        return Probe(address, False, f"does not enable SASL mechanism {mechanism} (UNSUPPORTED_SASL_MECHANISM); "
                                     f"it enables {enabled}", "set sasl.mechanism to one it enables")
    if answer.error_code == ILLEGAL_SASL_STATE:
        return Probe(address, False, "this listener does not use SASL", "check security.protocol (PLAINTEXT or SSL?)")
    return Probe(address, True)


def _unauthenticated_metadata(address: str, sock: socket.socket) -> Probe:
    from kafka.protocol.metadata import MetadataRequest

    try:
        sock.sendall(_request(MetadataRequest(topics=[], allow_auto_topic_creation=False), 4, 3))
        frame = _read_frame(sock)
    except OSError:
        frame = None
    if not frame:
        return Probe(address, False, "closed the connection before authentication: this listener requires SASL",
                     "set security.protocol=SASL_PLAINTEXT (or SASL_SSL) with sasl.mechanism and sasl.jaas.config")
    return Probe(address, True)
