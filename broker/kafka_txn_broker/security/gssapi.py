"""SASL/GSSAPI (Kerberos V5, RFC 4752) on the broker side, with MIT Kerberos through the `gssapi` package.

Kafka's broker settings, read by `KerberosSettings.from_config`:

    sasl.enabled.mechanisms=GSSAPI
    sasl.kerberos.service.name=kafka
    listener.name.sasl_ssl.gssapi.sasl.jaas.config=com.sun.security.auth.module.Krb5LoginModule required \\
        useKeyTab=true storeKey=true keyTab="/etc/kafka/kafka.keytab" principal="kafka/broker1@EXAMPLE.COM";

The broker accepts tickets for its own principal only, with the key from its keytab (no KDC is contacted).
The exchange, as Java's GSS-API SASL server runs it: context tokens until the context is established
(the last one carries the mutual-authentication reply); then the broker offers the "no security layer"
option in a wrapped 4-byte message; the client's wrapped answer must choose it. The client's Kerberos
principal becomes the Kafka principal through `sasl.kerberos.principal.to.local.rules`; Kafka's DEFAULT
rule gives the first component of a principal of the broker's realm (alice@EXAMPLE.COM -> User:alice)
and refuses other realms.

Failures carry a message for the client naming the cause (clock skew, a ticket for another service, a
replayed or expired ticket) and never any key material. Not thread-safe: one server per connection, used
from the broker's event loop (acceptor calls read only the keytab, so they do not block on the network).
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafka_txn_broker.configs.broker_config import BrokerConfig, ConfigError

GSSAPI = "GSSAPI"
LOGIN_MODULE = "Krb5LoginModule"
QOP_AUTH = 1  # "no security layer": Kafka runs no integrity or confidentiality layer over SASL
MAX_BUFFER = 0xFFFFFF

# MIT krb5 error codes (com_err table base -1765328384, read unsigned) as gss minor statuses.
_KRB5_BASE = 2529638912
_MINOR = {
    _KRB5_BASE + 32: "the Kerberos ticket has expired: the client must get a new one (kinit, or its keytab)",
    _KRB5_BASE + 33: "the Kerberos ticket is not valid yet by the broker's clock: the clocks of the KDC and the "
                     "broker differ (clock skew); synchronise them",
    _KRB5_BASE + 34: "the Kerberos authenticator was already used (a replay)",
    _KRB5_BASE + 37: "clock skew too great between the client and the broker: synchronise their clocks",
}


class KerberosError(Exception):
    """A GSSAPI exchange failed; the text is what the client is told."""


@dataclass(frozen=True)
class KerberosSettings:
    service_name: str
    principal: str      # the broker's service principal, e.g. kafka/127.0.0.1@EXAMPLE.COM
    keytab: Path
    realm: str

    @classmethod
    def from_config(cls, cfg: BrokerConfig) -> KerberosSettings:
        protocol = cfg["security.protocol"].lower()
        key = f"listener.name.{protocol}.gssapi.sasl.jaas.config"
        text = cfg[key].strip()
        if not text:
            raise ConfigError(f"sasl.enabled.mechanisms has GSSAPI: set {key} to the broker's Krb5LoginModule line "
                              '(useKeyTab=true keyTab="..." principal="kafka/<host>@<REALM>")')
        options = _jaas_options(text, key)
        keytab, principal = options.get("keyTab"), options.get("principal")
        if not keytab or not principal:
            raise ConfigError(f"{key} needs keyTab=\"...\" and principal=\"...\"")
        if options.get("useKeyTab", "true").lower() != "true":
            raise ConfigError(f"{key}: the broker reads its key from keyTab; set useKeyTab=true")
        service, _, rest = principal.partition("/")
        realm = principal.rpartition("@")[2] if "@" in principal else ""
        if not realm:
            raise ConfigError(f"{key}: principal {principal!r} must name its realm (kafka/<host>@<REALM>)")
        wanted = cfg["sasl.kerberos.service.name"].strip()
        if not wanted:
            raise ConfigError("sasl.enabled.mechanisms has GSSAPI: set sasl.kerberos.service.name (e.g. kafka)")
        if service.split("@")[0] != wanted:
            raise ConfigError(f"sasl.kerberos.service.name={wanted} does not match the broker's principal {principal} "
                              f"in {key}: its first component is the service name")
        if not Path(keytab).is_file():
            raise ConfigError(f"{key}: keyTab {keytab} does not exist")
        rules = [r.strip() for r in cfg["sasl.kerberos.principal.to.local.rules"] if r.strip()]
        if rules != ["DEFAULT"]:
            raise ConfigError("sasl.kerberos.principal.to.local.rules: only DEFAULT is supported")
        return cls(wanted, principal, Path(keytab), realm)

    def acceptor_credentials(self) -> Any:
        """The broker's credentials from its keytab; a ConfigError naming the keytab when it lacks the key."""
        gssapi = _module()
        try:
            name = gssapi.Name(self.principal, gssapi.NameType.kerberos_principal)
            return gssapi.Credentials(name=name, usage="accept", store={"keytab": str(self.keytab)})
        except gssapi.exceptions.GSSError as exc:
            raise ConfigError(f"the broker cannot use keyTab {self.keytab} for {self.principal}: "
                              f"{_minor_text(exc)}") from None

    def short_name(self, client: str) -> str:
        """Kafka's DEFAULT principal-to-local rule: the first component, for principals of the broker's realm."""
        name, _, realm = client.rpartition("@")
        if not name or realm != self.realm:
            raise KerberosError(f"no sasl.kerberos.principal.to.local.rules rule matches {client}: the DEFAULT rule "
                                f"takes principals of realm {self.realm} only")
        return name.split("/")[0]


