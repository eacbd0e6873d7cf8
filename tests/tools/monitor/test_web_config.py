"""--web-config FILE: exporter-toolkit's format read and checked; each mistake is a usage error (exit 2) that
names the key and the fix, before anything is served; basic auth checks bcrypt hashes."""

from __future__ import annotations

import base64
import subprocess
import sys
from pathlib import Path
from typing import Any

import bcrypt
import pytest
import yaml

from kafka_txn_tools.errors import UsageError
from kafka_txn_tools.monitor.web_config import BasicAuth, load
from tests.support.pki import Pki, make_pki

HASH = bcrypt.hashpw(b"pw", bcrypt.gensalt(rounds=4)).decode()


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


def write(tmp_path: Path, doc: Any) -> Path:
    path = tmp_path / "web.yml"
    path.write_text(doc if isinstance(doc, str) else yaml.safe_dump(doc))
    return path


def tls(pki: Pki, **extra: Any) -> dict[str, Any]:
    return {"tls_server_config": {"cert_file": str(pki.server_cert), "key_file": str(pki.server_key), **extra}}


def header(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def test_a_full_config_loads(pki: Pki, tmp_path: Path) -> None:
    web = load(write(tmp_path, {**tls(pki, client_ca_file=str(pki.ca), client_auth_type="RequireAndVerifyClientCert",
                                      min_version="TLS13"), "basic_auth_users": {"prom": HASH}}))
    assert web.scheme == "https" and web.client_auth_type == "RequireAndVerifyClientCert"
    assert web.tls is not None and web.auth is not None
    # exporter-toolkit's default: a client CA alone means verified client certificates are required.
    assert load(write(tmp_path, tls(pki, client_ca_file=str(pki.ca)))).client_auth_type == "RequireAndVerifyClientCert"
    assert load(write(tmp_path, {"basic_auth_users": {"prom": HASH}})).scheme == "http"


def test_basic_auth_checks_the_bcrypt_hash() -> None:
    auth = BasicAuth({"prom": HASH.encode()})
    assert auth.check(header("prom", "pw")) and auth.check(header("prom", "pw"))  # the second from the cache
    assert not auth.check(header("prom", "Pw")) and not auth.check(header("other", "pw"))
    assert not auth.check(None) and not auth.check("Bearer x") and not auth.check("Basic !!!")
    assert not auth.check("Basic " + base64.b64encode(b"no-colon").decode())


@pytest.mark.parametrize(("doc", "names"), [
    ("tls_server_config: [", ["not YAML"]),
    ({"tls_server_config": {"cert_file": "/nope.crt"}}, ["tls_server_config.key_file is missing"]),
    ({"tls_server_config": {"cert_file": "/nope.crt", "key_file": "/nope.key"}},
     ["tls_server_config.cert_file /nope.crt does not exist"]),
    ({"basic_auth_users": {"prom": "secret"}}, ["basic_auth_users.prom is not a bcrypt hash", "htpasswd -nBC"]),
    ({"basic_auth_users": {}}, ["basic_auth_users is empty"]),
    ({"basic_auth_user": {}}, ["unknown key basic_auth_user", "tls_server_config, basic_auth_users"]),
    ({"http_server_config": {"http2": True}}, ["http_server_config is not supported", "remove it"]),
    ("- a list", ["the file must be a mapping"]),
])
def test_bad_configs_name_the_key_and_the_fix(tmp_path: Path, doc: Any, names: list[str]) -> None:
    with pytest.raises(UsageError) as raised:
        load(write(tmp_path, doc))
    assert all(n in str(raised.value) for n in names), str(raised.value)


@pytest.mark.parametrize(("extra", "names"), [
    ({"client_auth_type": "RequireAndVerifyClientCert"}, ["needs tls_server_config.client_ca_file"]),
    ({"client_auth_type": "RequireAnyClientCert"}, ["RequireAnyClientCert", "not supported",
                                                    "RequireAndVerifyClientCert"]),
    ({"client_auth_type": "Sometimes"}, ["'Sometimes' is not one of", "VerifyClientCertIfGiven"]),
    ({"min_version": "TLS14"}, ["tls_server_config.min_version 'TLS14' is not one of TLS10"]),
    ({"cipher_suites": ["x"]}, ["tls_server_config.cipher_suites is not supported"]),
    ({"key_file": "CERT"}, ["cannot be used"]),
    ({"client_ca_file": "/nope-ca.crt"}, ["client_ca_file /nope-ca.crt cannot be read"]),
    ({"client_ca_file": "CA", "client_auth_type": "NoClientCert"}, ["no client certificate would be checked"]),
])
def test_bad_tls_settings_name_the_key_and_the_fix(pki: Pki, tmp_path: Path, extra: dict[str, Any],
                                                   names: list[str]) -> None:
    swap = {"CERT": str(pki.server_cert), "CA": str(pki.ca)}
    doc = tls(pki, **{k: swap.get(v, v) if isinstance(v, str) else v for k, v in extra.items()})
    with pytest.raises(UsageError) as raised:
        load(write(tmp_path, doc))
    assert all(n in str(raised.value) for n in names), str(raised.value)


def test_the_command_refuses_a_bad_config_as_a_usage_error(tmp_path: Path) -> None:
    path = write(tmp_path, {"tls_server_config": {"cert_file": "/x.crt", "key_file": "/x.key",
                                                  "client_auth_type": "RequireAndVerifyClientCert"}})
    done = subprocess.run([sys.executable, "-m", "kafka_txn_tools", "monitor", "-b", "127.0.0.1:1", "--listen",
                           "127.0.0.1:0", "--no-history", "--web-config", str(path)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("error: the web config") and "client_ca_file" in done.stderr
    assert "Traceback" not in done.stderr
