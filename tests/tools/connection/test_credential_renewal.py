"""Credentials kept alive for a long-running client (connection/security/oauth.py, ticket_cache.py), on an
injectable clock: when an OAuth token is fetched again, what a failed refresh does, and a Kerberos ticket
cache's times, renewal point and the failures that name why a ticket can no longer be renewed.

The token endpoint is a real HTTP server on localhost; the ticket cache is written in MIT's documented FILE
format (version 4). The real provider, KDC and `kinit` are in tests/e2e/test_monitor_credentials.py.
"""

from __future__ import annotations

import base64
import http.server
import json
import struct
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafka_txn_tools.connection.security.oauth import RETRY_S, TokenProvider
from kafka_txn_tools.connection.security.ticket_cache import TicketRenewer, TicketTimes, cache_path, tgt_times
from kafka_txn_tools.errors import ConnectionFailed

NOW = 1_800_000_000.0


class Endpoint(http.server.BaseHTTPRequestHandler):
    """Answers client credentials with a JWT whose exp is `exp` (if set) and `expires_in`; 503 when `down`."""

    expires_in = 10
    exp: float | None = None
    down = False
    served = 0

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        self.rfile.read(int(self.headers["Content-Length"]))
        if Endpoint.down:
            self.send_error(503)
            return
        Endpoint.served += 1
        claims = {"sub": "svc", "n": Endpoint.served, **({"exp": Endpoint.exp} if Endpoint.exp else {})}
        payload = base64.urlsafe_b64encode(json.dumps(claims).encode()).decode().rstrip("=")
        answer = json.dumps({"access_token": f"e30.{payload}.sig", "expires_in": Endpoint.expires_in}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


@pytest.fixture
def endpoint() -> Iterator[str]:
    Endpoint.expires_in, Endpoint.exp, Endpoint.down, Endpoint.served = 10, None, False, 0
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Endpoint)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/token"
    server.shutdown()


def provider(url: str, now: list[float]) -> TokenProvider:
    return TokenProvider(url, "svc", "secret", None, {}, now=lambda: now[0])


@pytest.mark.e2e  # a localhost HTTP server
@pytest.mark.parametrize("lifetime, refresh_after", [(10, 8.0), (3600, 3570.0)])
def test_a_token_is_fetched_again_in_its_last_fifth_or_30_s_before_expiry(endpoint: str, lifetime: int,
                                                                          refresh_after: float) -> None:
    Endpoint.expires_in = lifetime
    now = [NOW]
    p = provider(endpoint, now)
    first = p.token()
    now[0] = NOW + refresh_after - 0.01
    assert p.token() == first and p.fetches == 1
    now[0] = NOW + refresh_after
    assert p.token() != first and p.fetches == 2


@pytest.mark.e2e
def test_the_tokens_exp_claim_wins_over_a_longer_expires_in(endpoint: str) -> None:
    """The broker ends the session at exp (whole seconds): the client goes by it, not by now + expires_in."""
    Endpoint.expires_in, Endpoint.exp = 10, NOW + 5
    now = [NOW]
    p = provider(endpoint, now)
    first = p.token()
    now[0] = NOW + 4  # the last fifth of a 5 s lifetime
    assert p.token() != first


@pytest.mark.e2e
def test_a_failed_refresh_keeps_the_token_until_it_expires_then_says_why(endpoint: str) -> None:
    now = [NOW]
    p = provider(endpoint, now)
    first = p.token()
    Endpoint.down = True
    now[0] = NOW + 8.5
    assert p.token() == first and p.problem is not None and "HTTP 503" in p.problem
    served = Endpoint.served
    now[0] += RETRY_S / 2
    assert p.token() == first  # no new attempt before RETRY_S
    now[0] = NOW + 10
    with pytest.raises(ConnectionFailed) as failed:
        p.token()
    assert failed.value.cause == "LOGIN_FAILED"
    assert str(failed.value).startswith(f"the OAuth token endpoint {endpoint} refused the client credentials of svc "
                                        "(HTTP 503) (the last token expired at 2027-01-15T08:00:10Z)")
    Endpoint.down = False
    assert p.token() != first and Endpoint.served == served + 1 and p.problem is None  # back


