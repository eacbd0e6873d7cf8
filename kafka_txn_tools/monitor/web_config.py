"""`--web-config FILE`: TLS and basic auth for the monitor's endpoints, in the format of Prometheus's
exporter-toolkit (`--web.config.file` of node_exporter and the other exporters), so one file serves both:

```yaml
tls_server_config:
  cert_file: /etc/kafka-txn/monitor.crt
  key_file: /etc/kafka-txn/monitor.key
  client_ca_file: /etc/kafka-txn/clients-ca.crt      # optional
  client_auth_type: RequireAndVerifyClientCert       # optional
  min_version: TLS12                                 # optional (also max_version)
basic_auth_users:
  prometheus: $2b$12$...                             # bcrypt hashes (htpasswd -B, or python -m bcrypt)
```

Every problem is reported as a `UsageError` naming the key and the fix; nothing here starts serving.
Client certificate modes the standard library's TLS cannot honour (accepting an unverified certificate:
RequestClientCert, RequireAnyClientCert) are refused by name rather than served with other semantics.

Threading: `WebConfig` is immutable once loaded; `BasicAuth.check` is called from every HTTP thread and
guards its cache of checked credentials with a lock.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import ssl
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafka_txn_tools.errors import UsageError

TLS_KEYS = ("cert_file", "key_file", "client_ca_file", "client_auth_type", "min_version", "max_version")
TOP_KEYS = ("tls_server_config", "basic_auth_users")
# exporter-toolkit's keys this monitor does not implement: named in the error rather than silently ignored.
UNSUPPORTED = {"http_server_config": "HTTP/2 and response headers are not configurable here",
               "cipher_suites": "Python's TLS uses OpenSSL's defaults; restrict with min_version",
               "curve_preferences": "Python's TLS uses OpenSSL's defaults",
               "prefer_server_cipher_suites": "Python's TLS uses OpenSSL's defaults",
               "client_allowed_sans": "not implemented; trust only the client CA you mean",
               "cert": "give the certificate as a file: cert_file", "key": "give the key as a file: key_file"}
VERSIONS = {"TLS10": ssl.TLSVersion.TLSv1, "TLS11": ssl.TLSVersion.TLSv1_1, "TLS12": ssl.TLSVersion.TLSv1_2,
            "TLS13": ssl.TLSVersion.TLSv1_3}
# client_auth_type -> what the server's TLS asks of the client, and whether a client CA is needed.
CLIENT_AUTH = {"NoClientCert": (ssl.CERT_NONE, False),
               "VerifyClientCertIfGiven": (ssl.CERT_OPTIONAL, True),
               "RequireAndVerifyClientCert": (ssl.CERT_REQUIRED, True)}
UNVERIFIED_CLIENT_AUTH = ("RequestClientCert", "RequireAnyClientCert")
AUTH_CACHE_SIZE = 64  # distinct (user, password) pairs remembered as checked: scrapers repeat theirs


class BasicAuth:
    """The users and their bcrypt hashes. A pair checked once is remembered (bounded, by a keyed digest of
    the password, never the password), as exporter-toolkit does: bcrypt costs tens of milliseconds by
    design, and a scraper sends the same pair every few seconds."""

    def __init__(self, users: Mapping[str, bytes]) -> None:
        self._users = dict(users)
        self._key = hashlib.sha256(b"".join(sorted(self._users.values()))).digest()
        self._lock = threading.Lock()
        self._checked: OrderedDict[bytes, bool] = OrderedDict()
        # An unknown user costs one bcrypt check too, so timing does not tell which users exist.
        self._decoy = next(iter(self._users.values()))

    def __len__(self) -> int:
        return len(self._users)

    def check(self, header: str | None) -> bool:
        """Whether an `Authorization` header carries a known user and its password."""
        pair = _basic_pair(header)
        if pair is None:
            return False
        user, password = pair
        key = hmac.new(self._key, user.encode() + b"\0" + password, hashlib.sha256).digest()
        with self._lock:
            known = self._checked.get(key)
            if known is not None:
                self._checked.move_to_end(key)
                return known
        import bcrypt

        stored = self._users.get(user)
        ok = bcrypt.checkpw(password, stored or self._decoy) and stored is not None
        with self._lock:
            self._checked[key] = ok
            while len(self._checked) > AUTH_CACHE_SIZE:
                self._checked.popitem(last=False)
        return ok


def _basic_pair(header: str | None) -> tuple[str, bytes] | None:
    if not header or header[:6].lower() != "basic ":
        return None
    try:
        decoded = base64.b64decode(header[6:].strip(), validate=True)
    except ValueError:
        return None
    user, sep, password = decoded.partition(b":")
    if not sep:
        return None
    try:
        return user.decode("utf-8"), password
    except UnicodeDecodeError:
        return None


@dataclass(frozen=True)
class WebConfig:
    """What --web-config FILE asks for: a server TLS context (or None: plain HTTP) and users (or None)."""

    path: Path
    tls: ssl.SSLContext | None = None
    auth: BasicAuth | None = None
    client_auth_type: str = "NoClientCert"
    summary: list[str] = field(default_factory=list)

    @property
    def scheme(self) -> str:
        return "https" if self.tls is not None else "http"


def load(path: Path) -> WebConfig:
    """Read and check the file; every problem is a UsageError naming the key and the fix."""
    import yaml

    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read the web config {path}: {exc.strerror or exc}; check --web-config") from None
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise UsageError(f"the web config {path} is not YAML ({_first_line(exc)}); fix the file, see "
                         "docs/monitor.md#securing-the-endpoints") from None
    doc = {} if doc is None else doc
    _mapping(path, doc, "the file")
    _known_keys(path, doc, TOP_KEYS, "")
    tls_doc = doc.get("tls_server_config")
    users_doc = doc.get("basic_auth_users")
    tls, client_auth = (None, "NoClientCert") if tls_doc is None else _tls(path, tls_doc)
    auth = None if users_doc is None else _users(path, users_doc)
    summary = [f"TLS ({client_auth})" if tls else "no TLS",
               f"basic auth ({len(auth)} users)" if auth is not None else "no basic auth"]
    return WebConfig(path, tls, auth, client_auth, summary)


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def _mapping(path: Path, value: Any, where: str) -> None:
    if not isinstance(value, dict):
        raise UsageError(f"the web config {path}: {where} must be a mapping of keys, not "
                         f"{type(value).__name__}; see docs/monitor.md#securing-the-endpoints")


def _known_keys(path: Path, doc: Mapping[str, Any], known: tuple[str, ...], prefix: str) -> None:
    for key in doc:
        if key in known:
            continue
        if key in UNSUPPORTED:
            raise UsageError(f"the web config {path}: {prefix}{key} is not supported by kafka-txn monitor "
                             f"({UNSUPPORTED[key]}); remove it")
        raise UsageError(f"the web config {path}: unknown key {prefix}{key}; the keys are "
                         f"{', '.join(prefix + k for k in known)}")


def _tls(path: Path, doc: Any) -> tuple[ssl.SSLContext, str]:
    _mapping(path, doc, "tls_server_config")
    _known_keys(path, doc, TLS_KEYS, "tls_server_config.")
    where = "tls_server_config."
    cert, key = doc.get("cert_file"), doc.get("key_file")
    if not cert or not key:
        missing = "cert_file" if not cert else "key_file"
        raise UsageError(f"the web config {path}: {where}{missing} is missing; TLS needs both cert_file and "
                         "key_file (PEM files)")
    ca = doc.get("client_ca_file")
    client_auth = doc.get("client_auth_type") or ("RequireAndVerifyClientCert" if ca else "NoClientCert")
    if client_auth in UNVERIFIED_CLIENT_AUTH:
        raise UsageError(f"the web config {path}: {where}client_auth_type {client_auth} (an unverified client "
                         "certificate) is not supported; use VerifyClientCertIfGiven or RequireAndVerifyClientCert "
                         "with client_ca_file, or NoClientCert")
    if client_auth not in CLIENT_AUTH:
        raise UsageError(f"the web config {path}: {where}client_auth_type {client_auth!r} is not one of "
                         f"{', '.join([*CLIENT_AUTH, *UNVERIFIED_CLIENT_AUTH])}")
    verify, needs_ca = CLIENT_AUTH[client_auth]
    if needs_ca and not ca:
        raise UsageError(f"the web config {path}: {where}client_auth_type {client_auth} needs "
                         f"{where}client_ca_file (the CA that signs the scrapers' certificates)")
    if ca and not needs_ca:
        raise UsageError(f"the web config {path}: {where}client_ca_file is set but client_auth_type is "
                         f"{client_auth}, so no client certificate would be checked; set client_auth_type to "
                         "RequireAndVerifyClientCert (or VerifyClientCertIfGiven), or remove client_ca_file")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = _version(path, doc, "min_version", ssl.TLSVersion.TLSv1_2)
    context.maximum_version = _version(path, doc, "max_version", ssl.TLSVersion.MAXIMUM_SUPPORTED)
    _load_pair(path, context, Path(str(cert)), Path(str(key)))
    if ca:
        _load_ca(path, context, Path(str(ca)))
    context.verify_mode = verify
    return context, client_auth


def _version(path: Path, doc: Mapping[str, Any], key: str, default: ssl.TLSVersion) -> ssl.TLSVersion:
    value = doc.get(key)
    if value is None:
        return default
    if value not in VERSIONS:
        raise UsageError(f"the web config {path}: tls_server_config.{key} {value!r} is not one of "
                         f"{', '.join(VERSIONS)}")
    return VERSIONS[value]


def _load_pair(path: Path, context: ssl.SSLContext, cert: Path, key: Path) -> None:
    for name, file in (("cert_file", cert), ("key_file", key)):
        if not file.is_file():
            raise UsageError(f"the web config {path}: tls_server_config.{name} {file} does not exist or is not a "
                             "file; give the PEM file's path")
    try:
        context.load_cert_chain(cert, key)
    except (ssl.SSLError, OSError) as exc:
        raise UsageError(f"the web config {path}: tls_server_config.cert_file {cert} and key_file {key} cannot "
                         f"be used ({getattr(exc, 'reason', None) or exc}); give a PEM certificate and its "
                         "unencrypted PEM key") from None


def _load_ca(path: Path, context: ssl.SSLContext, ca: Path) -> None:
    try:
        context.load_verify_locations(cafile=str(ca))
    except (ssl.SSLError, OSError) as exc:
        raise UsageError(f"the web config {path}: tls_server_config.client_ca_file {ca} cannot be read as PEM "
                         f"certificates ({getattr(exc, 'strerror', None) or getattr(exc, 'reason', None) or exc}); "
                         "give the clients' CA certificate file") from None


def _users(path: Path, doc: Any) -> BasicAuth:
    _mapping(path, doc, "basic_auth_users")
    if not doc:
        raise UsageError(f"the web config {path}: basic_auth_users is empty; add `user: <bcrypt hash>` lines "
                         "or remove the key")
    users: dict[str, bytes] = {}
    for user, hashed in doc.items():
        text = str(hashed) if hashed is not None else ""
        if not _is_bcrypt(text):
            raise UsageError(f"the web config {path}: basic_auth_users.{user} is not a bcrypt hash ($2b$..., "
                             "60 characters); make one with `htpasswd -nBC 12 USER` or python3 -c \"import "
                             "bcrypt,getpass;print(bcrypt.hashpw(getpass.getpass().encode(),bcrypt.gensalt())"
                             ".decode())\"")
        users[str(user)] = text.encode("ascii")
    return BasicAuth(users)


def _is_bcrypt(text: str) -> bool:
    import bcrypt

    if len(text) != 60 or text[:4] not in ("$2a$", "$2b$", "$2y$"):
        return False
    try:
        bcrypt.checkpw(b"", text.encode("ascii"))  # a malformed salt or cost raises
    except ValueError:
        return False
    return True
