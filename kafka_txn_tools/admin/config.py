"""`--command-config` files (Java client properties) -> keyword arguments for kafka-python's clients.

Operators already have `admin.properties` files for the Java tools; they work here unchanged for
PLAINTEXT/SSL/SASL_PLAINTEXT/SASL_SSL, SASL PLAIN and SCRAM (credentials from `sasl.jaas.config`),
GSSAPI, and TLS with PEM files. Java keystores (JKS, PKCS12) cannot be read by Python's ssl module,
so they get an error that shows the conversion command instead of a handshake failure later.

Secrets read here never appear in messages or reprs.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafka_txn_tools.admin.errors import ConfigError

_SECRET_KEYS = frozenset({"sasl_plain_password", "ssl_password"})

# Java properties that mean nothing to this tool but are common in admin.properties files.
_HARMLESS = frozenset({
    "retries", "retry.backoff.ms", "metadata.max.age.ms", "reconnect.backoff.ms",
    "reconnect.backoff.max.ms", "connections.max.idle.ms", "receive.buffer.bytes", "send.buffer.bytes",
    "client.dns.lookup", "sasl.login.callback.handler.class", "sasl.client.callback.handler.class",
    "ssl.protocol", "ssl.enabled.protocols", "ssl.keymanager.algorithm", "ssl.trustmanager.algorithm",
    "ssl.secure.random.implementation", "ssl.provider",
})

_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "GSSAPI", "OAUTHBEARER")


@dataclass
class ClientSettings:
    """Resolved connection settings; `kwargs` go to kafka-python, `warnings` to the user (stderr)."""

    bootstrap_servers: str | None = None
    kwargs: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    source: str = ""
    # default.api.timeout.ms: how long a whole operation (connecting included) may take.
    timeout_ms: int | None = None

    def redacted(self) -> dict[str, Any]:
        return {k: ("***" if k in _SECRET_KEYS and v else v) for k, v in self.kwargs.items()}

    def __repr__(self) -> str:
        return f"ClientSettings(bootstrap_servers={self.bootstrap_servers!r}, kwargs={self.redacted()!r})"


# --- Java .properties ------------------------------------------------------------------------

def parse_properties(text: str) -> dict[str, str]:
    """Parse the Java .properties syntax the Java tools accept (comments, `=`/`:`/space, `\\` lines)."""
    props: dict[str, str] = {}
    for logical in _logical_lines(text.splitlines()):
        key, value = _split_key_value(logical)
        props[_unescape(key)] = _unescape(value)
    return props


def _logical_lines(lines: Iterable[str]) -> Iterable[str]:
    pending = ""
    for raw in lines:
        line = raw.lstrip()
        if not pending and (not line or line[0] in "#!"):
            continue
        # An odd number of trailing backslashes continues the line (an even number is escaped).
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            pending += line[:-1]
            continue
        yield pending + line
        pending = ""
    if pending:
        yield pending


def _split_key_value(line: str) -> tuple[str, str]:
    i = 0
    while i < len(line):
        ch = line[i]
        if ch == "\\":
            i += 2
            continue
        if ch in "=: \t\f":
            break
        i += 1
    key = line[:i]
    # The key ends at the first unescaped separator; whitespace around one `=` or `:` is skipped.
    rest = line[i:].lstrip(" \t\f")
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(" \t\f")
    return key, rest


_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(text: str) -> str:
    if "\\" not in text:
        return text
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", text[i + 2:i + 6]):
                out.append(chr(int(text[i + 2:i + 6], 16)))
                i += 6
                continue
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def load_properties(path: Path) -> dict[str, str]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"--command-config {path} does not exist",
                          "give the path of a client .properties file") from None
    except OSError as exc:
        raise ConfigError(f"cannot read --command-config {path}: {exc.strerror}") from None
    return parse_properties(text)


# --- JAAS ------------------------------------------------------------------------------------

_JAAS = re.compile(
    r"^\s*(?P<module>[\w.$]+)\s+(?P<flag>required|requisite|sufficient|optional)(?P<opts>.*?);?\s*$", re.S)
_JAAS_OPT = re.compile(r'\s*([\w.]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s;"]+))')


@dataclass(frozen=True)
class JaasConfig:
    login_module: str
    options: dict[str, str]

    def __repr__(self) -> str:
        return f"JaasConfig(login_module={self.login_module!r}, options={sorted(self.options)!r})"


def parse_jaas(text: str) -> JaasConfig:
    """Read `<LoginModule> required key="value" ...;` (the value of sasl.jaas.config)."""
    m = _JAAS.match(text)
    if not m:
        # Never echo the text: it usually contains the password.
        raise ConfigError(
            "sasl.jaas.config could not be parsed",
            'expected e.g. org.apache.kafka.common.security.scram.ScramLoginModule required '
            'username="alice" password="...";',
        )
    options: dict[str, str] = {}
    pos = 0
    opts = m.group("opts")
    while pos < len(opts):
        if not opts[pos:].strip():
            break
        om = _JAAS_OPT.match(opts, pos)
        if not om:
            raise ConfigError(
                "sasl.jaas.config has an option that is not key=value or key=\"value\"",
                "quote values that contain spaces or semicolons",
            )
        quoted, bare = om.group(2), om.group(3)
        options[om.group(1)] = re.sub(r"\\(.)", r"\1", quoted) if quoted is not None else bare
        pos = om.end()
    return JaasConfig(m.group("module"), options)


_MODULE_FOR = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}


# --- properties -> kafka-python kwargs ----------------------------------------------------------

def settings_from_properties(props: Mapping[str, str], source: str = "--command-config") -> ClientSettings:
    """Translate Java client properties into kafka-python keyword arguments."""
    settings = ClientSettings(source=source)
    kw = settings.kwargs
    consumed: set[str] = set()

    def take(key: str) -> str | None:
        consumed.add(key)
        value = props.get(key)
        return value.strip() if isinstance(value, str) else value

    if (servers := take("bootstrap.servers")):
        settings.bootstrap_servers = servers
    if (client_id := take("client.id")):
        kw["client_id"] = client_id
    if (timeout := take("request.timeout.ms")):
        kw["request_timeout_ms"] = _int_property("request.timeout.ms", timeout, source)
    if (api_timeout := take("default.api.timeout.ms")):
        settings.timeout_ms = _int_property("default.api.timeout.ms", api_timeout, source)

    protocol = (take("security.protocol") or "PLAINTEXT").upper()
    if protocol not in _PROTOCOLS:
        raise ConfigError(f"security.protocol={protocol} in {source} is not supported",
                          f"use one of {', '.join(_PROTOCOLS)}")
    kw["security_protocol"] = protocol
    if protocol.startswith("SASL_"):
        _apply_sasl(props, take, kw, source)
    if protocol in ("SSL", "SASL_SSL"):
        _apply_ssl(take, kw, source)

    for key in sorted(set(props) - consumed):
        if key.startswith("sasl.") or key.startswith("ssl.") or key in _HARMLESS:
            continue  # e.g. ssl.* under PLAINTEXT: harmless leftovers of a shared file
        settings.warnings.append(f"{source}: property {key} is not used by kafka-txn and was ignored")
    return settings


def _int_property(key: str, value: str, source: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise ConfigError(f"{key}={value} in {source} is not an integer") from None


def _apply_sasl(props: Mapping[str, str], take: Any, kw: dict[str, Any], source: str) -> None:
    mechanism = (take("sasl.mechanism") or "GSSAPI").upper()  # Java's default mechanism is GSSAPI
    if mechanism not in _MECHANISMS:
        raise ConfigError(f"sasl.mechanism={mechanism} in {source} is not supported",
                          f"use one of {', '.join(_MECHANISMS)}")
    kw["sasl_mechanism"] = mechanism
    jaas_text = take("sasl.jaas.config")
    # librdkafka-style names, accepted for convenience when there is no JAAS line.
    username, password = take("sasl.username"), take("sasl.password")
    if mechanism == "GSSAPI":
        if (service := take("sasl.kerberos.service.name")):
            kw["sasl_kerberos_service_name"] = service
        return
    if mechanism == "OAUTHBEARER":
        raise ConfigError(
            f"sasl.mechanism=OAUTHBEARER in {source} needs a token provider, which kafka-txn does not configure",
            "use SCRAM or PLAIN credentials for the admin principal, or mTLS",
        )
    if jaas_text:
        jaas = parse_jaas(jaas_text)
        expected = _MODULE_FOR[mechanism]
        if jaas.login_module != expected:
            raise ConfigError(
                f"sasl.jaas.config in {source} uses {jaas.login_module.rsplit('.', 1)[-1]} "
                f"but sasl.mechanism is {mechanism}",
                f"use {expected}",
            )
        username = jaas.options.get("username", username)
        password = jaas.options.get("password", password)
    if not username or password is None:
        raise ConfigError(
            f"sasl.mechanism={mechanism} in {source} needs a username and password",
            'set sasl.jaas.config=... required username="..." password="...";',
        )
    kw["sasl_plain_username"] = username
    kw["sasl_plain_password"] = password


def _apply_ssl(take: Any, kw: dict[str, Any], source: str) -> None:
    ts_type, ts_location = take("ssl.truststore.type"), take("ssl.truststore.location")
    if take("ssl.truststore.certificates"):
        raise ConfigError(f"ssl.truststore.certificates (inline PEM) in {source} is not supported",
                          "save the CA certificates to a file and set ssl.truststore.location")
    if ts_location:
        _require_pem("truststore", ts_type, Path(ts_location), source)
        kw["ssl_cafile"] = ts_location
    take("ssl.truststore.password")  # not needed for PEM trust stores

    ks_type, ks_location = take("ssl.keystore.type"), take("ssl.keystore.location")
    if take("ssl.keystore.certificate.chain") or take("ssl.keystore.key"):
        raise ConfigError(f"inline ssl.keystore.certificate.chain / ssl.keystore.key in {source} are not supported",
                          "save certificate and key to a PEM file and set ssl.keystore.location")
    if ks_location:
        _require_pem("keystore", ks_type, Path(ks_location), source)
        kw["ssl_certfile"] = ks_location
        kw["ssl_keyfile"] = ks_location  # a PEM keystore holds the key next to the certificate
    key_password = take("ssl.key.password") or take("ssl.keystore.password")
    if key_password:
        kw["ssl_password"] = key_password
    algorithm = take("ssl.endpoint.identification.algorithm")
    if algorithm is not None:
        kw["ssl_check_hostname"] = algorithm.lower() == "https"


def _require_pem(kind: str, declared: str | None, path: Path, source: str) -> None:
    store_type = (declared or "").upper() or _sniff_store_type(path, kind, source)
    if store_type == "PEM":
        return
    if store_type in ("JKS", "PKCS12"):
        raise ConfigError(
            f"ssl.{kind}.location {path} in {source} is a {store_type} file, which Python's ssl module cannot read",
            _conversion_hint(kind, store_type, path),
        )
    raise ConfigError(f"ssl.{kind}.type={store_type} in {source} is not supported", "use PEM files")


def _sniff_store_type(path: Path, kind: str, source: str) -> str:
    # Java defaults the store type to JKS; look at the file so a PEM file needs no declared type.
    try:
        head = path.read_bytes()[:64]
    except FileNotFoundError:
        raise ConfigError(f"ssl.{kind}.location {path} in {source} does not exist") from None
    except OSError as exc:
        raise ConfigError(f"cannot read ssl.{kind}.location {path}: {exc.strerror}") from None
    if b"-----BEGIN" in head:
        return "PEM"
    if head[:4] == b"\xfe\xed\xfe\xed":
        return "JKS"
    return "PKCS12"


def _conversion_hint(kind: str, store_type: str, path: Path) -> str:
    if kind == "truststore":
        if store_type == "JKS":
            return (f"convert it: keytool -exportcert -rfc -keystore {path} -alias <ca-alias> -file ca.pem, "
                    "then set ssl.truststore.type=PEM and ssl.truststore.location=ca.pem")
        return (f"convert it: openssl pkcs12 -in {path} -nokeys -out ca.pem, "
                "then set ssl.truststore.type=PEM and ssl.truststore.location=ca.pem")
    p12 = "client.p12" if store_type == "JKS" else str(path)
    first = (f"keytool -importkeystore -srckeystore {path} -destkeystore client.p12 -deststoretype PKCS12, then "
             if store_type == "JKS" else "")
    return (f"convert it: {first}openssl pkcs12 -in {p12} -out client.pem (certificate and key), "
            "then set ssl.keystore.type=PEM and ssl.keystore.location=client.pem")
