"""Connecting fails fast and says why: each failure named within a few seconds of a 60 s --timeout, one
`error:` line, no traceback. Peers: closed ports, an unresolvable name, an HTTP server, the embedded
broker over SASL_PLAINTEXT (PLAIN only) and over mutual TLS.

TLS stores as Java clients keep them: PKCS12 (made by keytool, read in memory), JKS (refused with the
command that converts it), PEM.
"""

from __future__ import annotations

import http.server
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafka_txn_broker import EmbeddedCluster
from kafka_txn_tools.cli import exit_codes
from tests.broker.security.support import USERS, broker_config, certificates
from tests.e2e.cli_support import Result
from tests.support.tiers import require

# Every answer here is known within a round trip or two; --timeout is 60 s. The bound tells the two apart
# with room for a loaded 2-core machine (a CLI run there took over 5 s).
FAST_S = 20.0


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def timed(*args: str) -> tuple[Result, float]:
    from typer.testing import CliRunner

    from kafka_txn_tools.cli.app import app

    started = time.monotonic()
    r = CliRunner().invoke(app, [*args, "--timeout", "60"])
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise r.exception
    return Result(r.exit_code, r.stdout, r.stderr), time.monotonic() - started


def one_error(r: Result) -> None:
    assert r.err.count("error: ") == 1 and "Traceback" not in r.err + r.out, r.err


def test_connection_refused_on_every_address_fails_at_once() -> None:
    a, b = closed_port(), closed_port()
    r, took = timed("list", "-b", f"127.0.0.1:{a},127.0.0.1:{b}")
    assert r.code == exit_codes.ERROR and took < FAST_S
    assert f"127.0.0.1:{a} refused the connection" in r.err and f"127.0.0.1:{b} refused the connection" in r.err
    one_error(r)


def test_a_name_that_does_not_resolve_is_named() -> None:
    r, took = timed("find-hanging", "--all", "-b", "no-such-broker.invalid:9092")
    assert r.code == exit_codes.ERROR and took < FAST_S
    assert "cannot resolve host 'no-such-broker.invalid'" in r.err
    one_error(r)


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
        pass


@pytest.fixture(scope="module")
def http_server() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), QuietHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_a_peer_that_is_not_kafka_is_named(http_server: str) -> None:
    r, took = timed("list", "-b", http_server)
    assert r.code == exit_codes.ERROR and took < FAST_S
    assert f"{http_server} answered, but is not a Kafka broker (it answered like an HTTP server)" in r.err
    one_error(r)


def test_timeout_takes_units_and_a_bare_number_is_seconds() -> None:
    from kafka_txn_tools.cli.session import Connection

    assert Connection(None, None, None, "5").timeout_ms(None) == 5_000
    assert Connection(None, None, None, "1500ms").timeout_ms(None) == 1_500
    assert Connection(None, None, None, None).timeout_ms(7_000) == 7_000
    from typer.testing import CliRunner

    from kafka_txn_tools.cli.app import app

    for bad in ("0", "0s", "-1", "soon"):
        zero = CliRunner().invoke(app, ["list", "-b", "127.0.0.1:1", "--timeout", bad])
        assert zero.exit_code == exit_codes.USAGE and "--timeout" in zero.stderr, zero.stderr
        assert zero.stderr.startswith("error: ") and "Traceback" not in zero.stderr


def test_a_timeout_too_short_to_connect_says_so_and_does_not_blame_the_brokers(sasl_bs: str, tmp_path: Path) -> None:
    """1 ms cannot connect (or ask anything); the brokers answer when given a few seconds, which is the evidence."""
    from typer.testing import CliRunner

    from kafka_txn_tools.cli.app import app

    config = sasl_props(tmp_path, "PLAIN", USERS["alice"])
    for command in (["find-hanging", "--all"], ["list"]):
        r = CliRunner().invoke(app, [*command, "-b", sasl_bs, "--command-config", str(config), "--timeout", "1ms"])
        assert r.exit_code == exit_codes.ERROR, r.stderr
        assert "the timeout of 1ms is too short to connect" in r.stderr or (
            "no answer within the 1ms timeout (the cluster answered when connecting just before)" in r.stderr), r.stderr
        assert "brokers are up" not in r.stderr and "give a longer --timeout" in r.stderr
        one_error(Result(r.exit_code, r.stdout, r.stderr))
    dead = closed_port()  # nobody there: the short timeout is not what failed, and is not blamed
    r, _ = timed("list", "-b", f"127.0.0.1:{dead}")
    assert "too short" not in r.err and "refused the connection" in r.err


