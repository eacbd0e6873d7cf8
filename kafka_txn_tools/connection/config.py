"""`--command-config` files (Java client properties) -> keyword arguments for kafka-python's clients.

Operators already have `admin.properties` files for the Java tools; they work here unchanged for
PLAINTEXT/SSL/SASL_PLAINTEXT/SASL_SSL; SASL PLAIN and SCRAM (credentials from `sasl.jaas.config`),
OAUTHBEARER (security/oauth.py) and GSSAPI (security/kerberos.py) through kafka-python's client stack; TLS
with PEM or PKCS12 stores (security/tls.py). JKS gets an error with the command that converts it.

Secrets read here never appear in messages or reprs.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafka_txn_tools.connection.security.jaas import parse_jaas
from kafka_txn_tools.errors import ConfigError

if TYPE_CHECKING:
    from kafka_txn_tools.connection.security.kerberos import KerberosLogin

_SECRET_KEYS = frozenset({"sasl_plain_password", "ssl_password", "sasl_oauth_token_provider"})

# Java properties that mean nothing to this tool but are common in admin.properties files.
_HARMLESS = frozenset({
    "retries", "retry.backoff.ms", "metadata.max.age.ms", "reconnect.backoff.ms",
    "reconnect.backoff.max.ms", "connections.max.idle.ms", "receive.buffer.bytes", "send.buffer.bytes",
    "client.dns.lookup", "sasl.login.callback.handler.class", "sasl.client.callback.handler.class",
    "ssl.protocol", "ssl.enabled.protocols", "ssl.keymanager.algorithm", "ssl.trustmanager.algorithm",
    "ssl.secure.random.implementation", "ssl.provider",
})

# Properties that describe the connection without giving anything away: no password, token or key material,
# only names and file paths. `kafka-txn dump` records them with the cluster it read.
# (security.protocol and sasl.mechanism are recorded as resolved, defaults included.)
DESCRIBED = ("ssl.truststore.location", "ssl.truststore.type",
             "ssl.keystore.location", "ssl.keystore.type", "ssl.endpoint.identification.algorithm")

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
    profile: str | None = None  # the --profile the settings came from, if any
    kerberos: KerberosLogin | None = None  # GSSAPI: the login run before connecting (security/kerberos.py)
    # Who the cluster authenticates us as, once known (the audit log records it): the SASL username, the
    # Kerberos principal, or the OAuth token's subject.
    principal: str | None = None
    # The properties that say how the cluster is reached, never a secret (`DESCRIBED`): a dump records them.
    described: dict[str, str] = field(default_factory=dict)

    @property
    def cluster_name(self) -> str:
        """The cluster as a person knows it: `profile (servers)`, or the bootstrap servers."""
        servers = self.bootstrap_servers or "?"
        return f"{self.profile} ({servers})" if self.profile else servers

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

_MODULE_FOR = {  # the JAAS login module each mechanism takes (class name; the package may vary by JDK)
    "PLAIN": "PlainLoginModule",
    "SCRAM-SHA-256": "ScramLoginModule",
    "SCRAM-SHA-512": "ScramLoginModule",
    "GSSAPI": "Krb5LoginModule",
    "OAUTHBEARER": "OAuthBearerLoginModule",
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
        _apply_sasl(props, take, settings, source)
    if protocol in ("SSL", "SASL_SSL"):
        _apply_ssl(take, kw, source)
    tls = protocol in ("SSL", "SASL_SSL")  # ssl.* under PLAINTEXT are leftovers: not how it connects
    settings.described = {"security.protocol": protocol, **{
        k: str(props[k]).strip() for k in DESCRIBED if props.get(k) and (tls or not k.startswith("ssl."))}}
    if "sasl_mechanism" in kw:
        settings.described["sasl.mechanism"] = kw["sasl_mechanism"]  # the default (GSSAPI) too

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


def _apply_sasl(props: Mapping[str, str], take: Any, settings: ClientSettings, source: str) -> None:
    kw = settings.kwargs
    mechanism = (take("sasl.mechanism") or "GSSAPI").upper()  # Java's default mechanism is GSSAPI
    if mechanism not in _MECHANISMS:
        raise ConfigError(f"sasl.mechanism={mechanism} in {source} is not supported",
                          f"use one of {', '.join(_MECHANISMS)}")
    kw["sasl_mechanism"] = mechanism
    jaas_text = take("sasl.jaas.config")
    jaas = parse_jaas(jaas_text) if jaas_text else None
    if jaas is not None and jaas.login_module.rsplit(".", 1)[-1] != _MODULE_FOR[mechanism]:
        raise ConfigError(
            f"sasl.jaas.config in {source} uses {jaas.login_module.rsplit('.', 1)[-1]} but sasl.mechanism is "
            f"{mechanism}", f"use {_MODULE_FOR[mechanism]}")
    if mechanism == "GSSAPI":
        from kafka_txn_tools.connection.security.kerberos import apply_gssapi

        settings.kerberos = apply_gssapi(take, jaas, kw, source)
        settings.principal = settings.kerberos.principal
        return
    if mechanism == "OAUTHBEARER":
        from kafka_txn_tools.connection.security.oauth import token_provider

        kw["sasl_oauth_token_provider"] = token_provider(take, jaas, source)
        return
    # librdkafka-style names, accepted for convenience when there is no JAAS line.
    username, password = take("sasl.username"), take("sasl.password")
    if jaas is not None:
        username = jaas.options.get("username", username)
        password = jaas.options.get("password", password)
    if not username or password is None:
        raise ConfigError(
            f"sasl.mechanism={mechanism} in {source} needs a username and password",
            'set sasl.jaas.config=... required username="..." password="...";',
        )
    kw["sasl_plain_username"] = username
    kw["sasl_plain_password"] = password
    settings.principal = username


def _apply_ssl(take: Any, kw: dict[str, Any], source: str) -> None:
    """ssl.* -> one SSLContext (security/tls.py: PEM, and PKCS12 read in memory)."""
    from kafka_txn_tools.connection.security.tls import Store, TlsSettings, build_context

    if take("ssl.truststore.certificates"):
        raise ConfigError(f"ssl.truststore.certificates (inline PEM) in {source} is not supported",
                          "save the CA certificates to a file and set ssl.truststore.location")
    if take("ssl.keystore.certificate.chain") or take("ssl.keystore.key"):
        raise ConfigError(f"inline ssl.keystore.certificate.chain / ssl.keystore.key in {source} are not supported",
                          "save certificate and key to a PEM file and set ssl.keystore.location")

    def store(kind: str) -> Store | None:
        declared, location, password = (take(f"ssl.{kind}.type"), take(f"ssl.{kind}.location"),
                                        take(f"ssl.{kind}.password"))
        return Store(kind, Path(location).expanduser(), declared, password) if location else None

    algorithm = take("ssl.endpoint.identification.algorithm")
    tls = TlsSettings(truststore=store("truststore"), keystore=store("keystore"),
                      key_password=take("ssl.key.password"),
                      check_hostname=algorithm is None or algorithm.lower() == "https")
    kw["ssl_context"] = build_context(tls)
    kw["ssl_check_hostname"] = tls.check_hostname