def _module() -> Any:
    try:
        import gssapi
    except ImportError:
        raise ConfigError("sasl.enabled.mechanisms has GSSAPI, which needs the Python package gssapi: "
                          "pip install 'kafka-txn-tools[kerberos]' (it builds against libkrb5-dev)") from None
    return gssapi


_JAAS = re.compile(r'(\w+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s;"]+))')


def _jaas_options(text: str, key: str) -> dict[str, str]:
    module, _, rest = text.partition(" ")
    if module.rsplit(".", 1)[-1] != LOGIN_MODULE:
        raise ConfigError(f"{key} must use {LOGIN_MODULE} (com.sun.security.auth.module.{LOGIN_MODULE} required ...;)")
    return {m.group(1): m.group(2) if m.group(2) is not None else m.group(3) for m in _JAAS.finditer(rest)}


def _minor_text(exc: Any) -> str:
    """The Kerberos library's own words for a GSSError (its minor status), without the GSS boilerplate."""
    text = str(exc)
    return text.split("Minor (", 1)[1].split("): ", 1)[-1].strip() if "Minor (" in text else text


class GssapiServer:
    """One connection's GSSAPI exchange; `username` is the Kafka principal's name once complete."""

    def __init__(self, settings: KerberosSettings, credentials: Any) -> None:
        self._settings = settings
        self._gssapi = _module()
        self._credentials = credentials
        self._context: Any = None
        self._established = False
        self._offered = False
        self.client_principal: str | None = None
        self.username: str | None = None
        self.complete = False

    def evaluate(self, token: bytes) -> bytes:
        if not self._established:
            return self._accept(token)
        if not self._offered:
            # The client's (empty) answer to the last context token: offer "no security layer".
            self._offered = True
            offer = struct.pack(">I", (QOP_AUTH << 24) | MAX_BUFFER)
            return bytes(self._gssapi.raw.wrap(self._context, offer, False).message)
        return self._choose(token)

    def _accept(self, token: bytes) -> bytes:
        raw = self._gssapi.raw
        try:
            result = raw.accept_sec_context(token, acceptor_creds=self._credentials, context=self._context)
        except raw.GSSError as exc:
            raise KerberosError(self._explain(exc)) from None
        self._context = result.context
        if not result.more_steps:
            self._established = True
            self.client_principal = bytes(raw.display_name(result.initiator_name).name).decode("utf-8")
            self.username = self._settings.short_name(self.client_principal)
        return bytes(result.token or b"")

    def _choose(self, token: bytes) -> bytes:
        raw = self._gssapi.raw
        try:
            message = bytes(raw.unwrap(self._context, token).message)
        except raw.GSSError as exc:
            raise KerberosError(f"the client's security layer message did not unwrap: {_minor_text(exc)}") from None
        if len(message) < 4 or not message[0] & QOP_AUTH:
            raise KerberosError("the client chose a security layer; Kafka runs GSSAPI without one (auth only)")
        # Kafka ignores the authorization id the client appends (kafka-python sends the service's name there):
        # the authenticated principal is the one the ticket names.
        self.complete = True
        return b""

    def _explain(self, exc: Any) -> str:
        known = _MINOR.get(getattr(exc, "min_code", 0))
        if known:
            return known
        text = _minor_text(exc)
        ticket_for = re.search(r"ticket for (\S+) using", text)
        if ticket_for and ticket_for.group(1) == self._settings.principal:
            return (f"this broker's keytab holds an old key of {self._settings.principal}: export its current key "
                    "to the keytab (kadmin ktadd)")
        if ticket_for or "Wrong principal" in text:
            other = ticket_for.group(1) if ticket_for else "another service"
            return (f"the client's ticket is for {other}, but this broker is {self._settings.principal}: set "
                    f"sasl.kerberos.service.name={self._settings.service_name} on the client")
        return f"Kerberos: {text}"
