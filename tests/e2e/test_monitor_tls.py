"""`kafka-txn monitor --web-config` (exporter-toolkit's format) as the real clients see it:

- Debian's Prometheus scrapes it over TLS with a client certificate and basic auth; the same scrape with a
  wrong password gets 401, without a client certificate the handshake fails (RequireAndVerifyClientCert);
- every endpoint asks for the credentials, and a certificate from another CA is refused;
- headless Chromium loads the status page over https; `--open-healthz` leaves only /healthz open;
- without a web config on a non-loopback address, the monitor warns at start.
"""

from __future__ import annotations

import json
import socket
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import bcrypt
import pytest
import yaml

from kafka_txn_broker import EmbeddedCluster
from tests.e2e.monitor_support import MonitorProcess, PrometheusProcess, chromium_dom, http_get, wait_for
from tests.support.pki import Pki, make_pki, shipped_scrape_config, shipped_web_config

USER, PASSWORD = "prometheus", "correct horse battery staple"
ENDPOINTS = ("/", "/metrics", "/api/findings", "/healthz")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(nodes=1, data_dir=tmp_path_factory.mktemp("kafka")) as c:
        yield c


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


def web_config(path: Path, pki: Pki, client_auth: str | None) -> Path:
    tls: dict[str, Any] = {"cert_file": str(pki.server_cert), "key_file": str(pki.server_key), "min_version": "TLS12"}
    if client_auth is not None:
        tls.update(client_ca_file=str(pki.ca), client_auth_type=client_auth)
    # Cost 4 keeps the test fast; the monitor checks any cost.
    hashed = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(rounds=4)).decode()
    path.write_text(yaml.safe_dump({"tls_server_config": tls, "basic_auth_users": {USER: hashed}}))
    return path


def client_context(pki: Pki, cert: Path | None = None, key: Path | None = None) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(pki.ca))
    if cert is not None:
        context.load_cert_chain(cert, key)
    return context


def handshake_refused(url: str, context: ssl.SSLContext) -> bool:
    """Whether the server ends the TLS connection before answering (TLS 1.3 reports a refused client
    certificate on the client's first read, 1.2 during the handshake)."""
    host, port = url.removeprefix("https://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as raw:
        try:
            with context.wrap_socket(raw, server_hostname=host) as tls:
                tls.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
                return tls.recv(100) == b""
        except (ssl.SSLError, ConnectionResetError, BrokenPipeError):
            return True


def test_prometheus_scrapes_over_tls_with_basic_auth_and_client_certificates(
        cluster: EmbeddedCluster, pki: Pki, tmp_path: Path) -> None:
    """The shipped web config and scrape config, installed with this test's certificates."""
    hashed = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(rounds=4)).decode()
    config = shipped_web_config(pki, tmp_path / "etc", hashed)
    with MonitorProcess(cluster.bootstrap_servers, tmp_path / "history.db", "--web-config", str(config)) as monitor:
        assert monitor.url.startswith("https://127.0.0.1:")
        scrape = shipped_scrape_config(pki, tmp_path / "prom-etc", PASSWORD, monitor.url.removeprefix("https://"))
        [shipped] = yaml.safe_load(scrape.read_text())["scrape_configs"]
        (tmp_path / "wrong").write_text("Tr0ub4dor&3")
        wrong = {**shipped, "job_name": "wrong-password",
                 "basic_auth": {**shipped["basic_auth"], "password_file": str(tmp_path / "wrong")}}
        no_cert = {**shipped, "job_name": "no-client-cert", "tls_config": {"ca_file": shipped["tls_config"]["ca_file"]}}
        with PrometheusProcess(tmp_path, [], [], scrape_configs=[shipped, wrong, no_cert]) as prom:
            wait_for("a scrape with the monitor's scan", lambda: prom.query("kafka_txn_scan_success == 1"))
            assert [s["metric"]["job"] for s in prom.query("up == 1")] == ["kafka-txn-monitor"]
            errors = wait_for("both refused scrapes", lambda: _last_errors(prom, "wrong-password", "no-client-cert"))
        assert "401" in errors["wrong-password"], errors
        assert any(word in errors["no-client-cert"] for word in ("tls", "certificate")), errors

        # The same, from Python's own TLS client: every endpoint asks for the password ...
        monitor.context = client_context(pki, pki.client_cert, pki.client_key)
        for path in ENDPOINTS:
            status, body = monitor.get(path)
            assert status == 401 and "basic auth" in body, (path, status, body)
        monitor.auth = (USER, "wrong")
        assert monitor.get("/metrics")[0] == 401
        monitor.auth = (USER, PASSWORD)
        for path in ENDPOINTS:
            assert monitor.get(path)[0] == 200, path
        # ... and the connection asks for a certificate from the client CA.
        assert handshake_refused(monitor.url, client_context(pki))
        assert handshake_refused(monitor.url, client_context(pki, pki.stranger_cert, pki.stranger_key))
        # Plain HTTP on the TLS port gets no answer, and the monitor serves on.
        try:
            plain: tuple[int, str] | None = http_get(monitor.url.replace("https", "http") + "/metrics", timeout=5)
        except OSError:
            plain = None
        assert plain is None or plain[0] >= 400
        assert monitor.get("/metrics")[0] == 200
        code, log = monitor.terminate()
    assert code == 0 and "Traceback" not in log, log
    assert "TLS (RequireAndVerifyClientCert), basic auth (1 users)" in log