def test_dump_out_under_a_file_is_a_usage_error(tmp_path: Path) -> None:
    afile = tmp_path / "a-file"
    afile.write_text("")
    r, _ = timed("dump", "--all", "--out", str(afile / "dump"), "-b", "127.0.0.1:1")
    assert r.code == exit_codes.USAGE and f"{afile} is a file, not a directory" in r.err
    one_error(r)


# ---- SASL -------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def sasl_bs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    cfg = broker_config("SASL_PLAINTEXT", **{"sasl.enabled.mechanisms": "PLAIN"})
    with EmbeddedCluster(nodes=1, data_dir=tmp_path_factory.mktemp("sasl"), config=cfg) as c:
        yield c.bootstrap_servers


def properties(tmp_path: Path, name: str, **props: str) -> Path:
    path = tmp_path / f"{name}.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    return path


def sasl_props(tmp_path: Path, mechanism: str, password: str) -> Path:
    module = "plain.PlainLoginModule" if mechanism == "PLAIN" else "scram.ScramLoginModule"
    return properties(tmp_path, mechanism, **{
        "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mechanism,
        "sasl.jaas.config": f'org.apache.kafka.common.security.{module} required username="alice" '
                            f'password="{password}";'})


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-512", "OAUTHBEARER"])
def test_a_mechanism_the_broker_does_not_enable_is_named(sasl_bs: str, tmp_path: Path, mechanism: str) -> None:
    config = sasl_props(tmp_path, mechanism, USERS["alice"]) if mechanism != "OAUTHBEARER" else properties(
        tmp_path, "oauth", **{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER",
                              "sasl.jaas.config": "org.apache.kafka.common.security.oauthbearer."
                                                  'OAuthBearerLoginModule required unsecuredLoginStringClaim_sub=a;'})
    r, took = timed("list", "-b", sasl_bs, "--command-config", str(config))
    assert r.code == exit_codes.ERROR and took < FAST_S
    assert f"does not enable SASL mechanism {mechanism} (UNSUPPORTED_SASL_MECHANISM); it enables PLAIN" in r.err
    one_error(r)


def test_a_wrong_password_is_reported_as_soon_as_it_is_refused(sasl_bs: str, tmp_path: Path) -> None:
    r, took = timed("list", "-b", sasl_bs, "--command-config", str(sasl_props(tmp_path, "PLAIN", "Wrong-9z")))
    assert r.code == exit_codes.ERROR and took < FAST_S
    assert "refused SASL/PLAIN authentication" in r.err and "Wrong-9z" not in r.err + r.out
    one_error(r)
    ok, _ = timed("list", "-b", sasl_bs, "--command-config", str(sasl_props(tmp_path, "PLAIN", USERS["alice"])))
    assert ok.code == 0, ok.err


def test_plaintext_to_a_sasl_listener_says_it_needs_sasl(sasl_bs: str) -> None:
    r, took = timed("list", "-b", sasl_bs)
    assert r.code == exit_codes.ERROR and took < FAST_S
    assert "this listener requires SASL" in r.err
    one_error(r)


# ---- TLS stores ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def mtls_bs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    cfg = broker_config("SSL", **{"ssl.client.auth": "required",
                                  "ssl.truststore.location": str(certificates().ca)})
    with EmbeddedCluster(nodes=1, data_dir=tmp_path_factory.mktemp("mtls"), config=cfg) as c:
        yield c.bootstrap_servers