# ---- a Kerberos ticket cache --------------------------------------------------------------------------------
def _counted(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


def _principal(name: str) -> bytes:
    parts, _, realm = name.rpartition("@")
    components = parts.split("/")
    return struct.pack(">II", 1, len(components)) + _counted(realm.encode()) + b"".join(
        _counted(c.encode()) for c in components)


def _credential(server: str, start: int, end: int, renew_till: int) -> bytes:
    return (_principal("ops@EXAMPLE.COM") + _principal(server) + struct.pack(">H", 18) + _counted(b"k" * 32)
            + struct.pack(">IIII", start - 1, start, end, renew_till) + struct.pack(">BI", 0, 0x40e10000)
            + struct.pack(">I", 0) + struct.pack(">I", 0) + _counted(b"ticket") + _counted(b""))


def write_cache(path: Path, *credentials: bytes) -> Path:
    """MIT's FILE ccache, version 4: a header with one (time offset) tag, the default principal, credentials."""
    header = struct.pack(">HH", 1, 8) + struct.pack(">ii", 0, 0)
    path.write_bytes(b"\x05\x04" + struct.pack(">H", len(header)) + header + _principal("ops@EXAMPLE.COM")
                     + b"".join(credentials))
    return path


def test_the_tgt_is_read_from_a_file_cache(tmp_path: Path) -> None:
    start = int(NOW)
    cache = write_cache(tmp_path / "cc", _credential("krbtgt/EXAMPLE.COM@EXAMPLE.COM", start, start + 36000,
                                                     start + 604800),
                        _credential("kafka/broker1@EXAMPLE.COM", start + 5, start + 36000, 0))
    assert tgt_times(cache) == TicketTimes(start, start + 36000, start + 604800)
    assert tgt_times(tmp_path / "missing") is None
    assert cache_path("FILE:/tmp/x") == Path("/tmp/x") and cache_path("/tmp/y") == Path("/tmp/y")
    assert cache_path("MEMORY:abc") is None and cache_path("KEYRING:persistent:0") is None


@pytest.mark.parametrize("renew_till, now, due", [
    (604800, 0.79 * 36000, False), (604800, 0.8 * 36000, True), (604800, 36000, False),  # expired: too late
    (36000, 0.9 * 36000, False),  # at its renew limit: renewing would not extend it
    (0, 0.9 * 36000, False)])  # not renewable
def test_the_renewal_point_is_80_percent_of_the_lifetime(tmp_path: Path, renew_till: int, now: float,
                                                         due: bool) -> None:
    renewer = TicketRenewer("FILE:x", tmp_path / "x", "ops@EXAMPLE.COM")
    times = TicketTimes(0, 36000, renew_till)
    assert renewer.due(times, now) is due


@pytest.mark.parametrize("renew_till, why", [
    (60, "its renew limit was 2027-01-15T08:01:00Z"), (0, "it was not renewable")])
def test_an_expired_ticket_that_cannot_be_renewed_is_named(tmp_path: Path, renew_till: int, why: str) -> None:
    start = int(NOW)
    cache = write_cache(tmp_path / "cc", _credential("krbtgt/EXAMPLE.COM@EXAMPLE.COM", start, start + 60,
                                                     start + renew_till if renew_till else 0))
    now = [NOW + 30]
    renewer = TicketRenewer(f"FILE:{cache}", cache, "ops@EXAMPLE.COM", now=lambda: now[0])
    renewer.check()  # still valid
    now[0] = NOW + 60
    with pytest.raises(ConnectionFailed) as failed:
        renewer.check()
    assert failed.value.cause == "LOGIN_FAILED"
    assert str(failed.value) == (f"the Kerberos ticket in FILE:{cache} expired at 2027-01-15T08:01:00Z and can no "
                                 f"longer be renewed ({why}): run kinit ops@EXAMPLE.COM")
    cache.unlink()
    with pytest.raises(ConnectionFailed, match=f"no Kerberos ticket in FILE:{cache}: run kinit ops@EXAMPLE.COM"):
        renewer.check()