def _last_errors(prom: PrometheusProcess, *jobs: str) -> dict[str, str] | None:
    found = {t["labels"]["job"]: t["lastError"] for t in prom.api("targets")["activeTargets"]
             if t["labels"]["job"] in jobs and t["health"] == "down" and t["lastError"]}
    return found if len(found) == len(jobs) else None


@pytest.mark.needs("chromium")
def test_status_page_over_https_in_a_browser_and_an_open_healthz(cluster: EmbeddedCluster, pki: Pki,
                                                                 tmp_path: Path) -> None:
    config = web_config(tmp_path / "web.yml", pki, None)
    with MonitorProcess(cluster.bootstrap_servers, tmp_path / "history.db", "--web-config", str(config),
                        "--open-healthz") as monitor:
        monitor.context = client_context(pki)
        # Open (no credentials); healthy from the start, so wait for the first scan's end in what it says.
        wait_for("a scan", lambda: json.loads(monitor.get("/healthz")[1]).get("last_scan") == "complete")
        assert monitor.get("/metrics")[0] == 401 and monitor.get("/")[0] == 401
        port = monitor.url.rsplit(":", 1)[1]
        flags = ("--ignore-certificate-errors",)
        dom = chromium_dom(f"https://{USER}:{PASSWORD.replace(' ', '%20')}@127.0.0.1:{port}/",
                           tmp_path / "chromium", 60.0, *flags)
        assert "<h1>kafka-txn monitor: " in dom and '<svg id="held-chart"' in dom, dom[:2000]
        assert "last scan complete" in dom
        refused = chromium_dom(f"https://127.0.0.1:{port}/", tmp_path / "chromium2", 60.0, *flags)
        assert "held-chart" not in refused and "kafka-txn monitor:" not in refused, refused[:2000]


def test_warns_when_serving_unprotected_on_every_interface(cluster: EmbeddedCluster, tmp_path: Path) -> None:
    with MonitorProcess(cluster.bootstrap_servers, tmp_path / "history.db", "--listen", "0.0.0.0:0") as monitor:
        text = "".join(monitor.stderr)
    assert "without TLS or authentication" in text and "--web-config FILE" in text, text
    with MonitorProcess(cluster.bootstrap_servers, tmp_path / "history.db") as monitor:  # loopback: no warning
        assert "without TLS" not in "".join(monitor.stderr)