def keytool(*args: str) -> None:
    subprocess.run(["keytool", *args], check=True, capture_output=True, timeout=60)


@pytest.fixture(scope="module")
def java_stores(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Stores made by Java's keytool and openssl, as operators have them."""
    require("keytool", "openssl")
    d, certs = tmp_path_factory.mktemp("stores"), certificates()
    stores = {"trust.p12": d / "trust.p12", "client.p12": d / "client.p12", "trust.jks": d / "trust.jks"}
    keytool("-importcert", "-noprompt", "-alias", "ca", "-file", str(certs.ca), "-keystore",
            str(stores["trust.p12"]), "-storetype", "PKCS12", "-storepass", "trust-pw")
    subprocess.run(["openssl", "pkcs12", "-export", "-in", str(certs.client_cert), "-inkey", str(certs.client_key),
                    "-certfile", str(certs.ca), "-name", "client", "-out", str(stores["client.p12"]), "-passout",
                    "pass:store-pw"], check=True, capture_output=True, timeout=60)
    keytool("-importcert", "-noprompt", "-alias", "ca", "-file", str(certs.ca), "-keystore",
            str(stores["trust.jks"]), "-storetype", "JKS", "-storepass", "trust-pw")
    return stores


def test_pkcs12_trust_and_key_stores_connect_over_mutual_tls(mtls_bs: str, java_stores: dict[str, Path],
                                                             tmp_path: Path) -> None:
    props = properties(tmp_path, "mtls", **{
        "security.protocol": "SSL", "ssl.truststore.type": "PKCS12",
        "ssl.truststore.location": str(java_stores["trust.p12"]), "ssl.truststore.password": "trust-pw",
        "ssl.keystore.type": "PKCS12", "ssl.keystore.location": str(java_stores["client.p12"]),
        "ssl.keystore.password": "store-pw"})
    r, _ = timed("list", "-b", mtls_bs, "--command-config", str(props), "-o", "json")
    assert r.code == 0, r.err
    assert not list(tmp_path.glob("*.pem"))  # nothing extracted to disk
    no_key = properties(tmp_path, "no-key", **{
        "security.protocol": "SSL", "ssl.truststore.location": str(java_stores["trust.p12"]),
        "ssl.truststore.password": "trust-pw"})
    refused, took = timed("list", "-b", mtls_bs, "--command-config", str(no_key))
    assert refused.code == exit_codes.ERROR and took < FAST_S, refused.err
    assert "client certificate (ssl.keystore.location)" in refused.err and "closed the connection" in refused.err
    one_error(refused)


def test_jks_is_refused_with_the_conversion_and_a_missing_store_is_missing(mtls_bs: str, java_stores: dict[str, Path],
                                                                          tmp_path: Path) -> None:
    jks = properties(tmp_path, "jks", **{"security.protocol": "SSL",
                                         "ssl.truststore.location": str(java_stores["trust.jks"])})
    r, _ = timed("list", "-b", mtls_bs, "--command-config", str(jks))
    assert r.code == exit_codes.USAGE and "is a JKS keystore" in r.err and "keytool -importkeystore" in r.err
    gone = properties(tmp_path, "gone", **{"security.protocol": "SSL", "ssl.truststore.type": "PKCS12",
                                           "ssl.truststore.location": str(tmp_path / "gone.p12")})
    r, _ = timed("list", "-b", mtls_bs, "--command-config", str(gone))
    assert r.code == exit_codes.USAGE and f"{tmp_path / 'gone.p12'} does not exist" in r.err
    one_error(r)


def test_tls_to_a_plaintext_listener_is_named(sasl_bs: str, tmp_path: Path) -> None:
    props = properties(tmp_path, "tls", **{"security.protocol": "SSL",
                                           "ssl.truststore.location": str(certificates().ca)})
    r, took = timed("list", "-b", sasl_bs, "--command-config", str(props))
    assert r.code == exit_codes.ERROR and took < FAST_S
    assert "it does not speak TLS, or wants a client certificate" in r.err
    one_error(r)
